/* guard_internal.h - what the page guard's two sides share: the refresh side
 * (guard.c), which makes protection follow the model at every transition,
 * and the fault side (guard_fault.c), which judges an access in the SIGSEGV
 * handler or before a system call and lifts the page. Everything here is
 * under ac_model_lock, except what is said to be read without it.
 */
#ifndef AC_GUARD_INTERNAL_H
#define AC_GUARD_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include "ranges.h"

/* Pages the handler lifted inside protected_now, until the next transition. */
#define AC_GUARD_LIFTED_MAX 1024
/* The protected ranges as the signal handler sees them, at most. */
#define AC_GUARD_PUBLISHED_MAX 8192

struct ac_guard_shared {
  long page_size;
  bool enabled;
  struct range_list protected_now; /* what was made PROT_NONE (pages) */
  uintptr_t lifted[AC_GUARD_LIFTED_MAX];
  size_t lifted_count;
  /* Set when protection is not known exactly (too many lifted pages; a page
   * lifted by a handler that could not take the lock): the next refresh
   * starts from nothing protected. */
  bool protection_uncertain;
  int lifted_unlocked; /* atomic: set by a handler without the lock */
  /* Where libcuda's code is: faults there are the driver's own accesses. */
  uintptr_t driver_lo, driver_hi;
  /* protected_now as the handler reads it without the lock: a seqlock'd copy. */
  struct range published[AC_GUARD_PUBLISHED_MAX];
  size_t published_count;
  unsigned published_seq;
  bool published_overflow; /* more ranges than fit: the handler trusts the model */
  /* What the guard cost, for --verbose. */
  struct {
    unsigned long refreshes, rebuilds, mprotects, faults, driver_faults, unjudged, largest;
    double seconds, handler_seconds;
  } stats;
};
extern struct ac_guard_shared ac_guard;

static inline uintptr_t ac_guard_page_floor(uintptr_t a) {
  return a & ~(uintptr_t)(ac_guard.page_size - 1);
}

double ac_guard_now_seconds(void);

#endif
