/* class_queue.c - the page guard's moves of class that wait for the next
 * read of the classes (class_queue.h says why): a growing array of the
 * allocations to move, each marked in its record so that it is queued once
 * however often it moves before the read.
 */
#include <stdlib.h>

#include "class_queue.h"
#include "grow.h"
#include "shim.h"

static struct {
  struct ac_alloc **list;
  size_t count, cap;
  struct ac_alloc **spare; /* for in_address_order */
  size_t spare_cap;
} queued;

/* The end of the ascending run of list that starts at i. */
static size_t run_end(struct ac_alloc *const *list, size_t i, size_t n) {
  while (i + 1 < n && list[i]->base < list[i + 1]->base)
    i++;
  return i + 1;
}

/* A class is filled by appending when its moves come in address order
 * (class_log.c), as a program's attaches mostly do. But a queue drained at
 * a synchronisation holds first the last attaches since the last refresh
 * (their moves to pending, queued while the refreshes were skipped), then
 * the settling of all the others: two ascending runs, the first above the
 * second, which filled the stream's class out of order (16 merges of its
 * logs where 6 were, for 4,000 attaches). Two runs are merged into one; more
 * are left as they came (no order is needed, only cheaper), and so is a
 * short queue - a refresh's after a few attaches - whose few logged moves
 * cost less than looking. */
static void in_address_order(void) {
  size_t n = queued.count;
  if (n < 64) return;
  size_t first = run_end(queued.list, 0, n);
  if (first == n || run_end(queued.list, first, n) != n) return;
  while (queued.spare_cap < n) /* room for n: the spare doubles, or takes n when empty */
    if (!AC_GROW(queued.spare, queued.spare_cap, queued.spare_cap, n)) return;
  struct ac_alloc **a = queued.list, **b = queued.list + first, **a_end = b,
                  **b_end = queued.list + n, **out = queued.spare;
  while (a < a_end && b < b_end)
    *out++ = (*a)->base < (*b)->base ? *a++ : *b++;
  while (a < a_end)
    *out++ = *a++;
  while (b < b_end)
    *out++ = *b++;
  struct ac_alloc **swap = queued.list;
  size_t swap_cap = queued.cap;
  queued.list = queued.spare, queued.cap = queued.spare_cap;
  queued.spare = swap, queued.spare_cap = swap_cap;
}

bool ac_class_queue_push(struct ac_alloc *a) {
  AC_ASSERT_MODEL_HELD();
  if (!AC_GROW(queued.list, queued.count, queued.cap, 64)) return false;
  a->guard_queued = true;
  queued.list[queued.count++] = a;
  return true;
}

size_t ac_class_queue_count(void) {
  return queued.count;
}

void ac_class_queue_drain(void (*move)(struct ac_alloc *a, bool leaving)) {
  AC_ASSERT_MODEL_HELD();
  in_address_order();
  for (size_t i = 0; i < queued.count; i++) {
    struct ac_alloc *a = queued.list[i];
    a->guard_queued = false;
    move(a, false);
  }
  queued.count = 0;
}

void ac_class_queue_reset(void) {
  queued.count = 0;
}
