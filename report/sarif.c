/* sarif.c - the final report as SARIF 2.1.0, for code scanning in CI.
 *
 * Built from the merged JSON report (merge.c), never from live findings, so
 * the shim at exit and the CLI after a multi-process run produce the same
 * log. One run; the rules table is the whole catalogue; each finding becomes
 * a result whose primary location is the first frame in the program's own
 * code (frames in the CUDA runtime, the driver and the C library are
 * skipped), with the full stack, code flows (the host thread, and each stream
 * involved) and a fingerprint that does not depend on where the program was
 * loaded, so alerts are not duplicated from run to run. Each process is an
 * invocation. The schema is tests/cli/sarif-schema-2.1.0.json.
 */
#define _GNU_SOURCE
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report.h"

#define SARIF_SCHEMA                                                                               \
  "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"

static const char *sarif_level(const char *severity) {
  if (severity && strcmp(severity, "error") == 0) return "error";
  if (severity && strcmp(severity, "warning") == 0) return "warning";
  return "note";
}

static json_t *message(const char *text) {
  return json_pack("{s:s}", "text", text);
}

/* One rule: its real description (its page's first paragraph), and its page
 * as help, so code scanning's view shows it without following a link; a
 * link only where --docs-url says where the pages are published. */
static json_t *rule(const struct ac_rule_info *r, const char *docs_url) {
  char description[2048];
  if (!ac_rule_description(r->id, description, sizeof description))
    snprintf(description, sizeof description, "%s.", r->summary);
  char *text = ac_rule_page_text(r->id), *markdown = ac_rule_page_markdown(r->id, docs_url);
  char *url = ac_rule_page_url(r->id, docs_url);
  json_t *o = json_pack("{s:s, s:s, s:{s:s}, s:{s:s}, s:{s:s, s:s}, s:{s:s}, s:{s:[s]}}", "id",
                        r->id, "name", r->name, "shortDescription", "text", r->summary,
                        "fullDescription", "text", description, "help", "text",
                        text ? text : r->fix, "markdown", markdown ? markdown : r->fix,
                        "defaultConfiguration", "level", sarif_level(ac_severity_name(r->severity)),
                        "properties", "tags", "cuda-unified-memory");
  if (o && url) json_object_set_new(o, "helpUri", json_string(url));
  free(text);
  free(markdown);
  free(url);
  return o;
}

static json_t *rules_table(const char *docs_url) {
  json_t *rules = json_array();
  for (int i = 0; i < AC_RULE_COUNT; i++)
    json_array_append_new(rules, rule(ac_rule_info((enum ac_rule_id)i), docs_url));
  return rules;
}

static unsigned long long offset_of(const json_t *frame) {
  return strtoull(ac_json_str(frame, "offset"), NULL, 16);
}

/* A module path as an artifact: an absolute path becomes a file URI, with
 * the bytes a URI may not hold percent-encoded. */
static json_t *artifact(const char *path) {
  size_t n = strlen(path);
  char *uri = malloc(3 * n + 8), *out = uri;
  if (!uri) return json_object();
  if (path[0] == '/') out += sprintf(out, "file://");
  for (const unsigned char *p = (const unsigned char *)path; *p; p++) {
    if ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
        strchr("/-._~+", *p))
      *out++ = (char)*p;
    else
      out += sprintf(out, "%%%02X", *p);
  }
  *out = 0;
  json_t *a = json_pack("{s:s}", "uri", uri);
  free(uri);
  return a;
}

/* A frame as a SARIF location: the source file and line where debug
 * information gave them for the program's own frames (a path relative to the
 * checkout, after --strip-paths, as a file of the repository, %SRCROOT%;
 * an absolute one as a file URI), else the module; the instruction's offset
 * in the module, and the function. A frame of the C library, the runtime or
 * the driver is never given as a file of the repository, though its debug
 * information names one (../sysdeps/...). */
static json_t *location(const json_t *frame, const char *note) {
  json_t *loc = json_object();
  const char *module = ac_json_str(frame, "module"), *function = ac_json_str(frame, "function"),
             *file = ac_json_str(frame, "file");
  json_int_t line = json_integer_value(json_object_get(frame, "line"));
  json_int_t column = json_integer_value(json_object_get(frame, "column"));
  json_t *physical = json_pack("{s:{s:I, s:s}}", "address", "relativeAddress",
                               (json_int_t)offset_of(frame), "kind", "instruction");
  bool in_tree = *file && line > 0 && ac_frame_is_programs_own(frame) && strncmp(file, "../", 3);
  if (in_tree) { /* the source line: what code scanning shows */
    json_t *where = artifact(file);
    if (file[0] != '/') json_object_set_new(where, "uriBaseId", json_string("%SRCROOT%"));
    json_object_set_new(physical, "artifactLocation", where);
    json_t *region = json_pack("{s:I}", "startLine", line);
    if (column > 0) json_object_set_new(region, "startColumn", json_integer(column));
    json_object_set_new(physical, "region", region);
  } else if (*module) {
    json_object_set_new(physical, "artifactLocation", artifact(module));
  }
  json_object_set_new(loc, "physicalLocation", physical);
  if (*function)
    json_object_set_new(loc, "logicalLocations",
                        json_pack("[{s:s, s:s}]", "name", function, "kind", "function"));
  if (note) json_object_set_new(loc, "message", message(note));
  return loc;
}

static json_t *stack(const json_t *frames, const char *note, json_int_t thread) {
  json_t *out = json_array();
  size_t i;
  const json_t *frame;
  json_array_foreach(frames, i, frame) {
    json_t *f = json_pack("{s:o}", "location", location(frame, NULL));
    const char *module = ac_json_str(frame, "module");
    if (*module) json_object_set_new(f, "module", json_string(module));
    if (thread) json_object_set_new(f, "threadId", json_integer(thread));
    json_array_append_new(out, f);
  }
  return json_pack("{s:o, s:o}", "message", message(note), "frames", out);
}

/* One step of a thread flow: where an operation was made, if it has a stack. */
static void add_step(json_t *flow, const json_t *origin, const char *note) {
  const json_t *frames = json_object_get(origin, "stack");
  if (!json_array_size(frames)) return;
  json_array_append_new(json_object_get(flow, "locations"),
                        json_pack("{s:o}", "location", location(ac_primary_frame(frames), note)));
}

static json_t *flow(const char *id, const char *note) {
  return json_pack("{s:s, s:o, s:[]}", "id", id, "message", message(note), "locations");
}

/* Appends flow to flows if it has a step; else drops it. */
static void keep_if_any(json_t *flows, json_t *flow_) {
  if (json_array_size(json_object_get(flow_, "locations")))
    json_array_append_new(flows, flow_);
  else
    json_decref(flow_);
}

/* A stream's flow: one step, the operation of the stream that matters. */
static void add_stream_flow(json_t *flows, json_int_t serial, const json_t *origin,
                            const char *what) {
  char id[48], note[200];
  snprintf(id, sizeof id, "stream-%" JSON_INTEGER_FORMAT, serial);
  snprintf(note, sizeof note, "stream #%" JSON_INTEGER_FORMAT ": %s", serial, what);
  json_t *stream_flow = flow(id, note);
  add_step(stream_flow, origin, note);
  keep_if_any(flows, stream_flow);
}

/* The host's steps in program order (allocated, attached, the call or access
 * itself), then one flow per stream involved: the one the work ran on and
 * the one that was busy or owned the memory. */
static json_t *code_flows(const json_t *f, const char *call_note) {
  json_t *flows = json_array();
  const json_t *alloc = json_object_get(f, "allocation"), *busy = json_object_get(f, "busy");
  if (!busy) busy = json_object_get(f, "owner"); /* AC301: the stream the memory belongs to */
  json_t *host = flow("host", "the host thread");
  json_t *self =
      json_pack("{s:s, s:O}", "api", ac_json_str(f, "api"), "stack", json_object_get(f, "stack"));
  add_step(host, json_object_get(alloc, "origin"), "the memory is allocated here");
  add_step(host, json_object_get(alloc, "attached"), "and attached here");
  add_step(host, self, call_note);
  keep_if_any(flows, host);
  /* The stream the call put work on (an attach, a launch), when it has one... */
  json_int_t call_stream =
      json_integer_value(json_object_get(json_object_get(f, "stream"), "serial"));
  json_int_t busy_stream = json_integer_value(json_object_get(busy, "stream"));
  char what[160];
  if (call_stream && call_stream != busy_stream && !json_is_object(json_object_get(f, "access"))) {
    snprintf(what, sizeof what, "given the work of %s", ac_json_str(f, "api"));
    add_stream_flow(flows, call_stream, self, what);
  }
  /* ...and the one that was busy, or that the memory belongs to. */
  if (json_is_object(busy)) {
    const json_t *first = json_object_get(busy, "first");
    const json_t *attached = json_object_get(alloc, "attached");
    if (json_is_object(first))
      snprintf(what, sizeof what, "made busy by %s", ac_json_str(first, "api"));
    else
      snprintf(what, sizeof what, "the memory was attached to it by %s",
               ac_json_str(attached, "api"));
    add_stream_flow(flows, busy_stream, json_is_object(first) ? first : attached, what);
  }
  json_decref(self);
  if (!json_array_size(flows)) return flows;
  json_t *code_flow = json_pack("{s:o}", "threadFlows", flows);
  return json_pack("[o]", code_flow);
}

/* The same alert from commit to commit: made of the rule, the problem (a
 * launch's argument), and for each of the program's own frames its
 * function, its source file's name and the text of its line (whitespace
 * normalised, as GitHub's primaryLocationLineHash), never offsets, addresses
 * or line numbers - so a comment added above the bug or a function added
 * elsewhere leaves it as it was, and changing the bug's line changes it. A
 * frame whose source could not be read counts by function and file alone. */
static void fingerprint(const json_t *f, char out[17]) {
  char problem[48];
  ac_finding_problem(f, problem, sizeof problem);
  uint64_t h = ac_hash_text(ac_hash_text(AC_HASH_START, ac_json_str(f, "rule")), problem);
  size_t i;
  const json_t *frame;
  json_array_foreach(json_object_get(f, "stack"), i, frame) {
    if (!ac_frame_is_programs_own(frame)) continue;
    const char *file = ac_json_str(frame, "file"), *base = strrchr(file, '/');
    h = ac_hash_text(ac_hash_text(h, "|"), ac_json_str(frame, "function"));
    h = ac_hash_text(ac_hash_text(h, "@"), base ? base + 1 : file);
    h = ac_hash_text(ac_hash_text(h, ":"), ac_json_str(frame, "code"));
  }
  snprintf(out, 17, "%016" PRIx64, h);
}

static json_t *result(const json_t *f) {
  const char *rule = ac_json_str(f, "rule");
  enum ac_rule_id id = ac_rule_by_id(rule);
  char *text = NULL, print[17];
  char what[700];
  ac_text_what(f, what, sizeof what);
  const char *repair = ac_json_str(f, "repair"); /* --on-error repair's, or "" */
  if (asprintf(&text, "%s: %s. %s%s%sFix: %s.", what, ac_json_str(f, "message"),
               *repair ? "Repaired: " : "", repair, *repair ? ". " : "", ac_json_str(f, "fix")) < 0)
    text = NULL;
  const char *call_note = json_is_object(json_object_get(f, "access"))
                              ? "the CPU touches the memory here"
                              : "the call that breaks the rule";
  fingerprint(f, print);
  json_int_t thread = json_integer_value(json_object_get(f, "thread"));
  const json_t *frames = json_object_get(f, "stack");
  json_t *r =
      json_pack("{s:s, s:i, s:s, s:o, s:{s:s}, s:I}", "ruleId", rule, "ruleIndex",
                id < AC_RULE_COUNT ? (int)id : -1, "level", sarif_level(ac_json_str(f, "severity")),
                "message", message(text ? text : rule), "partialFingerprints",
                "attachcheckSource/v2", print, "occurrenceCount",
                json_integer_value(json_object_get(f, "count")) > 0
                    ? json_integer_value(json_object_get(f, "count"))
                    : 1);
  if (json_array_size(frames)) {
    json_object_set_new(r, "locations", json_pack("[o]", location(ac_primary_frame(frames), NULL)));
    json_object_set_new(r, "stacks", json_pack("[o]", stack(frames, call_note, thread)));
  }
  const json_t *suppressed = json_object_get(f, "suppressed");
  if (json_is_object(suppressed)) {
    char why[700];
    snprintf(why, sizeof why, "attachcheck suppression %s (%s)", ac_json_str(suppressed, "line"),
             ac_json_str(suppressed, "by"));
    json_object_set_new(r, "suppressions",
                        json_pack("[{s:s, s:s}]", "kind", "external", "justification", why));
  }
  json_t *flows = code_flows(f, call_note);
  if (json_array_size(flows))
    json_object_set_new(r, "codeFlows", flows);
  else
    json_decref(flows);
  json_t *properties = json_pack("{s:I}", "thread", thread);
  /* The facts of the finding's kind, as the JSON report has them. */
  static const char *const kept[] = {
      "pid",      "processes", "kind",       "api",   "stream", "kernel", "argument",  "operation",
      "operands", "access",    "allocation", "owner", "busy",   "driver", "semantics", "threads"};
  for (size_t i = 0; i < sizeof kept / sizeof kept[0]; i++) /* those the finding has */
    if (json_object_get(f, kept[i]))
      json_object_set(properties, kept[i], json_object_get(f, kept[i]));
  json_object_set_new(r, "properties", properties);
  free(text);
  return r;
}

/* Each process is an invocation: its command line, pid, and options. */
static json_t *invocation(const json_t *p) {
  json_t *argv = json_object_get(p, "argv");
  json_t *inv =
      json_pack("{s:b}", "executionSuccessful", json_is_true(json_object_get(p, "exited")));
  if (json_is_integer(json_object_get(p, "pid")))
    json_object_set(inv, "processId", json_object_get(p, "pid"));
  if (json_array_size(argv)) {
    json_object_set(inv, "arguments", argv);
    size_t i;
    json_t *a;
    char *line = NULL;
    json_array_foreach(argv, i, a) {
      char *next = NULL;
      if (asprintf(&next, "%s%s%s", line ? line : "", line ? " " : "",
                   json_string_value(a) ? json_string_value(a) : "") < 0)
        break;
      free(line);
      line = next;
    }
    if (line) json_object_set_new(inv, "commandLine", json_string(line));
    free(line);
  }
  if (json_is_string(json_object_get(p, "host")))
    json_object_set(inv, "machine", json_object_get(p, "host"));
  json_object_set_new(
      inv, "properties",
      json_pack("{s:O?, s:O?, s:O?, s:O?, s:O?}", "ppid", json_object_get(p, "ppid"),
                "cudaInitialized", json_object_get(p, "cuda_initialized"), "cudaDriverVersion",
                json_object_get(p, "cuda_driver_version"), "gpus", json_object_get(p, "gpus"),
                "options", json_object_get(p, "options")));
  return inv;
}

json_t *ac_sarif_from_report(const json_t *report) {
  json_t *results = json_array(), *invocations = json_array();
  const char *docs_url =
      ac_json_str(json_object_get(json_object_get(report, "process"), "options"), "docs_url");
  size_t i;
  const json_t *item;
  json_array_foreach(json_object_get(report, "findings"), i, item)
      json_array_append_new(results, result(item));
  json_array_foreach(json_object_get(report, "processes"), i, item)
      json_array_append_new(invocations, invocation(item));
  json_t *driver =
      json_pack("{s:s, s:s, s:s, s:o}", "name", AC_TOOL_NAME, "version", AC_TOOL_VERSION,
                "semanticVersion", AC_TOOL_VERSION, "rules", rules_table(docs_url));
  char *rules = ac_docs_link(docs_url, "rules.md");
  if (rules) json_object_set_new(driver, "informationUri", json_string(rules));
  free(rules);
  json_t *run = json_pack("{s:{s:o}, s:o, s:o, s:{s:O?}}", "tool", "driver", driver, "invocations",
                          invocations, "results", results, "properties", "summary",
                          json_object_get(report, "summary"));
  return json_pack("{s:s, s:s, s:[o]}", "$schema", SARIF_SCHEMA, "version", "2.1.0", "runs", run);
}
