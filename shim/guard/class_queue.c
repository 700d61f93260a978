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
} queued;

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
