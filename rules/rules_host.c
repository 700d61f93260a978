/* rules_host.c - judging CPU access (AC201, AC202), re-attaching (AC401) and
 * destroying a stream with memory attached to it (AC402), from the ordering
 * model (model_order.c). */
#include <stdlib.h>
#include <string.h>
#include <utlist.h>

#include "rules_host.h"
#include "stack_depot.h"

bool ac_host_may_touch(struct ac_model *m, const struct ac_alloc *a,
                       const struct ac_stream *callback_stream, struct ac_stream **blocker,
                       enum ac_rule_id *rule) {
  if (!ac_alloc_is_managed(a)) return true;
  enum ac_assoc assoc[2];
  struct ac_stream *stream[2];
  int n = ac_order_binding_assocs(m, a, assoc, stream);
  /* A single attachment names the stream at fault; judge those first. */
  for (int i = 0; i < n; i++) {
    if (assoc[i] != AC_ASSOC_SINGLE || !stream[i] ||
        ac_order_idle_inside(m, stream[i], callback_stream) || !ac_order_stream_busy(m, stream[i]))
      continue;
    *blocker = stream[i];
    *rule = AC_RULE_AC201;
    return false;
  }
  for (int i = 0; i < n; i++) {
    struct ac_stream *busy = NULL;
    if (assoc[i] == AC_ASSOC_GLOBAL)
      busy = ac_model_reach_semantics(m) ? ac_order_busy_reaching(m, a, callback_stream)
                                         : ac_order_any_busy(m, callback_stream);
    if (!busy) continue;
    *blocker = busy;
    *rule = AC_RULE_AC202;
    return false;
  }
  return true;
}

void ac_busy_facts_fill(struct ac_busy_facts *b, const struct ac_model *m,
                        const struct ac_stream *s) {
  memset(b, 0, sizeof *b);
  if (!s) return;
  b->present = true;
  b->stream_serial = s->serial;
  b->stream_handle = s->handle;
  b->stream_kind = s->kind;
  b->stream_live = s->live;
  b->outstanding = ac_order_outstanding(m, s);
  ac_origin_expand(&s->busy_origin, &b->origin);
  b->tick = ac_history_tick(m);
}

static void finding_for(struct ac_finding *f, enum ac_rule_id rule, enum ac_finding_kind kind,
                        const struct ac_alloc *a, const struct ac_model *m,
                        const struct ac_stream *busy) {
  memset(f, 0, sizeof *f);
  f->rule = rule;
  f->kind = kind;
  f->tick = ac_history_tick(m);
  f->mem_kind = a->kind;
  ac_alloc_snapshot_fill(&f->alloc, a);
  ac_busy_facts_fill(&f->busy, m, busy);
}

bool ac_judge_host_access(struct ac_model *m, const struct ac_alloc *a,
                          const struct ac_host_access *access, struct ac_finding *out) {
  struct ac_stream *busy = NULL;
  enum ac_rule_id rule;
  if (ac_host_may_touch(m, a, access->callback_stream, &busy, &rule)) return false;
  finding_for(out, rule, AC_KIND_HOST_ACCESS, a, m, busy);
  out->api = access->facts.via;
  out->access = access->facts;
  out->thread = access->thread;
  return true;
}

bool ac_judge_attach_order(struct ac_model *m, const struct ac_alloc *a, struct ac_stream *t,
                           struct ac_finding *out) {
  struct ac_stream *s = a->assoc == AC_ASSOC_SINGLE ? ac_alloc_assoc_stream(a) : NULL;
  if (!s || s == t || !ac_alloc_is_managed(a)) return false;
  ac_order_prepare(m, t);
  /* The work that may use the memory under its old association: what s runs
   * after the attach that gave it to s. The attach itself touches nothing. */
  uint64_t ordered = ac_clock_get(&t->waited, s->serial);
  if (ac_alloc_attach_stream(a) == s && a->more->attach_seq > ordered)
    ordered = a->more->attach_seq;
  if (s->seq <= ordered || !ac_order_stream_busy(m, s)) return false;
  finding_for(out, AC_RULE_AC401, AC_KIND_ATTACH, a, m, s);
  return true;
}

static int by_base(const void *x, const void *y) {
  const struct ac_alloc *a = *(struct ac_alloc *const *)x, *b = *(struct ac_alloc *const *)y;
  return (a->base > b->base) - (a->base < b->base);
}

/* The allocations single-attached to s - its members, never every
 * allocation - by address. */
int ac_judge_stream_destroyed(struct ac_model *m, struct ac_stream *s,
                              void (*emit)(struct ac_finding *, void *), void *ctx) {
  size_t n = 0;
  struct ac_alloc_more *x;
  DL_FOREACH2(s->members, x, member_next) n++;
  struct ac_alloc **members = n ? malloc(n * sizeof *members) : NULL;
  if (!members) return 0;
  n = 0;
  DL_FOREACH2(s->members, x, member_next) members[n++] = x->alloc;
  qsort(members, n, sizeof *members, by_base);
  for (size_t i = 0; i < n; i++) {
    struct ac_alloc *a = members[i];
    struct ac_finding f;
    finding_for(&f, AC_RULE_AC402, AC_KIND_STREAM_DESTROY, a, m, s);
    f.stream = (struct ac_stream_facts){AC_STREAM_DESTROYED, s->serial, s->handle};
    enum ac_assoc fallback = a->default_flags == AC_ASSOC_HOST ? AC_ASSOC_HOST : AC_ASSOC_GLOBAL;
    /* The revert is an "attach" that completes with the stream's last operation. */
    ac_order_attach(m, a, fallback, s, s->seq, NULL);
    emit(&f, ctx);
  }
  free(members);
  return (int)n;
}
