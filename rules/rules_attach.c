/* rules_attach.c - judging one cuStreamAttachMemAsync call: AC101-AC107.
 *
 * Each rule is a predicate over the facts the shim gathered; none of them
 * looks at the driver's answer, because the driver accepts some illegal calls
 * (single-attach to CU_STREAM_LEGACY) and crashes on others.
 */
#include <stdio.h>
#include <string.h>

#include "rules_attach.h"
#include "stack_depot.h"

static bool flags_valid(unsigned flags) {
  return flags == AC_ASSOC_GLOBAL || flags == AC_ASSOC_HOST || flags == AC_ASSOC_SINGLE;
}

static bool stream_is_null_stream(enum ac_stream_kind kind) {
  return kind == AC_STREAM_NULL_LEGACY || kind == AC_STREAM_LEGACY;
}

static bool stream_is_dead(enum ac_stream_kind kind) {
  return kind == AC_STREAM_DESTROYED || kind == AC_STREAM_NEVER_CREATED;
}

static bool mem_is_managed(enum ac_mem_kind kind) {
  return kind == AC_MEM_MANAGED || kind == AC_MEM_MANAGED_VAR;
}

static bool range_is_partial(const struct ac_attach_call *c) {
  const struct ac_alloc *a = c->alloc;
  if (!a) return false;
  return c->args.dptr != a->base || (c->args.length != 0 && c->args.length != a->size);
}

static bool mem_is_unsupported(const struct ac_attach_call *c) {
  switch (c->mem_kind) {
  case AC_MEM_MANAGED:
  case AC_MEM_MANAGED_VAR:
    return false;
  case AC_MEM_PAGEABLE:
    return !c->pageable_memory_access;
  case AC_MEM_DEVICE:
  case AC_MEM_PINNED:
  case AC_MEM_NULL:
    return true;
  }
  return true;
}

void ac_alloc_snapshot_fill(struct ac_alloc_snapshot *snap, const struct ac_alloc *a) {
  memset(snap, 0, sizeof *snap);
  if (!a) return;
  snap->present = true;
  snap->base = a->base;
  snap->size = a->size;
  snap->kind = a->kind;
  snap->assoc = a->assoc;
  const struct ac_stream *s = ac_alloc_assoc_stream(a);
  if (a->assoc == AC_ASSOC_SINGLE && s) {
    snap->assoc_stream_serial = s->serial;
    snap->assoc_stream_handle = s->handle;
  }
  snprintf(snap->name, sizeof snap->name, "%s", ac_alloc_name(a));
  snap->origin_api = ac_alloc_origin_api(a);
  snap->origin_thread = a->origin_thread;
  ac_stack_depot_get(a->origin_stack, &snap->origin_stack);
  if (a->more) ac_origin_expand(&a->more->attach_origin, &snap->attach_origin);
}

struct ac_stream_facts ac_stream_facts_of(const struct ac_stream_ref *ref, uintptr_t handle) {
  return (struct ac_stream_facts){ref->kind, ref->stream ? ref->stream->serial : 0, handle};
}

static void add(const struct ac_attach_call *c, enum ac_rule_id rule, struct ac_finding *out,
                int *n) {
  struct ac_finding *f = &out[(*n)++];
  memset(f, 0, sizeof *f);
  f->rule = rule;
  f->kind = AC_KIND_ATTACH;
  f->api = c->api;
  f->args = c->args;
  f->stream = ac_stream_facts_of(&c->stream, c->args.stream);
  f->mem_kind = c->mem_kind;
  f->thread = c->thread;
  ac_alloc_snapshot_fill(&f->alloc, c->alloc);
}

int ac_judge_attach(const struct ac_attach_call *c, struct ac_finding *out) {
  int n = 0;
  if (!flags_valid(c->args.flags)) add(c, AC_RULE_AC105, out, &n);
  if (stream_is_dead(c->stream.kind)) add(c, AC_RULE_AC106, out, &n);
  if (c->args.flags == AC_ASSOC_SINGLE && stream_is_null_stream(c->stream.kind))
    add(c, AC_RULE_AC101, out, &n);
  if (c->stream.stream && c->stream.stream->capturing) add(c, AC_RULE_AC107, out, &n);
  /* One memory rule at most: they describe the same pointer. With AC105 and
   * AC101 exclusive, a call makes at most AC_ATTACH_MAX_FINDINGS findings. */
  if (mem_is_managed(c->mem_kind) && range_is_partial(c))
    add(c, AC_RULE_AC102, out, &n);
  else if (mem_is_unsupported(c))
    add(c, AC_RULE_AC104, out, &n);
  else if (c->mem_kind == AC_MEM_PAGEABLE && c->args.length == 0)
    add(c, AC_RULE_AC103, out, &n);
  return n;
}

enum ac_guard_verdict ac_attach_guard(const struct ac_attach_call *c) {
  if (c->args.flags == 0) return AC_GUARD_REFUSE_INVALID_VALUE;
  if (stream_is_dead(c->stream.kind)) return AC_GUARD_REFUSE_INVALID_HANDLE;
  return AC_GUARD_FORWARD;
}
