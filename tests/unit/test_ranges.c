/* test_ranges.c - the page guard's range arithmetic (shim/guard/ranges.c). */
#include <stdlib.h>
#include <string.h>

#include "../../shim/guard/ranges.h"
#include "test.h"

static struct range_list list_of(const uintptr_t *pairs, size_t n) {
  struct range_list l = {0, 0, NULL};
  for (size_t i = 0; i < n; i += 2)
    range_push(&l, pairs[i], pairs[i + 1]);
  range_normalise(&l);
  return l;
}

static int same(const struct range_list *l, const uintptr_t *pairs, size_t n) {
  if (l->n * 2 != n) return 0;
  for (size_t i = 0; i < l->n; i++)
    if (l->r[i].start != pairs[2 * i] || l->r[i].end != pairs[2 * i + 1]) return 0;
  return 1;
}

static void normalise_merges_touching_and_overlapping(void) {
  const uintptr_t in[] = {30, 40, 0, 10, 10, 20, 35, 50, 60, 70};
  const uintptr_t want[] = {0, 20, 30, 50, 60, 70};
  struct range_list l = list_of(in, 10);
  CHECK(same(&l, want, 6));
  CHECK(range_contains(&l, 0) && range_contains(&l, 19) && !range_contains(&l, 20));
  CHECK(range_contains(&l, 49) && !range_contains(&l, 50) && !range_contains(&l, 75));
  /* Covered: inside one range, not across a gap or past an end. */
  CHECK(range_covers(&l, 0, 20) && range_covers(&l, 32, 45) && range_covers(&l, 60, 70));
  CHECK(!range_covers(&l, 15, 35) && !range_covers(&l, 45, 51) && !range_covers(&l, 70, 75));
  /* Met: some byte inside a range, not a gap or an end alone. */
  CHECK(range_meets(&l, 15, 35) && range_meets(&l, 45, 51) && range_meets(&l, 69, 75));
  CHECK(!range_meets(&l, 20, 30) && !range_meets(&l, 50, 60) && !range_meets(&l, 70, 75));
  /* The first range ending after an address: the one holding it, or the next. */
  CHECK(range_first_ending_after(&l, 0) == 0 && range_first_ending_after(&l, 19) == 0);
  CHECK(range_first_ending_after(&l, 20) == 1 && range_first_ending_after(&l, 49) == 1);
  CHECK(range_first_ending_after(&l, 50) == 2 && range_first_ending_after(&l, 70) == l.n);
  range_free(&l);
}

static void subtract_cuts_holes_and_edges(void) {
  const uintptr_t a_pairs[] = {0, 100, 200, 300, 400, 500};
  /* a hole inside the first, the left edge of the second, the whole third */
  const uintptr_t b_pairs[] = {10, 20, 50, 60, 150, 250, 400, 500, 600, 700};
  const uintptr_t want[] = {0, 10, 20, 50, 60, 100, 250, 300};
  struct range_list a = list_of(a_pairs, 6), b = list_of(b_pairs, 10), out = {0, 0, NULL};
  CHECK(range_subtract(&out, &a, &b));
  CHECK(same(&out, want, 8));
  range_free(&out);
  /* nothing to take away: a itself; everything taken: nothing */
  struct range_list none = {0, 0, NULL};
  CHECK(range_subtract(&out, &a, &none) && same(&out, a_pairs, 6));
  CHECK(range_subtract(&out, &b, &b) && out.n == 0);
  range_free(&a), range_free(&b), range_free(&out);
}

static void subtract_range_spanning_several(void) {
  const uintptr_t a_pairs[] = {0, 1000};
  const uintptr_t b_pairs[] = {100, 200, 300, 400, 900, 1100};
  const uintptr_t want[] = {0, 100, 200, 300, 400, 900};
  struct range_list a = list_of(a_pairs, 2), b = list_of(b_pairs, 6), out = {0, 0, NULL};
  CHECK(range_subtract(&out, &a, &b) && same(&out, want, 6));
  range_free(&a), range_free(&b), range_free(&out);
}

static void union_merges_in_order(void) {
  const uintptr_t a_pairs[] = {0, 10, 40, 50, 90, 100};
  const uintptr_t b_pairs[] = {5, 20, 50, 60, 70, 80};
  const uintptr_t want[] = {0, 20, 40, 60, 70, 80, 90, 100};
  struct range_list a = list_of(a_pairs, 6), b = list_of(b_pairs, 6), out = {0, 0, NULL};
  CHECK(range_union(&out, &a, &b) && same(&out, want, 8));
  struct range_list none = {0, 0, NULL};
  CHECK(range_union(&out, &none, &b) && same(&out, b_pairs, 6));
  struct range empty_first[] = {{3, 3}, {5, 20}};
  struct range_list odd = {2, 2, empty_first}; /* no push makes one; a guard all the same */
  const uintptr_t odd_want[] = {5, 20, 50, 60, 70, 80};
  CHECK(range_union(&out, &odd, &b) && same(&out, odd_want, 6));
  range_free(&a), range_free(&b), range_free(&out);
}

static void round_out_covers_touched_pages(void) {
  /* two small ranges in one page, one across a boundary, one far away */
  const uintptr_t in[] = {100, 200, 600, 700, 4000, 4200, 20000, 20001};
  const uintptr_t want[] = {0, 8192, 16384, 20480};
  struct range_list l = list_of(in, 8), out = {0, 0, NULL};
  CHECK(range_round_out(&out, &l, 4096) && same(&out, want, 4));
  range_free(&l), range_free(&out);
}

static void clip_keeps_what_lies_inside(void) {
  const uintptr_t l_pairs[] = {0, 100, 200, 300, 400, 500, 600, 700};
  /* the edge of one, one whole and the start of the next, none, past the end */
  const uintptr_t w_pairs[] = {50, 150, 180, 450, 520, 580, 690, 900};
  const uintptr_t want[] = {50, 100, 200, 300, 400, 450, 690, 700};
  struct range_list l = list_of(l_pairs, 8), w = list_of(w_pairs, 8), out = {0, 0, NULL};
  CHECK(range_clip(&out, &l, &w) && same(&out, want, 8));
  struct range_list none = {0, 0, NULL};
  CHECK(range_clip(&out, &l, &none) && out.n == 0);
  CHECK(range_clip(&out, &none, &w) && out.n == 0);
  range_free(&l), range_free(&w), range_free(&out);
}

/* The answers address by address over [0, UNIVERSE), which range_union and
 * range_subtract, which copy untouched runs whole, must give exactly: the
 * union normalised; each range of a less b, as the pieces left of it. */
enum { UNIVERSE = 4096 + 64 };
static void mark(bool *in, const struct range_list *l) {
  memset(in, 0, UNIVERSE * sizeof in[0]);
  for (size_t i = 0; i < l->n; i++)
    for (uintptr_t x = l->r[i].start; x < l->r[i].end; x++)
      in[x] = true;
}

static void pieces(struct range_list *out, const bool *in, uintptr_t start, uintptr_t end) {
  for (uintptr_t x = start; x < end;) {
    if (!in[x]) {
      x++;
      continue;
    }
    uintptr_t from = x;
    while (x < end && in[x])
      x++;
    range_push(out, from, x);
  }
}

static void reference_union(struct range_list *out, const struct range_list *a,
                            const struct range_list *b) {
  static bool in_a[UNIVERSE], in_b[UNIVERSE];
  mark(in_a, a), mark(in_b, b);
  for (size_t x = 0; x < UNIVERSE; x++)
    in_a[x] = in_a[x] || in_b[x];
  out->n = 0;
  pieces(out, in_a, 0, UNIVERSE);
}

static void reference_subtract(struct range_list *out, const struct range_list *a,
                               const struct range_list *b) {
  static bool outside_b[UNIVERSE];
  mark(outside_b, b);
  for (size_t x = 0; x < UNIVERSE; x++)
    outside_b[x] = !outside_b[x];
  out->n = 0;
  for (size_t i = 0; i < a->n; i++)
    pieces(out, outside_b, a->r[i].start, a->r[i].end);
}

/* Sorted, disjoint ranges over [0, 4096): touching each other where
 * touching (as a class's log of exact allocations may), else apart (as a
 * normalised list is); about one in density. */
static void random_list(struct range_list *l, bool touching, unsigned density) {
  l->n = 0;
  uintptr_t at = (uintptr_t)(rand() % 8);
  while (at < 4096) {
    uintptr_t end = at + 1 + (uintptr_t)(rand() % 24);
    if (rand() % (int)density == 0) range_push(l, at, end);
    at = end + (touching && rand() % 2 ? 0 : 1 + (uintptr_t)(rand() % 16));
  }
}

static void union_and_subtract_match_the_plain_merges(void) {
  struct range_list a = {0, 0, NULL}, b = {0, 0, NULL}, got = {0, 0, NULL}, want = {0, 0, NULL};
  int mismatches = 0;
  srand(7);
  for (int round = 0; round < 4000; round++) {
    /* long against short, short against long, and alike */
    unsigned da = 1 + (unsigned)(round % 3) * 12, db = 1 + (unsigned)((round / 3) % 3) * 12;
    random_list(&a, round % 2, da);
    random_list(&b, round % 4 < 2, db);
    range_union(&got, &a, &b);
    reference_union(&want, &a, &b);
    mismatches += !range_equal(&got, &want);
    range_union(&got, &b, &a);
    mismatches += !range_equal(&got, &want);
    range_subtract(&got, &a, &b);
    reference_subtract(&want, &a, &b);
    mismatches += !range_equal(&got, &want);
  }
  CHECK(mismatches == 0);
  range_free(&a), range_free(&b), range_free(&got), range_free(&want);
}

/* The in-place forms give what the plain merges give, for a normalised
 * list changed by a list of any length, touching or not. */
static void in_place_union_and_subtract_match(void) {
  struct range_list a = {0, 0, NULL}, b = {0, 0, NULL}, got = {0, 0, NULL}, want = {0, 0, NULL};
  int mismatches = 0;
  srand(11);
  for (int round = 0; round < 4000; round++) {
    unsigned da = 1 + (unsigned)(round % 3) * 12, db = 1 + (unsigned)((round / 3) % 3) * 12;
    random_list(&a, false, da);
    random_list(&b, round % 2, db);
    got.n = 0;
    range_append_list(&got, &a);
    CHECK(range_union_into(&got, &b));
    reference_union(&want, &a, &b);
    mismatches += !range_equal(&got, &want);
    got.n = 0;
    range_append_list(&got, &a);
    CHECK(range_subtract_from(&got, &b));
    reference_subtract(&want, &a, &b);
    mismatches += !range_equal(&got, &want);
  }
  CHECK(mismatches == 0);
  /* Replaced within a window: (a less w) joined with b's parts inside w. */
  struct range_list w = {0, 0, NULL}, less = {0, 0, NULL}, inside = {0, 0, NULL};
  for (int round = 0; round < 4000; round++) {
    random_list(&a, false, 1 + (unsigned)(round % 3) * 12);
    random_list(&b, round % 2, 1 + (unsigned)((round / 3) % 3) * 6);
    random_list(&w, false, 2 + (unsigned)(round % 5) * 8);
    got.n = 0;
    range_append_list(&got, &a);
    CHECK(range_replace_within(&got, &w, &b));
    reference_subtract(&less, &a, &w);
    range_clip(&inside, &b, &w);
    reference_union(&want, &less, &inside);
    mismatches += !range_equal(&got, &want);
  }
  CHECK(mismatches == 0);
  range_free(&w), range_free(&less), range_free(&inside);
  /* Into an empty list, and from one. */
  got.n = 0;
  CHECK(range_union_into(&got, &b) && range_subtract_from(&got, &b) && got.n == 0);
  range_free(&a), range_free(&b), range_free(&got), range_free(&want);
}

int main(void) {
  union_and_subtract_match_the_plain_merges();
  in_place_union_and_subtract_match();
  clip_keeps_what_lies_inside();
  union_merges_in_order();
  round_out_covers_touched_pages();
  normalise_merges_touching_and_overlapping();
  subtract_cuts_holes_and_edges();
  subtract_range_spanning_several();
  return TEST_SUMMARY("test_ranges");
}
