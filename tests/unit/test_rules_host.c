/* test_rules_host.c - AC201, AC202, AC401, AC402: each wrong case and the
 * right case beside it. */
#include <string.h>

#include "rules_host.h"
#include "model_fixture.h"
#include "test.h"

/* The rule a CPU access breaks now, or "" */
static const char *access_rule(struct ac_alloc *a, const struct ac_stream *in_callback) {
  struct ac_host_access acc = {{a->base, 4, AC_ACCESS_READ, "page fault"}, 1, in_callback};
  struct ac_finding f;
  return ac_judge_host_access(m, a, &acc, &f) ? ac_rule_info(f.rule)->id : "";
}

static void test_single_attached(void) {
  m = ac_model_create();
  struct ac_stream *s = ac_model_stream_created(m, 0x100, NON_BLOCKING, 0);
  struct ac_stream *t = ac_model_stream_created(m, 0x200, NON_BLOCKING, 0);
  struct ac_alloc *a = managed(0x10000, AC_ASSOC_HOST);
  attach(a, AC_ASSOC_SINGLE, s);
  CHECK(strcmp(access_rule(a, NULL), "AC201") == 0); /* the attach itself is pending */
  ac_order_host_syncs_stream(m, s);
  CHECK(strcmp(access_rule(a, NULL), "") == 0);
  ac_order_enqueue(m, t, NULL); /* another stream's work does not matter */
  CHECK(strcmp(access_rule(a, NULL), "") == 0);
  ac_order_enqueue(m, s, NULL);
  struct ac_finding f;
  struct ac_host_access acc = {{a->base + 8, 0, AC_ACCESS_WRITE, "page fault"}, 3, NULL};
  CHECK(ac_judge_host_access(m, a, &acc, &f) && f.rule == AC_RULE_AC201);
  CHECK(f.busy.present && f.busy.stream_serial == s->serial && f.busy.outstanding == 1);
  CHECK(f.access.addr == a->base + 8 && f.thread == 3 && f.alloc.base == a->base);
  /* Inside a host function of s, s is idle. */
  CHECK(strcmp(access_rule(a, s), "") == 0);
  ac_model_destroy(m);
}

static void test_global_and_host(void) {
  m = ac_model_create();
  struct ac_stream *s = ac_model_stream_created(m, 0x100, NON_BLOCKING, 0);
  struct ac_stream *t = ac_model_stream_created(m, 0x200, NON_BLOCKING, 0);
  struct ac_alloc *g = managed(0x10000, AC_ASSOC_GLOBAL), *h = managed(0x20000, AC_ASSOC_HOST);
  CHECK(strcmp(access_rule(g, NULL), "") == 0);
  ac_order_enqueue(m, s, NULL);
  CHECK(strcmp(access_rule(g, NULL), "AC202") == 0);
  CHECK(strcmp(access_rule(h, NULL), "") == 0); /* HOST-attached: always the CPU's */
  CHECK(strcmp(access_rule(g, s), "") == 0);    /* in s's host function, nothing else busy */
  ac_order_enqueue(m, t, NULL);
  CHECK(strcmp(access_rule(g, s), "AC202") == 0);
  ac_order_host_syncs_all(m);
  CHECK(strcmp(access_rule(g, NULL), "") == 0);
  ac_model_destroy(m);
}

static void test_reattach_order(void) {
  m = ac_model_create();
  struct ac_stream *s = ac_model_stream_created(m, 0x100, NON_BLOCKING, 0);
  struct ac_stream *t = ac_model_stream_created(m, 0x200, NON_BLOCKING, 0);
  struct ac_alloc *a = managed(0x10000, AC_ASSOC_GLOBAL);
  struct ac_finding f;
  attach(a, AC_ASSOC_SINGLE, s);
  CHECK(!ac_judge_attach_order(m, a, t, &f)); /* only the attach itself is outstanding */
  ac_order_enqueue(m, s, NULL);               /* a kernel using a */
  CHECK(ac_judge_attach_order(m, a, t, &f) && f.rule == AC_RULE_AC401);
  CHECK(!ac_judge_attach_order(m, a, s, &f)); /* same stream: ordered by the stream */
  ac_order_event_recorded(m, 0xe, s);
  ac_order_stream_waits_event(m, t, 0xe);
  CHECK(!ac_judge_attach_order(m, a, t, &f)); /* t waits for s's work */
  ac_order_enqueue(m, s, NULL);
  CHECK(ac_judge_attach_order(m, a, t, &f));
  ac_order_host_syncs_stream(m, s);
  CHECK(!ac_judge_attach_order(m, a, t, &f));
  ac_model_destroy(m);
}

static int notes;
static void count_note(struct ac_finding *f, void *ctx) {
  (void)ctx;
  notes += f->rule == AC_RULE_AC402;
}

static void test_destroyed_stream(void) {
  m = ac_model_create();
  struct ac_stream *s = ac_model_stream_created(m, 0x100, NON_BLOCKING, 0);
  struct ac_alloc *a = managed(0x10000, AC_ASSOC_GLOBAL), *b = managed(0x20000, AC_ASSOC_HOST);
  attach(a, AC_ASSOC_SINGLE, s);
  attach(b, AC_ASSOC_SINGLE, s);
  ac_order_enqueue(m, s, NULL);
  ac_model_stream_destroyed(m, 0x100);
  CHECK(ac_judge_stream_destroyed(m, s, count_note, NULL) == 2 && notes == 2);
  CHECK(strcmp(access_rule(a, NULL), "AC201") == 0); /* its work is still outstanding */
  ac_order_host_syncs_all(m);
  CHECK(strcmp(access_rule(a, NULL), "") == 0);
  CHECK(a->assoc == AC_ASSOC_GLOBAL && b->assoc == AC_ASSOC_HOST); /* the defaults */
  ac_model_destroy(m);
}

int main(void) {
  test_single_attached();
  test_global_and_host();
  test_reattach_order();
  test_destroyed_stream();
  return TEST_SUMMARY("test_rules_host");
}
