/* ranges.c - sorted lists of page ranges (see ranges.h). */
#include "ranges.h"

#include "grow.h"

#include <stdlib.h>
#include <string.h>

bool range_push(struct range_list *l, uintptr_t start, uintptr_t end) {
  if (start >= end) return true;
  if (!AC_GROW(l->r, l->n, l->cap, 16)) return false;
  l->r[l->n++] = (struct range){start, end};
  return true;
}

bool range_append_list(struct range_list *dst, const struct range_list *src) {
  for (size_t i = 0; i < src->n; i++)
    if (!range_push(dst, src->r[i].start, src->r[i].end)) return false;
  return true;
}

static int by_start(const void *a, const void *b) {
  const struct range *x = a, *y = b;
  return (x->start > y->start) - (x->start < y->start);
}

void ac_sort_unless_sorted(void *base, size_t n, size_t size,
                           int (*cmp)(const void *, const void *)) {
  const char *e = base;
  for (size_t i = 1; i < n; i++)
    if (cmp(e + (i - 1) * size, e + i * size) > 0) {
      qsort(base, n, size, cmp);
      return;
    }
}

void range_normalise(struct range_list *l) {
  if (l->n < 2) return;
  ac_sort_unless_sorted(l->r, l->n, sizeof l->r[0], by_start);
  size_t out = 0;
  for (size_t i = 1; i < l->n; i++) {
    if (l->r[i].start <= l->r[out].end) {
      if (l->r[i].end > l->r[out].end) l->r[out].end = l->r[i].end;
    } else {
      l->r[++out] = l->r[i];
    }
  }
  l->n = out + 1;
}

bool range_push_in_order(struct range_list *l, uintptr_t start, uintptr_t end) {
  if (l->n && start <= l->r[l->n - 1].end) {
    if (end > l->r[l->n - 1].end) l->r[l->n - 1].end = end;
    return true;
  }
  return range_push(l, start, end);
}

/* count ranges from r onto the end of l, as they are. */
static bool range_append(struct range_list *l, const struct range *r, size_t count) {
  while (l->n + count > l->cap)
    if (!AC_GROW(l->r, l->cap, l->cap, 16)) return false;
  memcpy(l->r + l->n, r, count * sizeof r[0]);
  l->n += count;
  return true;
}

/* How many of side's ranges from index at on can go into a union as they
 * are: each begins beyond what out holds by then (so it neither overlaps nor
 * touches it) and comes before the other list's next range, which starts at
 * other_start, in the merge order - on a tie only if first_on_tie. */
static size_t run_before(const struct range_list *out, const struct range_list *side, size_t at,
                         uintptr_t other_start, bool first_on_tie) {
  size_t n = 0;
  if (!out->n) return 0; /* an empty range came first, and was not pushed */
  uintptr_t last_end = out->r[out->n - 1].end;
  while (at + n < side->n) {
    const struct range *r = &side->r[at + n];
    if (r->start <= last_end) break; /* touches what is in out: coalesced one by one */
    if (r->start > other_start || (r->start == other_start && !first_on_tie)) break;
    last_end = r->end;
    n++;
  }
  return n;
}

/* After one range of a side is in out, the ranges of that side that follow
 * it up to the other side's next start go in as a copied run: a class's
 * long list merged with its short log costs a scan and a copy, not a push
 * each. */
bool range_union(struct range_list *out, const struct range_list *a, const struct range_list *b) {
  out->n = 0;
  size_t i = 0, j = 0;
  while (i < a->n || j < b->n) {
    bool from_a = j >= b->n || (i < a->n && a->r[i].start <= b->r[j].start);
    const struct range_list *side = from_a ? a : b, *other = from_a ? b : a;
    size_t *at = from_a ? &i : &j, other_at = from_a ? j : i;
    const struct range *next = &side->r[(*at)++];
    if (!range_push_in_order(out, next->start, next->end)) return false;
    uintptr_t other_start = other_at < other->n ? other->r[other_at].start : UINTPTR_MAX;
    size_t run = run_before(out, side, *at, other_start, from_a || other_at >= other->n);
    if (!range_append(out, &side->r[*at], run)) return false;
    *at += run;
  }
  return true;
}

bool range_round_out(struct range_list *out, const struct range_list *l, uintptr_t page_size) {
  out->n = 0;
  for (size_t i = 0; i < l->n; i++) {
    uintptr_t start = l->r[i].start & ~(page_size - 1);
    uintptr_t end = (l->r[i].end + page_size - 1) & ~(page_size - 1);
    if (!range_push_in_order(out, start, end)) return false;
  }
  return true;
}

bool range_subtract(struct range_list *out, const struct range_list *a,
                    const struct range_list *b) {
  out->n = 0;
  size_t j = 0;
  for (size_t i = 0; i < a->n; i++) {
    uintptr_t start = a->r[i].start, end = a->r[i].end;
    while (j < b->n && b->r[j].end <= start)
      j++;
    if (j == b->n || b->r[j].start >= end) { /* a's ranges that end by b's next: kept whole */
      size_t stop = j == b->n ? a->n : range_first_ending_after(a, b->r[j].start);
      if (!range_append(out, &a->r[i], stop - i)) return false;
      i = stop - 1;
      continue;
    }
    /* b's ranges from j on end after start; walk those that begin before end. */
    for (size_t k = j; k < b->n && b->r[k].start < end; k++) {
      if (b->r[k].start > start && !range_push(out, start, b->r[k].start)) return false;
      if (b->r[k].end > start) start = b->r[k].end;
      if (start >= end) break;
    }
    if (start < end && !range_push(out, start, end)) return false;
  }
  return true;
}

bool range_clip(struct range_list *out, const struct range_list *l,
                const struct range_list *window) {
  out->n = 0;
  for (size_t w = 0; w < window->n; w++) {
    uintptr_t start = window->r[w].start, end = window->r[w].end;
    for (size_t i = range_first_ending_after(l, start); i < l->n && l->r[i].start < end; i++)
      if (!range_push_in_order(out, l->r[i].start > start ? l->r[i].start : start,
                               l->r[i].end < end ? l->r[i].end : end))
        return false;
  }
  return true;
}

/* Replaces l's ranges [at, at + gone) with the count ranges of with. */
static bool splice(struct range_list *l, size_t at, size_t gone, const struct range *with,
                   size_t count) {
  if (count > gone)
    while (l->n + count - gone > l->cap)
      if (!AC_GROW(l->r, l->cap, l->cap, 16)) return false;
  if (count != gone) /* else the tail stays where it is: no move of a long list */
    memmove(l->r + at + count, l->r + at + gone, (l->n - at - gone) * sizeof l->r[0]);
  if (count) /* l->r may be NULL yet: a list never grown */
    memcpy(l->r + at, with, count * sizeof with[0]);
  l->n = l->n + count - gone;
  return true;
}

bool range_union_into(struct range_list *l, const struct range_list *add) {
  for (size_t k = 0; k < add->n; k++) {
    struct range r = add->r[k];
    if (r.start >= r.end) continue;
    /* l's ranges that overlap or touch r: from the first ending at or after
     * its start to the last starting at or before its end. */
    size_t i = r.start ? range_first_ending_after(l, r.start - 1) : 0, j = i;
    while (j < l->n && l->r[j].start <= r.end)
      j++;
    if (j > i) {
      if (l->r[i].start < r.start) r.start = l->r[i].start;
      if (l->r[j - 1].end > r.end) r.end = l->r[j - 1].end;
    }
    if (!splice(l, i, j - i, &r, 1)) return false;
  }
  return true;
}

bool range_subtract_from(struct range_list *l, const struct range_list *cut) {
  for (size_t k = 0; k < cut->n; k++) {
    const struct range c = cut->r[k];
    if (c.start >= c.end) continue;
    size_t i = range_first_ending_after(l, c.start), j = i;
    while (j < l->n && l->r[j].start < c.end)
      j++;
    if (j == i) continue;
    struct range keep[2];
    size_t n = 0;
    if (l->r[i].start < c.start) keep[n++] = (struct range){l->r[i].start, c.start};
    if (l->r[j - 1].end > c.end) keep[n++] = (struct range){c.end, l->r[j - 1].end};
    if (!splice(l, i, j - i, keep, n)) return false;
  }
  return true;
}

/* Appends [start, end) to pieces being built in order, merged with the last
 * when they touch. */
static bool piece(struct range_list *pieces, uintptr_t start, uintptr_t end) {
  return start >= end || range_push_in_order(pieces, start, end);
}

bool range_replace_within(struct range_list *l, const struct range_list *window,
                          const struct range_list *with) {
  static struct range_list pieces; /* the guard's lists change under its lock */
  for (size_t k = 0; k < window->n; k++) {
    const struct range w = window->r[k];
    if (w.start >= w.end) continue;
    /* l's ranges that overlap or touch w: their parts outside it stay, and
     * merge with what comes in where they touch. */
    size_t i = w.start ? range_first_ending_after(l, w.start - 1) : 0, j = i;
    while (j < l->n && l->r[j].start <= w.end)
      j++;
    pieces.n = 0;
    bool ok =
        j == i || piece(&pieces, l->r[i].start, l->r[i].end < w.start ? l->r[i].end : w.start);
    for (size_t m = range_first_ending_after(with, w.start);
         ok && m < with->n && with->r[m].start < w.end; m++)
      ok = piece(&pieces, with->r[m].start > w.start ? with->r[m].start : w.start,
                 with->r[m].end < w.end ? with->r[m].end : w.end);
    if (ok && j > i)
      ok = piece(&pieces, l->r[j - 1].start > w.end ? l->r[j - 1].start : w.end, l->r[j - 1].end);
    if (!ok || !splice(l, i, j - i, pieces.r, pieces.n)) return false;
  }
  return true;
}

/* The first of the n sorted ranges at r whose end (by_end) or start lies
 * beyond addr: the one binary search of the guard's lists. */
static size_t first_beyond(const struct range *r, size_t n, uintptr_t addr, bool by_end) {
  size_t lo = 0, hi = n;
  while (lo < hi) {
    size_t mid = (lo + hi) / 2;
    if ((by_end ? r[mid].end : r[mid].start) <= addr)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

size_t range_array_first_ending_after(const struct range *r, size_t n, uintptr_t addr) {
  return first_beyond(r, n, addr, true);
}

size_t range_first_ending_after(const struct range_list *l, uintptr_t addr) {
  return first_beyond(l->r, l->n, addr, true);
}

size_t range_first_starting_after(const struct range_list *l, uintptr_t addr) {
  return first_beyond(l->r, l->n, addr, false);
}

bool range_contains(const struct range_list *l, uintptr_t addr) {
  size_t i = range_first_ending_after(l, addr);
  return i < l->n && l->r[i].start <= addr;
}

bool range_meets(const struct range_list *l, uintptr_t start, uintptr_t end) {
  size_t i = range_first_ending_after(l, start);
  return i < l->n && l->r[i].start < end;
}

bool range_covers(const struct range_list *l, uintptr_t start, uintptr_t end) {
  size_t i = range_first_ending_after(l, start);
  return i < l->n && l->r[i].start <= start && l->r[i].end >= end;
}

bool range_equal(const struct range_list *a, const struct range_list *b) {
  return a->n == b->n && (a->n == 0 || memcmp(a->r, b->r, a->n * sizeof a->r[0]) == 0);
}

void range_free(struct range_list *l) {
  free(l->r);
  *l = (struct range_list){0, 0, NULL};
}
