/* finding_key.c - what makes two findings the same finding: the rule, the
 * problem (which operand of the work), and the stack - by return address
 * within one process (ac_finding_key: a repeat is counted, not written
 * again), by module and offset across processes (the portable key the
 * reports merge by). */
#include <inttypes.h>
#include <stdio.h>

#include "report.h"

/* Which of the work's operands a finding is about: two wrong buffers given
 * to one launch are two problems, each its own finding; the same argument
 * wrong again is the same one. Stable from run to run (no addresses). */
static void problem_of(const struct ac_finding *f, char *buf, size_t len) {
  static const char *const vias[] = {"argument", "variable", "destination", "source", "address"};
  const struct ac_work_facts *w = &f->work;
  buf[0] = 0;
  if (f->kind == AC_KIND_LAUNCH && w->via == AC_VIA_ARGUMENT)
    snprintf(buf, len, "%s %d+%zu", w->kernel, w->param, w->offset);
  else if (f->kind == AC_KIND_LAUNCH)
    snprintf(buf, len, "%s variable %s", w->kernel, f->alloc.name);
  else if (f->kind == AC_KIND_COPY && (unsigned)w->via < sizeof vias / sizeof vias[0])
    snprintf(buf, len, "%s", vias[w->via]);
}

uint64_t ac_finding_key(const struct ac_finding *f) {
  char problem[256];
  problem_of(f, problem, sizeof problem);
  uint64_t h = ac_hash_text(AC_HASH_START, problem);
  h = ac_hash_bytes(h, &f->rule, sizeof f->rule);
  return ac_hash_bytes(h, f->stack.pc, (size_t)f->stack.depth * sizeof f->stack.pc[0]);
}

/* The key the reports use: the same finding from the same code in another
 * process - a fork, or another rank loaded at other addresses - has the same
 * key, so the merge makes one finding of them. */
void ac_finding_portable_key(const json_t *record, const struct ac_finding *f, char out[17]) {
  char problem[256];
  problem_of(f, problem, sizeof problem);
  uint64_t h = ac_hash_text(AC_HASH_START, ac_json_str(record, "rule"));
  if (problem[0]) h = ac_hash_text(ac_hash_text(h, "|"), problem);
  size_t i;
  const json_t *frame;
  json_array_foreach(json_object_get(record, "stack"), i, frame) {
    h = ac_hash_text(ac_hash_text(ac_hash_text(h, "|"), ac_json_str(frame, "module")), "+");
    h = ac_hash_text(h, ac_json_str(frame, "offset"));
  }
  snprintf(out, 17, "%016" PRIx64, h);
}
