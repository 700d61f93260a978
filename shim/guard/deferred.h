/* deferred.h - accesses judged late: a signal handler of the program that
 * touches guarded memory while its thread is inside the shim (the model
 * lock held, the model perhaps half-changed) is let through unjudged, and
 * the access is queued here, on its own thread, to be judged when that
 * thread leaves the model (fault.c). Pure: no lock, no allocation; the
 * handler pushes and the thread's normal context drains, so a push may land
 * in the middle of a drain and is still taken, in order.
 */
#ifndef AC_GUARD_DEFERRED_H
#define AC_GUARD_DEFERRED_H

#include <stdbool.h>
#include <stdint.h>

#include "model_types.h"

/* Accesses one thread keeps at once; more are counted, not kept. */
#define AC_DEFERRED_MAX 4

struct ac_deferred_access {
  uintptr_t addr;
  bool is_write;
  struct ac_stack stack; /* from the signal frame */
};

/* One thread's queue (zero-initialised: empty). */
struct ac_deferred {
  unsigned count;   /* atomic: pushed and not yet taken */
  unsigned dropped; /* atomic: pushed while full */
  struct ac_deferred_access q[AC_DEFERRED_MAX];
};

/* In the signal handler: a queued unless the same access - address, kind and
 * stack - waits already (a handler that runs again and again while its
 * thread stays inside the shim makes one access, one finding); false when
 * the queue was full (counted as dropped). Async-signal-safe. */
bool ac_deferred_push(struct ac_deferred *d, const struct ac_deferred_access *a);
/* Whether anything waits (a load). */
static inline bool ac_deferred_pending(const struct ac_deferred *d) {
  return __atomic_load_n(&d->count, __ATOMIC_ACQUIRE) != 0;
}
/* In the thread's normal context: fn for each access in the order pushed,
 * those pushed by a handler during the drain included, then the queue is
 * empty. Returns the accesses dropped since the last drain. */
unsigned ac_deferred_drain(struct ac_deferred *d,
                           void (*fn)(const struct ac_deferred_access *a, void *ctx), void *ctx);

#endif
