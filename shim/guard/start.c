/* start.c - the page guard's start-up and its few doors that are not
 * transitions: which backend protects (protection keys or mprotect), where
 * the driver's code lies (its own accesses are never the program's), a
 * device whose driver protects managed memory itself, and keys given back
 * to a program that wants them all.
 */
#define _GNU_SOURCE
#include <link.h>
#include <stdint.h>
#include <unistd.h>

#include "backend.h"
#include "classes.h"
#include "guard_internal.h"
#include "shim.h"

static int find_driver_code(struct dl_phdr_info *info, size_t size, void *entry) {
  (void)size;
  uintptr_t lo = UINTPTR_MAX, hi = 0, e = (uintptr_t)entry;
  for (int i = 0; i < info->dlpi_phnum; i++) {
    if (info->dlpi_phdr[i].p_type != PT_LOAD || !(info->dlpi_phdr[i].p_flags & PF_X)) continue;
    uintptr_t start = info->dlpi_addr + info->dlpi_phdr[i].p_vaddr;
    uintptr_t end = start + info->dlpi_phdr[i].p_memsz;
    if (start < lo) lo = start;
    if (end > hi) hi = end;
  }
  if (e < lo || e >= hi) return 0;
  ac_guard.driver_lo = lo, ac_guard.driver_hi = hi;
  return 1;
}

/* The backend: protection keys where asked for (auto, pkeys) and there are
 * some, else mprotect. Said with --verbose, and always when keys were asked
 * for by name and cannot be had. */
static void choose_backend(void) {
  const char *why = NULL;
  if (ac_opts.guard_pages == AC_GUARD_AUTO || ac_opts.guard_pages == AC_GUARD_PKEYS) {
    if (ac_guard_keys_start(&why)) {
      ac_guard.backend = &ac_guard_keys_backend;
      if (ac_opts.verbose)
        ac_log("page guard: protection keys (%d keys), mprotect where pages are shared",
               ac_guard_keys_count());
      return;
    }
    if (ac_opts.guard_pages == AC_GUARD_PKEYS) {
      ac_log("warning: --guard-pages pkeys: %s; using mprotect", why);
      return;
    }
  }
  if (ac_opts.verbose && why) ac_log("page guard: mprotect (no protection keys: %s)", why);
  if (ac_opts.verbose && !why) ac_log("page guard: mprotect");
}

/* A device without concurrent managed access was seen: its driver protects
 * managed memory itself, which protection keys cannot work beside. */
void ac_guard_device_protects_managed(int device) {
  if (!ac_guard_on()) return;
  ac_model_enter();
  ac_guard.driver_protects = true;
  ac_guard_keys_decline(device);
  ac_model_leave();
}

/* The program's pkey_alloc found no key free: the guard's are given back
 * (keys.c). Whether any was. */
bool ac_guard_give_keys_back(void) {
  if (!ac_guard_on()) return false;
  ac_model_enter();
  bool freed = ac_guard_keys_yield_locked();
  ac_model_leave();
  return freed;
}

void ac_guard_start(void) {
  ac_guard.page_size = sysconf(_SC_PAGESIZE);
  bool on = ac_opts.guard_pages != AC_GUARD_OFF;
  if (on) choose_backend(); /* before the guard is on: a fault reads it unlocked */
  __atomic_store_n(&ac_guard.enabled, on, __ATOMIC_RELEASE);
  if (on) {
    ac_model_enter();
    ac_guard_classes_update(); /* the classes are kept from now on (classes.c) */
    ac_model_leave();
  }
  void *entry = ac_driver_entry[AC_ID_cuInit];
  if (entry) dl_iterate_phdr(find_driver_code, entry);
}
