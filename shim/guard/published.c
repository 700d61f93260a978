/* published.c - the latch of published.h. */
#include "published.h"

#include <string.h>

static void fill(struct ac_published *p, int copy, const struct range *r, const int *tags,
                 size_t n) {
  bool overflow = n > AC_PUBLISHED_MAX;
  if (overflow) n = 0; /* readers ask again under the lock */
  if (n) memcpy(p->r[copy], r, n * sizeof *r);
  if (n && tags)
    memcpy(p->tag[copy], tags, n * sizeof *tags);
  else if (n)
    memset(p->tag[copy], 0, n * sizeof *tags);
  p->count[copy] = n;
  p->overflow[copy] = overflow;
}

void ac_published_set(struct ac_published *p, const struct range *r, const int *tags, size_t n) {
  /* Readers use copy (seq & 1): move them to 1, write 0; move them to 0,
   * write 1. */
  __atomic_add_fetch(&p->seq, 1, __ATOMIC_RELEASE);
  __atomic_thread_fence(__ATOMIC_SEQ_CST);
  fill(p, 0, r, tags, n);
  __atomic_add_fetch(&p->seq, 1, __ATOMIC_RELEASE);
  __atomic_thread_fence(__ATOMIC_SEQ_CST);
  fill(p, 1, r, tags, n);
}

int ac_published_find(const struct ac_published *p, uintptr_t start, uintptr_t end,
                      bool (*accept)(int tag, void *ctx), void *ctx, uintptr_t *at,
                      bool *overflow) {
  unsigned seq;
  int found;
  do {
    seq = __atomic_load_n(&p->seq, __ATOMIC_ACQUIRE);
    int c = (int)(seq & 1);
    size_t n = p->count[c];
    *overflow = p->overflow[c];
    found = -1;
    for (size_t i = range_array_first_ending_after(p->r[c], n, start);
         i < n && p->r[c][i].start < end; i++)
      if (!accept || accept(p->tag[c][i], ctx)) {
        found = p->tag[c][i];
        *at = p->r[c][i].start > start ? p->r[c][i].start : start;
        break;
      }
    __atomic_thread_fence(__ATOMIC_ACQUIRE);
  } while (seq != __atomic_load_n(&p->seq, __ATOMIC_ACQUIRE));
  return found;
}
