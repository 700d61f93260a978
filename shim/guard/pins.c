/* pins.c - the buffers of wrapped system calls in flight, which no refresh
 * closes.
 *
 * A page the guard closes may hold memory the CPU may touch (a small
 * HOST-attached allocation beside busy GLOBAL memory: wanted.c). A direct
 * access to it faults, is found allowed and runs again; a system call's copy
 * does not run again - the kernel answers short or with EFAULT. A wrapper
 * checks its buffer before the call (fault.c lifts the page if it is closed
 * then), but another thread's transition could close the page during the
 * call. So each wrapped call pins its buffers from before that check until
 * it returns, and a refresh leaves pinned pages open (refresh.c).
 *
 * Ordering, without a lock on the call's side (Dekker's): the call stores
 * its pin, then reads what the guard published as closed; a refresh
 * publishes what it will close, then reads the pins. Both sequentially
 * consistent, so at least one sees the other: the refresh leaves the page
 * open, or the call sees it closed and lifts it under the model lock, after
 * that refresh. A pinned page the refresh left open stays open until the
 * next transition after the call.
 *
 * A buffer outside every page the guard may ever close - the hull of all
 * managed memory the model has known and the keyed chunks around it, which
 * only grows - needs no pin and no check: the program's ordinary I/O costs
 * two loads. The hull is widened under the model lock when an allocation
 * is recorded, before the program has its pointer, so a call on memory the
 * program knows to be managed always sees it. (Managed memory the shim
 * learns only when the program first hands it to the driver is in the hull
 * from then on.)
 *
 * Slots are claimed per call, so a signal handler's own call inside the
 * program's, a thread that ends, or a fork needs no care beyond clearing
 * the table in the child. When all are taken the call counts itself in
 * `crowd`, and while anyone does a refresh closes no page it did not hold
 * closed already. Async-signal-safe.
 */
#include <stdbool.h>
#include <stdint.h>

#include "guard_internal.h"
#include "ranges.h"
#include "shim.h"

#define PIN_SLOTS 256

/* One slot a cache line: calls on different threads do not share lines. */
struct pin {
  int used;             /* atomic: claimed by a call */
  uintptr_t start, end; /* atomic: the pages pinned; only widen while used */
} __attribute__((aligned(64)));

static struct pin pins[PIN_SLOTS];
/* The pages the guard may ever close or key lie within it. */
static struct ac_guard_span guardable = AC_GUARD_SPAN_EMPTY;
static int in_use; /* atomic: slots claimed, so a refresh skips the scan when 0 */
static int crowd;  /* atomic: calls that found no free slot */

/* A full barrier: the pin's stores before the published pages' loads, and
 * the publishing before the pins' loads. ThreadSanitizer does not take
 * fences; a read-modify-write of sequential consistency is one there. */
static void full_barrier(void) {
#ifdef __SANITIZE_THREAD__
  static int barrier;
  __atomic_fetch_add(&barrier, 0, __ATOMIC_SEQ_CST);
#else
  __atomic_thread_fence(__ATOMIC_SEQ_CST);
#endif
}

static bool pinning(void) {
  return ac_opts.guard_shared_pages;
}

/* A free slot claimed, searched from a place of the thread's own: where its
 * thread-local block lies (not ac_thread_id(), which would number the
 * driver's own threads in the reports the first time they read or write). */
static __thread char here;
static int claim(void) {
  unsigned from = (unsigned)(((uintptr_t)&here >> 12) * 7u) % PIN_SLOTS;
  for (unsigned i = 0; i < PIN_SLOTS; i++) {
    unsigned k = (from + i) % PIN_SLOTS;
    int expected = 0;
    if (!__atomic_load_n(&pins[k].used, __ATOMIC_RELAXED) &&
        __atomic_compare_exchange_n(&pins[k].used, &expected, 1, false, __ATOMIC_SEQ_CST,
                                    __ATOMIC_RELAXED))
      return (int)k;
  }
  return -1;
}

void ac_guard_note_guardable(uintptr_t start, uintptr_t end) {
  AC_ASSERT_MODEL_HELD();
  if (start >= end) return;
  /* Whole pages of every size, whether the guard has started or not. */
  const uintptr_t grain = (uintptr_t)1 << 16;
  ac_guard_span_widen(&guardable, start & ~(grain - 1), (end + grain - 1) & ~(grain - 1));
}

bool ac_guard_may_guard(uintptr_t start, uintptr_t end) {
  return ac_guard_span_meets(&guardable, start, end);
}

void ac_guard_pin(struct ac_guard_pins *p, uintptr_t start, uintptr_t end) {
  if (!pinning() || start >= end) return;
  uintptr_t size = (uintptr_t)ac_guard.page_size;
  start = start / size * size;
  end = (end + size - 1) / size * size;
  if (p->n == AC_GUARD_PINS_MAX) {     /* widen the last: its hull */
    if (p->slot[p->n - 1] < 0) return; /* in the crowd already: nothing closes */
    struct pin *last = &pins[p->slot[p->n - 1]];
    if (start < __atomic_load_n(&last->start, __ATOMIC_RELAXED))
      __atomic_store_n(&last->start, start, __ATOMIC_SEQ_CST);
    if (end > __atomic_load_n(&last->end, __ATOMIC_RELAXED))
      __atomic_store_n(&last->end, end, __ATOMIC_SEQ_CST);
    full_barrier();
    return;
  }
  int k = claim();
  p->slot[p->n++] = (short)k;
  if (k < 0) {
    __atomic_add_fetch(&crowd, 1, __ATOMIC_SEQ_CST);
  } else {
    __atomic_store_n(&pins[k].start, start, __ATOMIC_SEQ_CST);
    __atomic_store_n(&pins[k].end, end, __ATOMIC_SEQ_CST);
    __atomic_add_fetch(&in_use, 1, __ATOMIC_SEQ_CST);
  }
  full_barrier(); /* the pin before the published pages are read */
}

void ac_guard_unpin(struct ac_guard_pins *p) {
  for (int i = 0; i < p->n; i++) {
    int k = p->slot[i];
    if (k < 0) {
      __atomic_sub_fetch(&crowd, 1, __ATOMIC_RELEASE);
      continue;
    }
    __atomic_store_n(&pins[k].end, 0, __ATOMIC_RELAXED);
    __atomic_sub_fetch(&in_use, 1, __ATOMIC_RELEASE);
    __atomic_store_n(&pins[k].used, 0, __ATOMIC_RELEASE);
  }
  p->n = 0;
}

bool ac_guard_pins_read(struct range_list *pinned) {
  full_barrier(); /* what will be closed is published: now the pins */
  pinned->n = 0;
  if (__atomic_load_n(&in_use, __ATOMIC_SEQ_CST))
    for (unsigned k = 0; k < PIN_SLOTS; k++) {
      if (!__atomic_load_n(&pins[k].used, __ATOMIC_SEQ_CST)) continue;
      uintptr_t start = __atomic_load_n(&pins[k].start, __ATOMIC_SEQ_CST);
      uintptr_t end = __atomic_load_n(&pins[k].end, __ATOMIC_SEQ_CST);
      if (start < end) range_push(pinned, start, end);
    }
  range_normalise(pinned);
  return __atomic_load_n(&crowd, __ATOMIC_SEQ_CST) != 0;
}

void ac_guard_pins_after_fork_child(void) {
  for (unsigned k = 0; k < PIN_SLOTS; k++)
    pins[k].used = 0, pins[k].start = pins[k].end = 0;
  in_use = crowd = 0;
}
