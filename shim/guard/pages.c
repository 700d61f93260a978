/* pages.c - closing pages to every thread at once, and opening them again.
 *
 * The page tables are shared by the process's threads, so what they say
 * holds for every thread from the moment the call returns. Two ways:
 *   mprotect     PROT_NONE, and back to PROT_READ|PROT_WRITE;
 *   closing key  under protection keys, the pages are tagged with a key no
 *                thread ever enables (pkey_mprotect), and back with key 0.
 * The second leaves the mapping readable and writable. That matters on a
 * real GPU: managed memory the driver populates for the first time while
 * its mapping is not writable takes the driver's slow path - a kernel's
 * first writes to a fresh 4 MiB allocation ran six times slower
 * (docs/driver-facts.md) - and a framework allocating every tensor afresh
 * while its streams work ran at a third of its speed. A tag changes no
 * permission the driver looks at.
 */
#define _GNU_SOURCE
#include <sys/mman.h>

#include "guard_internal.h"
#include "pkeys.h"

int ac_guard_close_pages(uintptr_t start, uintptr_t end) {
  int closing = ac_guard_keys_closing();
  if (closing >= 0) return ac_pkeys_tag(start, end, closing);
  return mprotect((void *)start, end - start, PROT_NONE);
}

int ac_guard_open_pages(uintptr_t start, uintptr_t end) {
  if (ac_guard_keys_closing() >= 0) return ac_pkeys_tag(start, end, 0);
  return mprotect((void *)start, end - start, PROT_READ | PROT_WRITE);
}
