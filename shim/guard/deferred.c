/* deferred.c - the per-thread queue of accesses judged late (deferred.h).
 *
 * Only one thread touches a queue: its handler pushes at the end, its normal
 * context reads from the front and, when it has read everything it saw,
 * empties the queue with a compare-and-swap of the count. A push between
 * the reading and the swap makes the swap fail, and the new access is read
 * before trying again; a push during the handler's own filling of a slot
 * cannot happen (a handler is not interrupted by the drain). Atomics with
 * signal fences are enough: nothing crosses threads.
 */
#include <stddef.h>

#include "deferred.h"

struct ac_deferred_access *ac_deferred_slot(struct ac_deferred *d) {
  unsigned n = __atomic_load_n(&d->count, __ATOMIC_RELAXED);
  if (n < AC_DEFERRED_MAX) return &d->q[n];
  __atomic_add_fetch(&d->dropped, 1, __ATOMIC_RELAXED);
  return NULL;
}

void ac_deferred_commit(struct ac_deferred *d) {
  __atomic_signal_fence(__ATOMIC_RELEASE);
  __atomic_add_fetch(&d->count, 1, __ATOMIC_RELEASE);
}

unsigned ac_deferred_drain(struct ac_deferred *d,
                           void (*fn)(const struct ac_deferred_access *a, void *ctx), void *ctx) {
  unsigned done = 0;
  for (;;) {
    unsigned n = __atomic_load_n(&d->count, __ATOMIC_ACQUIRE);
    while (done < n) {
      struct ac_deferred_access copy = d->q[done++]; /* a copy: fn may be interrupted */
      fn(&copy, ctx);
    }
    if (__atomic_compare_exchange_n(&d->count, &n, 0, false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
      break;
  }
  return __atomic_exchange_n(&d->dropped, 0, __ATOMIC_ACQ_REL);
}
