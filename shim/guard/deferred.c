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
#include <string.h>

#include "deferred.h"

static bool same_access(const struct ac_deferred_access *x, const struct ac_deferred_access *y) {
  return x->addr == y->addr && x->is_write == y->is_write && x->stack.depth == y->stack.depth &&
         memcmp(x->stack.pc, y->stack.pc, (size_t)x->stack.depth * sizeof x->stack.pc[0]) == 0;
}

bool ac_deferred_push(struct ac_deferred *d, const struct ac_deferred_access *a) {
  unsigned n = __atomic_load_n(&d->count, __ATOMIC_RELAXED);
  for (unsigned i = 0; i < n; i++)
    if (same_access(&d->q[i], a)) return true;
  if (n == AC_DEFERRED_MAX) {
    __atomic_add_fetch(&d->dropped, 1, __ATOMIC_RELAXED);
    return false;
  }
  d->q[n] = *a;
  __atomic_signal_fence(__ATOMIC_RELEASE);
  __atomic_store_n(&d->count, n + 1, __ATOMIC_RELEASE);
  return true;
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
