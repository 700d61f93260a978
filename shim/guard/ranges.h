/* ranges.h - sorted lists of page ranges, the page guard's arithmetic.
 *
 * A list is normalised when its ranges are sorted by start and neither
 * overlap nor touch; the set operations take and give normalised lists.
 */
#ifndef AC_RANGES_H
#define AC_RANGES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct range {
  uintptr_t start, end; /* [start, end) */
};

struct range_list {
  size_t n, cap;
  struct range *r;
};

/* Sorts n elements of size bytes at base by cmp, unless they are in order
 * already: the guard's lists are often built in order (merged lists,
 * allocations grouped in address order), and a look costs less than a sort. */
void ac_sort_unless_sorted(void *base, size_t n, size_t size,
                           int (*cmp)(const void *, const void *));
bool range_push(struct range_list *l, uintptr_t start, uintptr_t end);
/* Appends [start, end) to a list being built in order, merging with its last
 * range when they overlap or touch: the list stays normalised. */
bool range_push_in_order(struct range_list *l, uintptr_t start, uintptr_t end);
bool range_append_list(struct range_list *dst, const struct range_list *src);
/* Sorts and merges overlapping or touching ranges. */
void range_normalise(struct range_list *l);
/* out = a joined with b (a, b normalised; linear, no sort). */
bool range_union(struct range_list *out, const struct range_list *a, const struct range_list *b);
/* out = the pages of page_size that touch any range of l (l normalised;
 * linear, no sort). */
bool range_round_out(struct range_list *out, const struct range_list *l, uintptr_t page_size);
/* out = a less b (a, b normalised; out is cleared first and comes out normalised). */
bool range_subtract(struct range_list *out, const struct range_list *a, const struct range_list *b);
/* out = the parts of l inside window (both normalised; out is cleared first;
 * a binary search of l per range of window, so l may be long). */
bool range_clip(struct range_list *out, const struct range_list *l,
                const struct range_list *window);
/* l joined with add, and l less cut, in place (all normalised): a binary
 * search of l per range of the other list and one move of l's tail, so a
 * long list changed by a few ranges costs what changed, not its length - a
 * patch of the keys' layout after one attach among thousands. */
bool range_union_into(struct range_list *l, const struct range_list *add);
bool range_subtract_from(struct range_list *l, const struct range_list *cut);
/* l's ranges inside window replaced by with's (l = (l less window) joined
 * with the parts of with inside window), in place: where as many ranges come
 * as go, l's tail does not move. */
bool range_replace_within(struct range_list *l, const struct range_list *window,
                          const struct range_list *with);
bool range_contains(const struct range_list *l, uintptr_t addr);
/* Whether [start, end) meets some range of l (normalised). */
bool range_meets(const struct range_list *l, uintptr_t start, uintptr_t end);
/* Whether [start, end) lies inside one range of l (normalised). */
bool range_covers(const struct range_list *l, uintptr_t start, uintptr_t end);
/* a takes b's ranges and b a's (no copy: a list built beside another
 * replaces it, and the old one's memory is reused next time). */
static inline void range_swap(struct range_list *a, struct range_list *b) {
  struct range_list t = *a;
  *a = *b;
  *b = t;
}
/* Whether a and b list the same ranges. */
bool range_equal(const struct range_list *a, const struct range_list *b);
/* The index of the first range of l (normalised) that ends after addr: the
 * one holding addr, or the next; l->n if none. */
size_t range_first_ending_after(const struct range_list *l, uintptr_t addr);
/* The same over n sorted ranges at r (async-signal-safe: the handler's
 * published copies). */
size_t range_array_first_ending_after(const struct range *r, size_t n, uintptr_t addr);
/* The index of the first range of l (sorted by start) that starts after
 * addr; l->n if none. */
size_t range_first_starting_after(const struct range_list *l, uintptr_t addr);
void range_free(struct range_list *l);

#endif
