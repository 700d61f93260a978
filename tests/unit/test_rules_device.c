/* test_rules_device.c - AC301 and AC302, and how `device` semantics narrows
 * AC202 to work that can reach the memory. */
#include <string.h>

#include "rules_device.h"
#include "rules_host.h"
#include "model_fixture.h"
#include "test.h"

static const char *device_rule(struct ac_alloc *a, struct ac_stream *x, bool host_is_legal) {
  struct ac_finding f;
  return ac_judge_device_access(m, a, x, host_is_legal, &f) ? ac_rule_info(f.rule)->id : "";
}

static void test_foreign_stream(void) {
  m = ac_model_create();
  struct ac_stream *s = ac_model_stream_created(m, 0x100, NON_BLOCKING, 0);
  struct ac_stream *t = ac_model_stream_created(m, 0x200, NON_BLOCKING, 0);
  struct ac_alloc *a = managed(0x10000, AC_ASSOC_GLOBAL);
  CHECK(strcmp(device_rule(a, t, false), "") == 0); /* GLOBAL: any stream */
  attach(a, AC_ASSOC_SINGLE, s);
  CHECK(strcmp(device_rule(a, s, false), "") == 0); /* its own stream, after the attach */
  CHECK(strcmp(device_rule(a, t, false), "AC301") == 0);
  struct ac_finding f;
  CHECK(ac_judge_device_access(m, a, t, false, &f) && f.busy.stream_serial == s->serial);
  CHECK(f.stream.serial == t->serial && f.alloc.assoc_stream_serial == s->serial);
  /* Re-attached to t: right on t at once (stream order), AC301 on s until complete. */
  ac_order_host_syncs_stream(m, s);
  attach(a, AC_ASSOC_SINGLE, t);
  CHECK(strcmp(device_rule(a, t, false), "") == 0);
  CHECK(strcmp(device_rule(a, s, false), "AC301") == 0);
  ac_order_host_syncs_stream(m, t);
  CHECK(strcmp(device_rule(a, s, false), "AC301") == 0); /* now plainly t's */
  ac_model_destroy(m);
}

static void test_host_attached(void) {
  m = ac_model_create();
  struct ac_stream *s = ac_model_stream_created(m, 0x100, NON_BLOCKING, 0);
  struct ac_alloc *h = managed(0x10000, AC_ASSOC_HOST);
  CHECK(strcmp(device_rule(h, s, false), "AC302") == 0);
  CHECK(strcmp(device_rule(h, s, true), "") == 0); /* device semantics, concurrent access */
  ac_model_destroy(m);
}

static void test_reach_semantics(void) {
  m = ac_model_create();
  struct ac_stream *s = ac_model_stream_created(m, 0x100, NON_BLOCKING, 0);
  struct ac_alloc *g = managed(0x10000, AC_ASSOC_GLOBAL),
                  *other = managed(0x20000, AC_ASSOC_GLOBAL);
  struct ac_stream *blocker;
  enum ac_rule_id rule;
  ac_model_set_reach_semantics(m, true);
  ac_order_enqueue(m, s, NULL);
  CHECK(ac_host_may_touch(m, g, NULL, &blocker, &rule)); /* s's work does not reach g */
  ac_order_add_reach(m, s, g);
  CHECK(!ac_host_may_touch(m, g, NULL, &blocker, &rule) && rule == AC_RULE_AC202 && blocker == s);
  CHECK(ac_host_may_touch(m, other, NULL, &blocker, &rule));
  ac_order_host_syncs_stream(m, s);
  CHECK(s->reach_count == 0 && ac_host_may_touch(m, g, NULL, &blocker, &rule));
  ac_model_set_reach_semantics(m, false); /* strict: any busy stream */
  ac_order_enqueue(m, s, NULL);
  CHECK(!ac_host_may_touch(m, other, NULL, &blocker, &rule));
  ac_model_destroy(m);
}

int main(void) {
  test_foreign_stream();
  test_host_attached();
  test_reach_semantics();
  return TEST_SUMMARY("test_rules_device");
}
