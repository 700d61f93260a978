/* json_finding.c - a finding as a JSON object; the schema is
 * docs/report-schema.md. Stacks keep raw addresses with (module, offset), so
 * a report can be symbolised again elsewhere. */
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

json_t *ac_json_stack(const struct ac_stack *s) {
  json_t *frames = json_array();
  for (int i = 0; i < s->depth; i++) {
    struct ac_frame fr;
    ac_symbolize(s->pc[i], &fr);
    json_t *o = json_pack("{s:o, s:o, s:o}", "pc", hex((uintptr_t)s->pc[i]), "module",
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
    json_array_append_new(frames, o);
  }
  return frames;
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

static json_t *allocation(const struct ac_alloc_snapshot *a) {
  if (!a->present) return json_null();
  json_t *o = json_pack("{s:o, s:I, s:s, s:s}", "base", hex(a->base), "size", (json_int_t)a->size,
                        "kind", ac_mem_kind_name(a->kind), "association", ac_assoc_name(a->assoc));
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

static json_t *busy(const struct ac_busy_facts *b) {
  if (!b->present) return json_null();
  return json_pack("{s:I, s:o, s:s, s:b, s:I, s:o}", "stream", (json_int_t)b->stream_serial,
                   "handle", hex(b->stream_handle), "kind", ac_stream_kind_name(b->stream_kind),
                   "live", b->stream_live, "outstanding", (json_int_t)b->outstanding, "first",
                   origin(&b->origin));
}

static json_t *access(const struct ac_access_facts *a) {
  static const char *const kinds[] = {"unknown", "read", "write"};
  if (!a->via) return json_null();
  return json_pack("{s:o, s:I, s:s, s:s}", "address", hex(a->addr), "length", (json_int_t)a->length,
                   "kind", kinds[a->kind], "via", a->via);
}

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
  if (!h) return json_null();
  json_t *streams = json_array();
  if (h->call.present) json_array_append_new(streams, history(&h->call, "call"));
  if (h->busy.present) json_array_append_new(streams, history(&h->busy, "busy"));
  json_t *o = json_pack("{s:I, s:i, s:o, s:o}", "tick", (json_int_t)h->tick, "limit",
                        AC_HISTORY_MAX, "streams", streams, "host", history(&h->host, NULL));
  if (h->alloc_tick)
    json_object_set_new(o, "allocation_tick", json_integer((json_int_t)h->alloc_tick));
  return o;
}

json_t *ac_json_finding(const struct ac_finding *f) {
  const struct ac_rule_info *r = ac_rule_info(f->rule);
  json_t *call = json_pack("{s:o, s:o, s:I, s:I}", "stream", stream_handle(f->args.stream), "dptr",
                           hex(f->args.dptr), "length", (json_int_t)f->args.length, "flags",
                           (json_int_t)f->args.flags);
  json_t *stream = json_pack("{s:s}", "kind", ac_stream_kind_name(f->stream_kind));
  if (f->stream_serial)
    json_object_set_new(stream, "serial", json_integer((json_int_t)f->stream_serial));
  static const char *const outcomes[] = {"returned", "guarded", "crashes"};
  json_t *o = json_pack(
      "{s:s, s:s, s:s, s:s, s:s, s:s, s:o, s:o, s:s, s:o, s:{s:s, s:i, s:s, s:b},"
      " s:I, s:o, s:o, s:o}",
      "rule", r->id, "name", r->name, "severity", ac_severity_name(r->severity), "message",
      r->summary, "fix", r->fix, "api", f->api, "call", call, "stream", stream, "memory_kind",
      ac_mem_kind_name(f->mem_kind), "allocation", allocation(&f->alloc), "driver", "outcome",
      outcomes[f->outcome], "result", f->driver_result, "name", f->driver_result_name, "guarded",
      f->outcome == AC_DRIVER_GUARDED, "thread", (json_int_t)f->thread, "stack",
      ac_json_stack(&f->stack), "access", access(&f->access), "busy", busy(&f->busy));
  if (o && f->history) json_object_set_new(o, "timeline", timeline(f->history));
  return o;
}
