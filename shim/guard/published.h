/* published.h - page ranges the SIGSEGV handler and the system-call checks
 * read without the model lock: the pages the guard closed (refresh.c) and
 * the keyed pages with their slots (keys.c).
 *
 * Two copies, written in turn as a latch (Linux's seqcount latch): while
 * one is being written, readers read the other. A reader never waits for
 * a writer - not even for one its own thread was running when a signal
 * interrupted it, the handler then reading the copy that was complete - and
 * sees either the contents before a write or after it. Writers are under
 * the model lock. Async-signal-safe to read.
 */
#ifndef AC_GUARD_PUBLISHED_H
#define AC_GUARD_PUBLISHED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ranges.h"

/* The most ranges published; past that a reader is told it may have missed
 * some (overflow) and asks again under the lock. */
#define AC_PUBLISHED_MAX 8192

struct ac_published {
  unsigned seq; /* atomic: moves by two at each write; its low bit picks the copy to read */
  size_t count[2];
  bool overflow[2];
  struct range r[2][AC_PUBLISHED_MAX];
  int tag[2][AC_PUBLISHED_MAX];
};

/* Publishes n ranges, sorted by start, with their tags (NULL: all 0). */
void ac_published_set(struct ac_published *p, const struct range *r, const int *tags, size_t n);

/* The tag of the first published range that meets [start, end) and that
 * accept (NULL: any) takes, and where in [start, end) it starts (*at); -1
 * when none. *overflow: the ranges published were not all there were. */
int ac_published_find(const struct ac_published *p, uintptr_t start, uintptr_t end,
                      bool (*accept)(int tag, void *ctx), void *ctx, uintptr_t *at, bool *overflow);

/* Changes at every write: the guard's protections have an epoch. */
static inline unsigned ac_published_epoch(const struct ac_published *p) {
  return __atomic_load_n(&p->seq, __ATOMIC_ACQUIRE);
}

#endif
