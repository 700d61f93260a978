/* test_rules_attach.c - AC101-AC107 and the guard, one case per row of
 * docs/driver-facts.md's attach table, wrong and right. */
#include <string.h>

#include "rules_attach.h"
#include "test.h"

#define MIB (1u << 20)

static struct ac_model *m;
static struct ac_alloc *managed, *small;
static struct ac_stream *s;

static struct ac_attach_call call(uintptr_t stream, uintptr_t dptr, size_t len, unsigned flags) {
  struct ac_attach_call c;
  memset(&c, 0, sizeof c);
  c.api = "cuStreamAttachMemAsync";
  c.args.stream = stream;
  c.args.dptr = dptr;
  c.args.length = len;
  c.args.flags = flags;
  c.stream = ac_model_resolve_stream(m, stream, false, 1);
  /* What the shim does for a handle that is not mapped memory. */
  if (c.stream.kind == AC_STREAM_UNTRACKED && stream == 0x1234)
    c.stream.kind = AC_STREAM_NEVER_CREATED;
  c.alloc = ac_model_find_alloc(m, dptr);
  c.mem_kind = c.alloc ? c.alloc->kind : (dptr ? AC_MEM_PAGEABLE : AC_MEM_NULL);
  return c;
}

/* The rules broken, as a string like "AC101 AC104", for readable checks. */
static const char *rules_of(const struct ac_attach_call *c) {
  static char buf[64];
  struct ac_finding f[AC_ATTACH_MAX_FINDINGS];
  int n = ac_judge_attach(c, f);
  buf[0] = 0;
  for (int i = 0; i < n; i++) {
    if (i) strcat(buf, " ");
    strcat(buf, ac_rule_info(f[i].rule)->id);
  }
  return buf;
}

static const char *judge(uintptr_t stream, uintptr_t dptr, size_t len, unsigned flags) {
  struct ac_attach_call c = call(stream, dptr, len, flags);
  return rules_of(&c);
}

static void setup(void) {
  m = ac_model_create();
  struct ac_alloc p;
  memset(&p, 0, sizeof p);
  p.base = 0x7f0000000000;
  p.size = 4 * MIB;
  p.kind = AC_MEM_MANAGED;
  p.assoc = AC_ASSOC_GLOBAL;
  managed = ac_model_add_alloc(m, &p);
  p.base = 0x7f0000600000;
  p.size = 100;
  small = ac_model_add_alloc(m, &p);
  s = ac_model_stream_created(m, 0x5000, 0, 0);
}

static void test_null_stream(void) {
  CHECK(strcmp(judge(0, managed->base, 0, AC_ASSOC_SINGLE), "AC101") == 0);
  CHECK(strcmp(judge(0x1, managed->base, 0, AC_ASSOC_SINGLE), "AC101") == 0);
  CHECK(strcmp(judge(0x2, managed->base, 0, AC_ASSOC_SINGLE), "") == 0);
  CHECK(strcmp(judge(0, managed->base, 0, AC_ASSOC_GLOBAL), "") == 0);
  CHECK(strcmp(judge(0, managed->base, 0, AC_ASSOC_HOST), "") == 0);
  CHECK(strcmp(judge(0x1, managed->base, 0, AC_ASSOC_HOST), "") == 0);
  /* NULL through a _ptsz entry point is the thread's own stream. */
  struct ac_attach_call c = call(0, managed->base, 0, AC_ASSOC_SINGLE);
  c.stream = ac_model_resolve_stream(m, 0, true, 1);
  CHECK(strcmp(rules_of(&c), "") == 0);
}

static void test_ranges(void) {
  uintptr_t b = managed->base;
  CHECK(strcmp(judge(0x5000, b, 4096, AC_ASSOC_SINGLE), "AC102") == 0);
  CHECK(strcmp(judge(0x5000, b, 4 * MIB + 4096, AC_ASSOC_SINGLE), "AC102") == 0);
  CHECK(strcmp(judge(0x5000, b + 4096, 0, AC_ASSOC_SINGLE), "AC102") == 0);
  CHECK(strcmp(judge(0x5000, b + 4096, 4 * MIB - 4096, AC_ASSOC_SINGLE), "AC102") == 0);
  CHECK(strcmp(judge(0x5000, b, 4 * MIB, AC_ASSOC_SINGLE), "") == 0);
  CHECK(strcmp(judge(0x5000, b, 0, AC_ASSOC_SINGLE), "") == 0);
  CHECK(strcmp(judge(0x5000, b, 0, AC_ASSOC_HOST), "") == 0);
  CHECK(strcmp(judge(0x5000, small->base, 100, AC_ASSOC_SINGLE), "") == 0);
  CHECK(strcmp(judge(0x5000, small->base, 4096, AC_ASSOC_SINGLE), "AC102") == 0);
}

static void test_flags(void) {
  static const unsigned bad[] = {0, 3, 5, 6, 7, 8, 16};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    struct ac_attach_call c = call(0x5000, managed->base, 0, bad[i]);
    CHECK(strcmp(rules_of(&c), "AC105") == 0);
    CHECK(ac_attach_guard(&c) == (bad[i] == 0 ? AC_GUARD_REFUSE_INVALID_VALUE : AC_GUARD_FORWARD));
  }
}

static void test_streams(void) {
  struct ac_attach_call c = call(0x1234, managed->base, 0, AC_ASSOC_SINGLE);
  CHECK(strcmp(rules_of(&c), "AC106") == 0);
  CHECK(ac_attach_guard(&c) == AC_GUARD_REFUSE_INVALID_HANDLE);
  struct ac_stream *gone = ac_model_stream_created(m, 0x6000, 0, 0);
  ac_model_stream_destroyed(m, 0x6000);
  c = call(0x6000, managed->base, 0, AC_ASSOC_SINGLE);
  CHECK(c.stream.stream == gone);
  CHECK(strcmp(rules_of(&c), "AC106") == 0);
  CHECK(ac_attach_guard(&c) == AC_GUARD_REFUSE_INVALID_HANDLE);
  /* A mapped handle the model never saw: not judged, not refused. */
  c = call(0x7000, managed->base, 0, AC_ASSOC_SINGLE);
  c.stream = ac_model_resolve_stream(m, 0x7000, false, 1);
  CHECK(strcmp(rules_of(&c), "") == 0);
  CHECK(ac_attach_guard(&c) == AC_GUARD_FORWARD);
  c = call(0x5000, managed->base, 0, AC_ASSOC_SINGLE);
  CHECK(ac_attach_guard(&c) == AC_GUARD_FORWARD);
}

static void test_memory_kinds(void) {
  struct ac_attach_call c = call(0x5000, 0x1000, 0, AC_ASSOC_SINGLE);
  const enum ac_mem_kind unsupported[] = {AC_MEM_DEVICE, AC_MEM_PINNED, AC_MEM_PAGEABLE};
  for (size_t i = 0; i < 3; i++) {
    c.mem_kind = unsupported[i];
    c.args.length = 0;
    CHECK(strcmp(rules_of(&c), "AC104") == 0);
    c.args.length = 4096;
    CHECK(strcmp(rules_of(&c), "AC104") == 0);
  }
  c = call(0x5000, 0, 0, AC_ASSOC_SINGLE);
  CHECK(strcmp(rules_of(&c), "AC104") == 0);
  /* With pageable memory access, only length 0 is wrong. */
  c = call(0x5000, 0x1000, 0, AC_ASSOC_SINGLE);
  c.pageable_memory_access = true;
  CHECK(strcmp(rules_of(&c), "AC103") == 0);
  c.args.length = 8192;
  CHECK(strcmp(rules_of(&c), "") == 0);
}

static void test_capture(void) {
  s->capturing = true;
  CHECK(strcmp(judge(0x5000, managed->base, 0, AC_ASSOC_SINGLE), "AC107") == 0);
  CHECK(strcmp(judge(0x5000, managed->base, 0, AC_ASSOC_GLOBAL), "AC107") == 0);
  s->capturing = false;
  CHECK(strcmp(judge(0x5000, managed->base, 0, AC_ASSOC_GLOBAL), "") == 0);
}

static void test_several_rules_at_once(void) {
  CHECK(strcmp(judge(0x1234, managed->base + 8, 0, 0), "AC105 AC106 AC102") == 0);
  CHECK(strcmp(judge(0x1, 0, 0, AC_ASSOC_SINGLE), "AC101 AC104") == 0);
}

static void test_catalogue(void) {
  CHECK(ac_rule_by_id("AC101") == AC_RULE_AC101);
  CHECK(ac_rule_by_id("AC999") == AC_RULE_COUNT);
  for (int i = 0; i < AC_RULE_COUNT; i++) {
    const struct ac_rule_info *r = ac_rule_info((enum ac_rule_id)i);
    CHECK(r && r->id[0] == 'A' && r->name[0] && r->summary[0] && r->fix[0]);
  }
}

int main(void) {
  setup();
  test_null_stream();
  test_ranges();
  test_flags();
  test_streams();
  test_memory_kinds();
  test_capture();
  test_several_rules_at_once();
  test_catalogue();
  ac_model_destroy(m);
  return TEST_SUMMARY("test_rules_attach");
}
