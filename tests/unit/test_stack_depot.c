/* test_stack_depot.c - stacks stored once: the same stack gets the same id,
 * a different one another, and every id gives its stack back however many
 * were stored since. */
#include <stdbool.h>
#include <string.h>

#include "stack_depot.h"
#include "test.h"

static struct ac_stack stack_of(int depth, uintptr_t seed) {
  struct ac_stack s;
  memset(&s, 0, sizeof s);
  s.depth = depth;
  for (int i = 0; i < depth; i++)
    s.pc[i] = (void *)(seed * 0x1000 + (uintptr_t)i * 8 + 0x400000);
  return s;
}

static bool same_stack(const struct ac_stack *a, const struct ac_stack *b) {
  return a->depth == b->depth && memcmp(a->pc, b->pc, (size_t)a->depth * sizeof a->pc[0]) == 0;
}

static void test_same_stack_same_id(void) {
  struct ac_stack a = stack_of(12, 1), b = stack_of(12, 1), c = stack_of(12, 2);
  ac_stack_id ia = ac_stack_depot_put(&a);
  CHECK(ia != 0 && ac_stack_depot_put(&b) == ia);
  ac_stack_id ic = ac_stack_depot_put(&c);
  CHECK(ic != 0 && ic != ia);
  struct ac_stack shorter = stack_of(11, 1); /* a prefix is another stack */
  CHECK(ac_stack_depot_put(&shorter) != ia);
  struct ac_stack out;
  ac_stack_depot_get(ia, &out);
  CHECK(same_stack(&out, &a));
  ac_stack_depot_get(ic, &out);
  CHECK(same_stack(&out, &c));
}

static void test_no_stack(void) {
  struct ac_stack empty = stack_of(0, 3), out = stack_of(5, 4);
  CHECK(ac_stack_depot_put(&empty) == 0 && ac_stack_depot_put(NULL) == 0);
  ac_stack_depot_get(0, &out);
  CHECK(out.depth == 0);
  ac_stack_depot_get(0x7fffffff, &out); /* never handed out */
  CHECK(out.depth == 0);
}

/* Enough stacks to grow the table several times: ids stay valid. */
static void test_many_stacks(void) {
  enum { N = 20000 };
  static ac_stack_id ids[N];
  size_t before = ac_stack_depot_count();
  for (int i = 0; i < N; i++) {
    struct ac_stack s = stack_of(1 + i % AC_STACK_MAX, 100 + (uintptr_t)i);
    ids[i] = ac_stack_depot_put(&s);
  }
  CHECK(ac_stack_depot_count() == before + N);
  int wrong = 0;
  for (int i = 0; i < N; i++) {
    struct ac_stack s = stack_of(1 + i % AC_STACK_MAX, 100 + (uintptr_t)i), out;
    ac_stack_depot_get(ids[i], &out);
    wrong += !same_stack(&out, &s) || ac_stack_depot_put(&s) != ids[i];
  }
  CHECK(wrong == 0);
  CHECK(ac_stack_depot_count() == before + N);
  CHECK(ac_stack_depot_bytes() > (size_t)N * 16);
}

static void test_origin_expanded(void) {
  struct ac_stack s = stack_of(4, 9);
  struct ac_origin o = {"cuLaunchKernel", 3, 17, ac_stack_depot_put(&s)};
  struct ac_op_origin full;
  ac_origin_expand(&o, &full);
  CHECK(full.api == o.api && full.thread == 3 && full.seq == 17 && same_stack(&full.stack, &s));
}

int main(void) {
  test_same_stack_same_id();
  test_no_stack();
  test_many_stacks();
  test_origin_expanded();
  return TEST_SUMMARY("test_stack_depot");
}
