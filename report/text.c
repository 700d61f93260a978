/* text.c - a finding as a readable block, in the manner of the sanitizers,
 * made from its record (json_finding.c) so the text says what the JSON, SARIF
 * and HTML reports say, and nothing a finding's kind does not have: an attach
 * shows its call and the driver's answer, a launch its kernel and argument, a
 * copy its operands, a stream's destruction the stream, a CPU access the
 * access; then the memory, the other side (the busy stream, or the stream the
 * memory belongs to), the stack and the fix. The block ends with one line
 * FILE:LINE:COL: SEVERITY: RULE NAME in FUNCTION, as compilers write, for
 * editors' problem matchers, grep and CI logs (in the log file too). */
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "report.h"

/* Where the lines go, and what each starts with. */
struct out {
  FILE *f;
  const char *prefix;
};

static void __attribute__((format(printf, 2, 3))) line(struct out *o, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fputs(o->prefix, o->f);
  vfprintf(o->f, fmt, ap);
  fputc('\n', o->f);
  va_end(ap);
}

static const char *str(const json_t *o, const char *key) {
  return ac_json_str(o, key);
}

static long long num(const json_t *o, const char *key) {
  return (long long)json_integer_value(json_object_get(o, key));
}

static const char *plural(long long n) {
  return n == 1 ? "" : "s";
}

static const char *base_name(const char *path) {
  const char *slash = strrchr(path, '/');
  return slash ? slash + 1 : path;
}

static void write_stack(struct out *o, const json_t *frames) {
  size_t i;
  const json_t *fr;
  char where[700];
  json_array_foreach(frames, i, fr) {
    int n = snprintf(where, sizeof where, "#%zu %s", i, str(fr, "pc"));
    if (json_object_get(fr, "function"))
      n += snprintf(where + n, sizeof where - (size_t)n, " in %s+%s", str(fr, "function"),
                    str(fr, "function_offset"));
    if (json_object_get(fr, "file") && n < (int)sizeof where)
      snprintf(where + n, sizeof where - (size_t)n, " %s:%lld", str(fr, "file"), num(fr, "line"));
    const char *mod = base_name(str(fr, "module"));
    line(o, "    %s (%s+%s)", where, *mod ? mod : "?", str(fr, "offset"));
  }
  if (!json_array_size(frames)) line(o, "    (no stack)");
}

/* "stream #3 (handle 0x...)", "the CU_STREAM_LEGACY (#1)", ...: a call's
 * stream (its serial in "serial"), or a busy or owning one ("stream"). */
static void stream_text(const json_t *s, char *buf, size_t len) {
  const char *kind = str(s, "kind");
  const json_t *serial = json_object_get(s, "serial");
  if (!serial) serial = json_object_get(s, "stream");
  bool made = strcmp(kind, "stream made by cuStreamCreate") == 0;
  bool destroyed =
      strcmp(kind, "destroyed stream") == 0 || json_is_false(json_object_get(s, "live"));
  if ((made || destroyed) && serial)
    snprintf(buf, len, "%sstream #%lld (handle %s)", destroyed ? "destroyed " : "",
             (long long)json_integer_value(serial), str(s, "handle"));
  else if (serial) /* "CU_STREAM_LEGACY (#1)", "the per-thread default stream (#4)" */
    snprintf(buf, len, "%s%s (#%lld)", strncmp(kind, "CU_", 3) == 0 ? "" : "the ", kind,
             (long long)json_integer_value(serial));
  else
    snprintf(buf, len, "a %s", kind);
}

/* The placement advice the host gave inside the allocation, as far back as
 * the host's timeline reaches: it changes no attachment, which a reader
 * wondering why the memory was not the CPU's may need to be told. */
static void write_advice(struct out *o, const json_t *f, const json_t *alloc) {
  unsigned long long base = strtoull(str(alloc, "base"), NULL, 16),
                     size = (unsigned long long)num(alloc, "size");
  const json_t *ops =
      json_object_get(json_object_get(json_object_get(f, "timeline"), "host"), "operations");
  size_t i;
  const json_t *op;
  json_array_foreach(ops, i, op) {
    unsigned long long at = strtoull(str(op, "address"), NULL, 16);
    if (strcmp(str(op, "kind"), "advice") != 0 || at < base || at - base >= size) continue;
    const json_t *advice = json_object_get(op, "advice");
    char name[64];
    if (json_is_string(advice))
      snprintf(name, sizeof name, "%s", json_string_value(advice));
    else
      snprintf(name, sizeof name, "%lld", (long long)json_integer_value(advice));
    line(o, "          advised %s by %s on thread %lld (advice changes no attachment)", name,
         json_object_get(op, "api") ? str(op, "api") : "cuMemAdvise", num(op, "thread"));
  }
}

/* The allocation holding addr: where it was made and last attached. */
static void write_memory(struct out *o, const json_t *f, const char *label, const char *addr) {
  const json_t *a = json_object_get(f, "allocation");
  if (!json_is_object(a)) {
    line(o, "  %s %s is %s memory", label, addr, str(f, "memory_kind"));
    return;
  }
  unsigned long long base = strtoull(str(a, "base"), NULL, 16);
  char where[64] = "", name[96] = "", assoc[96];
  if (json_object_get(a, "offset"))
    snprintf(where, sizeof where, "at offset %lld of ", num(a, "offset"));
  if (*str(a, "name")) snprintf(name, sizeof name, "'%s' ", str(a, "name"));
  assoc[0] = 0;
  if (json_object_get(a, "association"))
    snprintf(assoc, sizeof assoc, ", attached %s", str(a, "association"));
  if (json_object_get(a, "attached_stream"))
    snprintf(assoc + strlen(assoc), sizeof assoc - strlen(assoc), " to stream #%lld",
             num(a, "attached_stream"));
  line(o, "  %s %s is %sa %s allocation %s[%s, 0x%llx) of %lld bytes%s", label, addr, where,
       str(a, "kind"), name, str(a, "base"), base + (unsigned long long)num(a, "size"),
       num(a, "size"), assoc);
  const json_t *origin = json_object_get(a, "origin"), *attached = json_object_get(a, "attached");
  if (json_is_object(origin)) {
    line(o, "          made by %s on thread %lld at:", str(origin, "api"), num(origin, "thread"));
    write_stack(o, json_object_get(origin, "stack"));
  } else {
    line(o, "          made where attachcheck could not see it");
  }
  if (json_is_object(attached)) {
    line(o, "          last attached by %s on thread %lld at:", str(attached, "api"),
         num(attached, "thread"));
    write_stack(o, json_object_get(attached, "stack"));
  }
  write_advice(o, f, a);
}

static void write_busy(struct out *o, const char *label, const json_t *b) {
  if (!json_is_object(b)) return;
  char stream[160];
  stream_text(b, stream, sizeof stream);
  const json_t *first = json_object_get(b, "first");
  long long n = num(b, "outstanding");
  if (!json_is_object(first)) {
    line(o, "  %s %s has %lld operation%s the host has not seen complete", label, stream, n,
         plural(n));
    return;
  }
  line(o,
       "  %s %s has %lld operation%s the host has not seen complete; the first, %s on thread "
       "%lld, at:",
       label, stream, n, plural(n), str(first, "api"), num(first, "thread"));
  write_stack(o, json_object_get(first, "stack"));
}

/* AC301: the stream the memory belongs to, whose work alone may use it. */
static void write_owner(struct out *o, const json_t *f) {
  const json_t *owner = json_object_get(f, "owner");
  if (!json_is_object(owner)) return;
  char stream[160];
  stream_text(owner, stream, sizeof stream);
  line(o, "  owner:  the memory belongs to %s; only its work may use it", stream);
}

static const char *flags_text(long long flags, char *buf, size_t len) {
  const char *name = ac_assoc_name((unsigned)flags);
  if (strcmp(name, "invalid") == 0)
    snprintf(buf, len, "%lld /* not a valid flag */", flags);
  else
    snprintf(buf, len, "%s", name);
  return buf;
}

static void write_driver(struct out *o, const json_t *d) {
  const char *outcome = str(d, "outcome"), *name = str(d, "name");
  if (strcmp(outcome, "crashes") == 0)
    line(o, "  driver: called with --guard=off; the real driver crashes the process on this call");
  else if (strcmp(outcome, "guarded") == 0)
    line(o,
         "  driver: not called: the real driver crashes the process on this call; the guard "
         "returned %s instead (--guard=off forwards it)",
         name);
  else if (num(d, "result") == 0)
    line(o, "  driver: returned %s: the driver accepted the call silently", name);
  else
    line(o, "  driver: returned %s", name);
}

/* ---- each kind's facts ---- */

/* What --on-error repair did about the finding, if anything. */
static void write_repair(struct out *o, const json_t *f) {
  if (json_object_get(f, "repair")) line(o, "  repair: %s (--on-error repair)", str(f, "repair"));
}

static void write_attach(struct out *o, const json_t *f) {
  const json_t *call = json_object_get(f, "call");
  char flags[64], stream[160];
  line(o, "  call:   %s(hStream=%s, dptr=%s, length=%lld, flags=%s)", str(f, "api"),
       strcmp(str(call, "stream"), "NULL") == 0 ? "0 /* NULL */" : str(call, "stream"),
       str(call, "dptr"), num(call, "length"), flags_text(num(call, "flags"), flags, sizeof flags));
  stream_text(json_object_get(f, "stream"), stream, sizeof stream);
  line(o, "          on thread %lld; the stream is %s", num(f, "thread"), stream);
  write_driver(o, json_object_get(f, "driver"));
  write_busy(o, "busy:  ", json_object_get(f, "busy"));
  write_memory(o, f, "memory:", str(call, "dptr"));
  line(o, "  called at:");
  write_stack(o, json_object_get(f, "stack"));
  write_repair(o, f);
}

void ac_launch_shape(const json_t *kernel, char *buf, size_t len) {
  const json_t *g = json_object_get(kernel, "grid"), *b = json_object_get(kernel, "block");
  long long d[6];
  for (size_t i = 0; i < 3; i++) {
    d[i] = (long long)json_integer_value(json_array_get(g, i));
    d[i + 3] = (long long)json_integer_value(json_array_get(b, i));
  }
  if (!json_is_array(g))
    buf[0] = 0;
  else
    snprintf(buf, len, "<<<(%lld,%lld,%lld), (%lld,%lld,%lld)>>>", d[0], d[1], d[2], d[3], d[4],
             d[5]);
}

static void write_launch(struct out *o, const json_t *f) {
  const json_t *k = json_object_get(f, "kernel"), *arg = json_object_get(f, "argument");
  char stream[160], shape[96];
  stream_text(json_object_get(f, "stream"), stream, sizeof stream);
  ac_launch_shape(k, shape, sizeof shape);
  const char *name =
      json_object_get(k, "name") ? str(k, "name") : "a kernel not named by the driver";
  if (json_is_true(json_object_get(k, "graph_node")))
    line(o, "  launch: %s, a kernel node of the graph %s launched on thread %lld, on %s", name,
         str(f, "api"), num(f, "thread"), stream);
  else
    line(o, "  launch: %s%s by %s on thread %lld, on %s", name, shape, str(f, "api"),
         num(f, "thread"), stream);
  if (strcmp(str(arg, "kind"), "parameter") == 0)
    line(o, "  argument %lld holds %s (at byte %lld of the parameter)", num(arg, "index"),
         str(arg, "value"), num(arg, "offset"));
  else
    line(o, "  argument: none; the kernel's module has a __managed__ variable at %s",
         str(arg, "value"));
  write_memory(o, f, "memory:", str(arg, "value"));
  write_owner(o, f);
  line(o, "  launched at:");
  write_stack(o, json_object_get(f, "stack"));
  write_repair(o, f);
}

static void write_copy(struct out *o, const json_t *f) {
  char stream[160], operands[400] = "";
  const char *at_fault = "";
  stream_text(json_object_get(f, "stream"), stream, sizeof stream);
  const char *op = str(f, "operation");
  line(o, "  %s:%*s%s%s on thread %lld, on %s", op, (int)(strlen(op) < 6 ? 6 - strlen(op) : 1), "",
       str(f, "api"),
       json_is_true(json_object_get(f, "graph_node")) ? " (a node of the graph)" : "",
       num(f, "thread"), stream);
  size_t i, n = 0;
  const json_t *x;
  json_array_foreach(json_object_get(f, "operands"), i, x) {
    bool fault = json_is_true(json_object_get(x, "at_fault"));
    n += (size_t)snprintf(operands + n, n < sizeof operands ? sizeof operands - n : 0,
                          "%s%s %s (%s memory%s)", i ? ", " : "", str(x, "role"), str(x, "address"),
                          str(x, "memory"), fault ? ", at fault" : "");
    if (fault) at_fault = str(x, "address");
  }
  line(o, "  operands: %s", operands);
  write_memory(o, f, "memory:", at_fault);
  write_owner(o, f);
  line(o, "  called at:");
  write_stack(o, json_object_get(f, "stack"));
}

static void write_destroy(struct out *o, const json_t *f) {
  const json_t *s = json_object_get(f, "stream"), *a = json_object_get(f, "allocation");
  line(o, "  destroy: %s(hStream=%s) on thread %lld destroyed stream #%lld", str(f, "api"),
       str(s, "handle"), num(f, "thread"), num(s, "serial"));
  write_busy(o, "busy:  ", json_object_get(f, "busy"));
  write_memory(o, f, "still attached:", str(a, "base"));
  line(o, "  called at:");
  write_stack(o, json_object_get(f, "stack"));
}

static void write_host_access(struct out *o, const json_t *f) {
  const json_t *a = json_object_get(f, "access"), *alloc = json_object_get(f, "allocation");
  char length[48] = "", offset[48] = "";
  if (json_object_get(a, "length"))
    snprintf(length, sizeof length, " (%lld bytes)", num(a, "length"));
  if (json_object_get(alloc, "offset"))
    snprintf(offset, sizeof offset, ", offset %lld", num(alloc, "offset"));
  const char *kind = str(a, "kind");
  line(o, "  access: %s of %s%s%s by the CPU on thread %lld (seen by %s) at:",
       strcmp(kind, "unknown") == 0 ? "access" : kind, str(a, "address"), length, offset,
       num(f, "thread"), str(a, "via"));
  write_stack(o, json_object_get(f, "stack"));
  write_busy(o, "busy:  ", json_object_get(f, "busy"));
  write_memory(o, f, "memory:", str(a, "address"));
  write_repair(o, f);
}

static const struct {
  const char *kind;
  void (*write)(struct out *, const json_t *);
} kinds[] = {
    {"attach", write_attach},          {"launch", write_launch},           {"copy", write_copy},
    {"stream_destroy", write_destroy}, {"host_access", write_host_access},
};

/* A strict finding on a device whose concurrent managed access judges it otherwise. */
static void write_semantics(struct out *o, const json_t *f) {
  const json_t *s = json_object_get(f, "semantics");
  if (!json_is_object(s)) return;
  if (strcmp(str(s, "on_this_device"), "legal") == 0)
    line(o,
         "  semantics: legal on this device (%s); breaks on devices without concurrent managed "
         "access (Jetson, Windows); --semantics device judges by this device",
         str(s, "device"));
  else
    line(o,
         "  semantics: on this device (%s) a race only where the busy work uses this memory; "
         "breaks on devices without concurrent managed access (Jetson, Windows); --semantics "
         "device judges by this device",
         str(s, "device"));
}

/* ---- one sentence of what happened, by kind (SARIF's message) ---- */

static void what_attach(const json_t *f, const char *stream, char *buf, size_t len) {
  const json_t *call = json_object_get(f, "call");
  char flags[64];
  snprintf(buf, len, "%s(hStream=%s, dptr=%s, length=%lld, flags=%s) on thread %lld, on %s",
           str(f, "api"), str(call, "stream"), str(call, "dptr"), num(call, "length"),
           flags_text(num(call, "flags"), flags, sizeof flags), num(f, "thread"), stream);
}

static void what_launch(const json_t *f, const char *stream, char *buf, size_t len) {
  const json_t *k = json_object_get(f, "kernel"), *arg = json_object_get(f, "argument");
  char given[160];
  if (strcmp(str(arg, "kind"), "parameter") == 0)
    snprintf(given, sizeof given, "argument %lld (%s)", num(arg, "index"), str(arg, "value"));
  else
    snprintf(given, sizeof given, "its module's __managed__ variable at %s", str(arg, "value"));
  snprintf(buf, len, "kernel %s launched by %s on thread %lld, on %s, given in %s",
           json_object_get(k, "name") ? str(k, "name") : "(not named)", str(f, "api"),
           num(f, "thread"), stream, given);
}

static void what_copy(const json_t *f, const char *stream, char *buf, size_t len) {
  size_t i;
  const json_t *x, *fault = NULL;
  json_array_foreach(json_object_get(f, "operands"), i, x) {
    if (json_is_true(json_object_get(x, "at_fault"))) fault = x;
  }
  snprintf(buf, len, "%s %s on thread %lld, on %s, given its %s %s", str(f, "operation"),
           str(f, "api"), num(f, "thread"), stream, str(fault, "role"), str(fault, "address"));
}

static void what_destroy(const json_t *f, const char *stream, char *buf, size_t len) {
  snprintf(buf, len, "%s on thread %lld destroyed %s with memory at %s attached to it",
           str(f, "api"), num(f, "thread"), stream, str(json_object_get(f, "allocation"), "base"));
}

static void what_host_access(const json_t *f, const char *stream, char *buf, size_t len) {
  const json_t *a = json_object_get(f, "access");
  (void)stream;
  snprintf(buf, len, "the CPU's %s of %s on thread %lld (seen by %s)", str(a, "kind"),
           str(a, "address"), num(f, "thread"), str(a, "via"));
}

void ac_text_what(const json_t *f, char *buf, size_t len) {
  static const struct {
    const char *kind;
    void (*what)(const json_t *, const char *, char *, size_t);
  } whats[] = {{"attach", what_attach},
               {"launch", what_launch},
               {"copy", what_copy},
               {"stream_destroy", what_destroy},
               {"host_access", what_host_access}};
  char stream[160];
  stream_text(json_object_get(f, "stream"), stream, sizeof stream);
  snprintf(buf, len, "%s", str(f, "rule"));
  for (size_t i = 0; i < sizeof whats / sizeof whats[0]; i++)
    if (strcmp(whats[i].kind, str(f, "kind")) == 0) whats[i].what(f, stream, buf, len);
}

bool ac_text_location_line(const json_t *f, char *buf, size_t len) {
  const json_t *fr = ac_primary_frame(json_object_get(f, "stack"));
  if (!fr) return false;
  char where[600];
  if (json_object_get(fr, "file") && json_object_get(fr, "column"))
    snprintf(where, sizeof where, "%s:%lld:%lld", str(fr, "file"), num(fr, "line"),
             num(fr, "column"));
  else if (json_object_get(fr, "file"))
    snprintf(where, sizeof where, "%s:%lld", str(fr, "file"), num(fr, "line"));
  else
    snprintf(where, sizeof where, "%s+%s", base_name(str(fr, "module")), str(fr, "offset"));
  int n = snprintf(buf, len, "%s: %s: %s %s", where, str(f, "severity"), str(f, "rule"),
                   str(f, "name"));
  if (json_object_get(fr, "function") && n > 0 && (size_t)n < len)
    snprintf(buf + n, len - (size_t)n, " in %s", str(fr, "function"));
  return true;
}

void ac_text_write_finding(FILE *f, const json_t *finding, const char *prefix) {
  struct out o = {f, prefix};
  line(&o, "%s %s [%s]", str(finding, "rule"), str(finding, "name"), str(finding, "severity"));
  line(&o, "  %s.", str(finding, "message"));
  const char *kind = str(finding, "kind");
  for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++)
    if (strcmp(kinds[i].kind, kind) == 0) kinds[i].write(&o, finding);
  write_semantics(&o, finding);
  line(&o, "  fix: %s.", str(finding, "fix"));
  char location[800];
  if (ac_text_location_line(finding, location, sizeof location)) fprintf(f, "%s\n", location);
  line(&o, "%s", "");
}
