/* json_finding.c - a finding as a JSON object; the schema is
 * docs/report-schema.md. Every kind of finding carries the fields of its own
 * kind and no others (an attach its call and the driver's answer, a launch
 * its kernel and argument, ...): a field that means nothing for a kind is
 * left out, never zero-filled. Stacks keep raw addresses with (module,
 * offset), so a report can be symbolised again elsewhere. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report.h"

json_t *ac_json_text(const char *s) {
  if (!s) return json_null();
  json_t *j = json_string(s);
  if (j) return j;
  /* Not UTF-8 (a module path, a variable name): keep ASCII, mark the rest. */
  size_t n = strlen(s);
  char *copy = malloc(n + 1);
  if (!copy) return json_null();
  for (size_t i = 0; i <= n; i++)
    copy[i] = (unsigned char)s[i] < 0x80 ? s[i] : '?';
  j = json_string(copy);
  free(copy);
  return j ? j : json_null();
}

const char *ac_json_str(const json_t *object, const char *key) {
  const char *s = json_string_value(json_object_get(object, key));
  return s ? s : "";
}

static json_t *hex(uintptr_t v) {
  char buf[32];
  snprintf(buf, sizeof buf, "0x%" PRIxPTR, v);
  return json_string(buf);
}

static json_t *frame(const void *pc, bool with_code) {
  struct ac_frame fr;
  ac_symbolize(pc, &fr);
  json_t *o = json_pack("{s:o, s:o, s:o}", "pc", hex((uintptr_t)pc), "module",
                        ac_json_text(fr.module), "offset", hex(fr.offset));
  if (fr.function) {
    json_object_set_new(o, "function", ac_json_text(fr.function));
    json_object_set_new(o, "function_offset", hex(fr.function_offset));
  }
  if (fr.file) {
    json_object_set_new(o, "file", ac_json_text(fr.file));
    json_object_set_new(o, "line", json_integer(fr.line));
    if (fr.column) json_object_set_new(o, "column", json_integer(fr.column));
  }
  char code[AC_SOURCE_LINE_MAX];
  if (with_code && fr.source_path && ac_frame_is_programs_own(o) &&
      ac_source_line(fr.source_path, fr.line, code, sizeof code))
    json_object_set_new(o, "code", ac_json_text(code));
  return o;
}

/* Frames; with_code: the program's own frames carry their source line's text
 * (SARIF's fingerprints are made of it). */
static json_t *stack_frames(const struct ac_stack *s, bool with_code) {
  json_t *frames = json_array();
  for (int i = 0; i < s->depth; i++)
    json_array_append_new(frames, frame(s->pc[i], with_code));
  return frames;
}

json_t *ac_json_stack(const struct ac_stack *s) {
  return stack_frames(s, false);
}

static json_t *stream_handle(uintptr_t h) {
  if (h == 0) return json_string("NULL");
  if (h == 1) return json_string("CU_STREAM_LEGACY");
  if (h == 2) return json_string("CU_STREAM_PER_THREAD");
  return hex(h);
}

static json_t *origin(const struct ac_op_origin *o) {
  if (!o->api) return json_null();
  return json_pack("{s:s, s:I, s:o}", "api", o->api, "thread", (json_int_t)o->thread, "stack",
                   ac_json_stack(&o->stack));
}

/* The allocation holding addr, as it was; offset: where addr lies in it. */
static json_t *allocation(const struct ac_alloc_snapshot *a, uintptr_t addr) {
  json_t *o = json_pack("{s:o, s:I, s:s}", "base", hex(a->base), "size", (json_int_t)a->size,
                        "kind", ac_mem_kind_name(a->kind));
  if (a->kind == AC_MEM_MANAGED || a->kind == AC_MEM_MANAGED_VAR) /* only those are attached */
    json_object_set_new(o, "association", json_string(ac_assoc_name(a->assoc)));
  if (addr >= a->base && addr - a->base < a->size)
    json_object_set_new(o, "offset", json_integer((json_int_t)(addr - a->base)));
  if (a->assoc == AC_ASSOC_SINGLE)
    json_object_set_new(o, "attached_stream", json_integer((json_int_t)a->assoc_stream_serial));
  if (a->name[0]) json_object_set_new(o, "name", ac_json_text(a->name));
  if (a->attach_origin.api) json_object_set_new(o, "attached", origin(&a->attach_origin));
  if (a->origin_api)
    json_object_set_new(o, "origin",
                        json_pack("{s:s, s:I, s:o}", "api", a->origin_api, "thread",
                                  (json_int_t)a->origin_thread, "stack",
                                  ac_json_stack(&a->origin_stack)));
  return o;
}

static void set_allocation(json_t *o, const struct ac_finding *f, uintptr_t addr) {
  if (f->alloc.present) json_object_set_new(o, "allocation", allocation(&f->alloc, addr));
}

/* The stream with outstanding work (a CPU access, a re-attach, a destroy). */
static json_t *busy(const struct ac_busy_facts *b) {
  json_t *o =
      json_pack("{s:I, s:o, s:s, s:b, s:I}", "stream", (json_int_t)b->stream_serial, "handle",
                stream_handle(b->stream_handle), "kind", ac_stream_kind_name(b->stream_kind),
                "live", b->stream_live, "outstanding", (json_int_t)b->outstanding);
  if (b->origin.api) json_object_set_new(o, "first", origin(&b->origin));
  return o;
}

/* The stream the memory belongs to (AC301): whose work may use it. */
static json_t *owner(const struct ac_busy_facts *b) {
  return json_pack("{s:I, s:o, s:s, s:b}", "stream", (json_int_t)b->stream_serial, "handle",
                   stream_handle(b->stream_handle), "kind", ac_stream_kind_name(b->stream_kind),
                   "live", b->stream_live);
}

static json_t *stream(const struct ac_stream_facts *s) {
  json_t *o = json_pack("{s:s, s:o}", "kind", ac_stream_kind_name(s->kind), "handle",
                        stream_handle(s->handle));
  if (s->serial) json_object_set_new(o, "serial", json_integer((json_int_t)s->serial));
  return o;
}

/* ---- the facts of each kind ---- */

static void attach_facts(json_t *o, const struct ac_finding *f) {
  static const char *const outcomes[] = {"returned", "guarded", "crashes"};
  json_object_set_new(o, "api", json_string(f->api));
  json_object_set_new(o, "call",
                      json_pack("{s:o, s:o, s:I, s:I}", "stream", stream_handle(f->args.stream),
                                "dptr", hex(f->args.dptr), "length", (json_int_t)f->args.length,
                                "flags", (json_int_t)f->args.flags));
  json_object_set_new(o, "stream", stream(&f->stream));
  json_object_set_new(o, "memory_kind", json_string(ac_mem_kind_name(f->mem_kind)));
  set_allocation(o, f, f->args.dptr);
  json_t *driver = json_pack("{s:s, s:b}", "outcome", outcomes[f->outcome], "guarded",
                             f->outcome == AC_DRIVER_GUARDED);
  if (f->outcome != AC_DRIVER_CRASHES) { /* reported before the driver answered */
    json_object_set_new(driver, "result", json_integer(f->driver_result));
    json_object_set_new(driver, "name", json_string(f->driver_result_name));
  }
  json_object_set_new(o, "driver", driver);
  if (f->busy.present) json_object_set_new(o, "busy", busy(&f->busy));
  if (f->repair)
    json_object_set_new(o, "repair",
                        json_string("the attach was ordered after the busy stream's work (an "
                                    "event recorded there, waited on by this stream)"));
}

static json_t *dims(const unsigned d[3]) {
  return json_pack("[I, I, I]", (json_int_t)d[0], (json_int_t)d[1], (json_int_t)d[2]);
}

/* The argument (or __managed__ variable) through which a kernel got the memory. */
static json_t *argument(const struct ac_finding *f) {
  const struct ac_work_facts *w = &f->work;
  if (w->via == AC_VIA_MANAGED_VARIABLE)
    return json_pack("{s:s, s:o}", "kind", "__managed__ variable", "value", hex(w->addr));
  return json_pack("{s:s, s:i, s:I, s:o}", "kind", "parameter", "index", w->param, "offset",
                   (json_int_t)w->offset, "value", hex(w->addr));
}

static void launch_facts(json_t *o, const struct ac_finding *f) {
  const struct ac_work_facts *w = &f->work;
  json_object_set_new(o, "api", json_string(f->api));
  json_object_set_new(o, "stream", stream(&f->stream));
  json_t *kernel = json_object();
  if (w->kernel[0]) json_object_set_new(kernel, "name", ac_json_text(w->kernel));
  if (w->dims.grid[0]) {
    json_object_set_new(kernel, "grid", dims(w->dims.grid));
    json_object_set_new(kernel, "block", dims(w->dims.block));
    json_object_set_new(kernel, "shared_bytes", json_integer((json_int_t)w->dims.shared_bytes));
  }
  if (w->graph) json_object_set_new(kernel, "graph_node", json_true());
  json_object_set_new(o, "kernel", kernel);
  json_object_set_new(o, "argument", argument(f));
  set_allocation(o, f, w->addr);
  if (f->busy.present) json_object_set_new(o, "owner", owner(&f->busy));
  if (f->repair)
    json_object_set_new(o, "repair",
                        json_string("the launch was ordered after the work of the stream the "
                                    "memory belongs to (an event recorded there, waited on by "
                                    "this stream)"));
}

static json_t *operand(const char *role, uintptr_t addr, enum ac_mem_kind kind, bool at_fault) {
  json_t *o = json_pack("{s:s, s:o, s:s}", "role", role, "address", hex(addr), "memory",
                        ac_mem_kind_name(kind));
  if (at_fault) json_object_set_new(o, "at_fault", json_true());
  return o;
}

const char *ac_work_operation_name(enum ac_work_operation op) {
  static const char *const names[] = {"kernel", "copy", "set", "memory operation"};
  return (unsigned)op < sizeof names / sizeof names[0] ? names[op] : "?";
}

static void copy_facts(json_t *o, const struct ac_finding *f) {
  const struct ac_work_facts *w = &f->work;
  json_object_set_new(o, "api", json_string(f->api));
  json_object_set_new(o, "stream", stream(&f->stream));
  json_object_set_new(o, "operation", json_string(ac_work_operation_name(w->operation)));
  if (w->graph) json_object_set_new(o, "graph_node", json_true());
  json_t *operands = json_array();
  const char *role = w->via == AC_VIA_ADDRESS ? "address" : "destination";
  if (w->dst)
    json_array_append_new(operands, operand(role, w->dst, w->dst_kind, w->via != AC_VIA_SOURCE));
  if (w->src)
    json_array_append_new(operands,
                          operand("source", w->src, w->src_kind, w->via == AC_VIA_SOURCE));
  json_object_set_new(o, "operands", operands);
  set_allocation(o, f, w->addr);
  if (f->busy.present) json_object_set_new(o, "owner", owner(&f->busy));
}

static void destroy_facts(json_t *o, const struct ac_finding *f) {
  json_object_set_new(o, "api", json_string(f->api));
  json_object_set_new(o, "stream", stream(&f->stream));
  set_allocation(o, f, f->alloc.base);
  if (f->busy.present && f->busy.outstanding) json_object_set_new(o, "busy", busy(&f->busy));
}

static void host_access_facts(json_t *o, const struct ac_finding *f) {
  static const char *const kinds[] = {"unknown", "read", "write"};
  const struct ac_access_facts *a = &f->access;
  json_t *access = json_pack("{s:o, s:s, s:s}", "address", hex(a->addr), "kind", kinds[a->kind],
                             "via", a->via ? a->via : "?");
  if (a->length) json_object_set_new(access, "length", json_integer((json_int_t)a->length));
  json_object_set_new(o, "access", access);
  set_allocation(o, f, a->addr);
  if (f->busy.present) json_object_set_new(o, "busy", busy(&f->busy));
  if (f->repair)
    json_object_set_new(o, "repair",
                        json_string("the access was held for the busy work to complete"));
}

static void (*const kind_facts[AC_KIND_COUNT])(json_t *, const struct ac_finding *) = {
    [AC_KIND_ATTACH] = attach_facts,
    [AC_KIND_LAUNCH] = launch_facts,
    [AC_KIND_COPY] = copy_facts,
    [AC_KIND_STREAM_DESTROY] = destroy_facts,
    [AC_KIND_HOST_ACCESS] = host_access_facts,
};

/* ---- the timeline ---- */

/* An advice by cuda.h's name, or its number when this build knows none. */
static json_t *advice(unsigned value) {
  const char *name = ac_advice_name(value);
  return name ? json_string(name) : json_integer((json_int_t)value);
}

static json_t *operation(const struct ac_op_record *r) {
  json_t *o = json_pack("{s:I, s:s, s:I}", "tick", (json_int_t)r->tick, "kind",
                        ac_op_kind_name((enum ac_op_kind)r->kind), "thread", (json_int_t)r->thread);
  if (r->seq) json_object_set_new(o, "seq", json_integer((json_int_t)r->seq));
  if (r->api) json_object_set_new(o, "api", json_string(r->api));
  if (r->kernel && *r->kernel) json_object_set_new(o, "kernel", ac_json_text(r->kernel));
  if (r->alloc_serial)
    json_object_set_new(o, "allocation", json_integer((json_int_t)r->alloc_serial));
  if (r->addr) json_object_set_new(o, "address", hex(r->addr));
  if (r->kind == AC_OP_ATTACH) json_object_set_new(o, "flags", json_integer((json_int_t)r->flags));
  if (r->kind == AC_OP_ADVICE) json_object_set_new(o, "advice", advice(r->flags));
  return o;
}

static json_t *history(const struct ac_history *h, const char *role) {
  json_t *ops = json_array();
  for (int i = 0; i < h->count; i++)
    json_array_append_new(ops, operation(&h->op[i]));
  json_t *o = json_pack("{s:I, s:i, s:o}", "recorded", (json_int_t)h->total, "shown", h->count,
                        "operations", ops);
  if (!role) return o;
  json_object_set_new(o, "role", json_string(role));
  json_object_set_new(o, "stream", json_integer((json_int_t)h->stream_serial));
  json_object_set_new(o, "kind", json_string(ac_stream_kind_name(h->stream_kind)));
  json_object_set_new(o, "handle", stream_handle(h->stream_handle));
  if (h->owner_thread) json_object_set_new(o, "thread", json_integer((json_int_t)h->owner_thread));
  if (h->created.api) json_object_set_new(o, "created", origin(&h->created));
  return o;
}

/* The operations around the finding, for the HTML report's timeline. */
static json_t *timeline(const struct ac_finding_history *h) {
  json_t *streams = json_array();
  if (h->call.present) json_array_append_new(streams, history(&h->call, "call"));
  if (h->busy.present) json_array_append_new(streams, history(&h->busy, "busy"));
  json_t *o = json_pack("{s:I, s:i, s:o, s:o}", "tick", (json_int_t)h->tick, "limit",
                        AC_HISTORY_MAX, "streams", streams, "host", history(&h->host, NULL));
  if (h->alloc_tick)
    json_object_set_new(o, "allocation_tick", json_integer((json_int_t)h->alloc_tick));
  return o;
}

/* On a device with concurrent managed access, what a strict finding means there. */
static json_t *semantics(const struct ac_finding *f) {
  const struct ac_rule_info *r = ac_rule_info(f->rule);
  return json_pack("{s:s, s:s, s:b, s:s}", "judged", "strict", "device", f->semantics.device,
                   "concurrent_managed_access", 1, "on_this_device",
                   r->reach == AC_LEGAL_WITH_CMA ? "legal"
                                                 : "a race only where the busy work uses it");
}

json_t *ac_json_finding(const struct ac_finding *f) {
  const struct ac_rule_info *r = ac_rule_info(f->rule);
  json_t *o = json_pack("{s:s, s:s, s:s, s:s, s:s, s:s, s:I, s:I}", "rule", r->id, "name", r->name,
                        "severity", ac_severity_name(r->severity), "message", r->summary, "fix",
                        r->fix, "kind", ac_finding_kind_name(f->kind), "thread",
                        (json_int_t)f->thread, "tick", (json_int_t)f->tick);
  if (!o || (unsigned)f->kind >= AC_KIND_COUNT) return o;
  kind_facts[f->kind](o, f);
  json_object_set_new(o, "stack", stack_frames(&f->stack, true));
  if (f->semantics.present && r->reach != AC_WRONG_EVERYWHERE)
    json_object_set_new(o, "semantics", semantics(f));
  if (f->history) json_object_set_new(o, "timeline", timeline(f->history));
  return o;
}
