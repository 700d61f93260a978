/* pages.c - closing pages to every thread at once, and opening them again.
 *
 * The page tables are shared by the process's threads, so what they say
 * holds for every thread from the moment the call returns. Two ways:
 *   mprotect     PROT_NONE, and back;
 *   closing key  under protection keys, the pages are tagged with a key no
 *                thread ever enables (pkey_mprotect), and back with key 0.
 * The second leaves the mapping readable and writable. That matters on a
 * real GPU: managed memory the driver populates for the first time while
 * its mapping is not writable takes the driver's slow path - a kernel's
 * first writes to a fresh 4 MiB allocation ran six times slower
 * (docs/driver-facts.md) - and a framework allocating every tensor afresh
 * while its streams work ran at a third of its speed. A tag changes no
 * permission the driver looks at.
 *
 * Opening gives a page back the protection and key the program set on it
 * (program_prot.c), readable and writable with key 0 where it set none; a
 * page with a key of the program's own is closed with PROT_NONE, which
 * keeps its key. All of it is async-signal-safe (the handler lifts pages).
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <sys/mman.h>
#include <unistd.h>

#include "guard_internal.h"
#include "libc_real.h"
#include "pkeys.h"
#include "shim.h"
#include "sys.h"

typedef int protect_fn(uintptr_t start, uintptr_t end, int prot, int key);

/* The next mprotect after the shim's (the C library's, or a driver's that
 * protects managed memory itself and so sees every protection asked for):
 * the shim's own export - which -Bsymbolic binds the shim's calls to - is
 * the program's, and tells the guard. */
static int plain_mprotect(uintptr_t start, uintptr_t end, int prot, int key) {
  (void)key;
  return AC_LIBC_REAL(mprotect)((void *)start, end - start, prot);
}

static int plain_tag(uintptr_t start, uintptr_t end, int prot, int key) {
  return ac_pkeys_protect(start, end, prot, key);
}

/* --verbose 3: every change of protection the guard makes and what it took,
 * written straight to stderr - some are made in the fault handler, where
 * the report sink's lock may not be taken. A debugging trace, out of line:
 * its buffer must not weigh on the handler's stack when it is off (a
 * handler on a small alternate stack runs this path). */
__attribute__((noinline, cold)) static int traced(const char *what, protect_fn *fn, uintptr_t start,
                                                  uintptr_t end, int prot, int key) {
  double started = ac_sys_now_seconds();
  int r = fn(start, end, prot, key);
  char line[160];
  int n = snprintf(line, sizeof line,
                   "==attachcheck:%d== guard: %s [%#lx, %#lx) %lu pages, prot %d key %d: %.1f us\n",
                   (int)getpid(), what, (unsigned long)start, (unsigned long)end,
                   (unsigned long)((end - start) / (uintptr_t)ac_guard.page_size), prot, key,
                   (ac_sys_now_seconds() - started) * 1e6);
  if (n > 0) ac_sys_write_all(2, line, (size_t)n < sizeof line ? (size_t)n : sizeof line - 1);
  return r;
}

static int raw_mprotect(uintptr_t start, uintptr_t end, int prot) {
  return ac_opts.verbose < 3 ? plain_mprotect(start, end, prot, -1)
                             : traced("mprotect", plain_mprotect, start, end, prot, -1);
}

static int tag(uintptr_t start, uintptr_t end, int prot, int key) {
  return ac_opts.verbose < 3 ? plain_tag(start, end, prot, key)
                             : traced("pkey_mprotect", plain_tag, start, end, prot, key);
}

static void close_piece(uintptr_t start, uintptr_t end, int prot, int key, void *result) {
  int closing = ac_guard_keys_closing();
  int r = closing >= 0 && key == 0 ? tag(start, end, prot, closing)
                                   : raw_mprotect(start, end, PROT_NONE);
  if (r != 0) *(int *)result = r;
}

static void open_piece(uintptr_t start, uintptr_t end, int prot, int key, void *result) {
  int r =
      ac_guard_keys_closing() >= 0 ? tag(start, end, prot, key) : raw_mprotect(start, end, prot);
  if (r != 0) *(int *)result = r;
}

/* A class key of the guard's, on the pieces that have none of the program's. */
struct tag {
  int key, result;
};

static void tag_piece(uintptr_t start, uintptr_t end, int prot, int key, void *arg) {
  struct tag *t = arg;
  if (key != 0) return; /* the program's own key: the guard's keys leave it out */
  if (tag(start, end, prot, t->key) != 0) t->result = -1;
}

/* fn over the pieces of [start, end) as the program protected them; one
 * piece, the default, when it protected nothing (the common case: no search). */
static int each_piece(uintptr_t start, uintptr_t end,
                      void (*fn)(uintptr_t, uintptr_t, int, int, void *), void *arg) {
  int result = 0;
  if (!ac_guard_program_set_any())
    fn(start, end, PROT_READ | PROT_WRITE, 0, arg ? arg : &result);
  else
    ac_guard_program_pieces(start, end, fn, arg ? arg : &result);
  return result;
}

int ac_guard_close_pages(uintptr_t start, uintptr_t end) {
  return each_piece(start, end, close_piece, NULL);
}

int ac_guard_open_pages(uintptr_t start, uintptr_t end) {
  __atomic_add_fetch(&ac_guard.opened, 1, __ATOMIC_RELAXED);
  return each_piece(start, end, open_piece, NULL);
}

int ac_guard_tag_pages(uintptr_t start, uintptr_t end, int key) {
  if (key == 0) return ac_guard_open_pages(start, end);
  struct tag t = {key, 0};
  each_piece(start, end, tag_piece, &t);
  return t.result;
}
