/* html.c - the final report as one self-contained HTML page.
 *
 * Built from the merged JSON report (merge.c), like SARIF. The page opens
 * offline: its style and script are inside it and its Content-Security-Policy
 * forbids every fetch. Without JavaScript it is complete as text: the header,
 * the summary table and each finding (message, fix, both sides' stacks, the
 * operations before it). The script (html_page.inc) adds filters and draws the
 * timeline: one lane per host thread and per stream, the findings' operations
 * in the model's order, each finding a line between its two sides.
 *
 * Size is bounded whatever the program did: the model keeps at most
 * AC_HISTORY_MAX operations per stream for a finding, and the page holds at
 * most MAX_FINDINGS findings and MAX_FRAMES frames of a stack, saying what it
 * left out.
 */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report.h"

#define MAX_FINDINGS 300 /* findings shown in full (the table counts all) */
#define MAX_FRAMES 16    /* frames of one stack */

#include "html_page.inc" /* HTML_STYLE, HTML_SCRIPT */

/* A growing text; ok turns false for good when memory runs out. */
struct page {
  char *text;
  size_t len, cap;
  bool ok;
  const char *docs_url; /* --docs-url: where the rule pages are published, or "" */
};

static void put_n(struct page *p, const char *s, size_t n) {
  if (!p->ok) return;
  if (p->len + n + 1 > p->cap) {
    size_t cap = p->cap ? p->cap : 65536;
    while (p->len + n + 1 > cap)
      cap *= 2;
    char *grown = realloc(p->text, cap);
    if (!grown) {
      p->ok = false;
      return;
    }
    p->text = grown;
    p->cap = cap;
  }
  memcpy(p->text + p->len, s, n);
  p->len += n;
  p->text[p->len] = 0;
}

static void put(struct page *p, const char *s) {
  put_n(p, s, strlen(s));
}

static void __attribute__((format(printf, 2, 3))) putf(struct page *p, const char *fmt, ...) {
  char *s = NULL;
  va_list ap;
  va_start(ap, fmt);
  int n = vasprintf(&s, fmt, ap);
  va_end(ap);
  if (n < 0) {
    p->ok = false;
    return;
  }
  put_n(p, s, (size_t)n);
  free(s);
}

/* Text as HTML: the five characters that mean something escaped. */
static void esc(struct page *p, const char *s) {
  if (!s) return;
  for (const char *c = s; *c; c++) {
    const char *e = NULL;
    switch (*c) {
    case '&':
      e = "&amp;";
      break;
    case '<':
      e = "&lt;";
      break;
    case '>':
      e = "&gt;";
      break;
    case '"':
      e = "&quot;";
      break;
    case '\'':
      e = "&#39;";
      break;
    }
    if (e)
      put(p, e);
    else
      put_n(p, c, 1);
  }
}

static const char *str(const json_t *o, const char *key) {
  return ac_json_str(o, key);
}

static long long num(const json_t *o, const char *key) {
  return (long long)json_integer_value(json_object_get(o, key));
}

static bool is_suppressed(const json_t *f) {
  return json_is_object(json_object_get(f, "suppressed"));
}

/* ---- the header and the summary table ---- */

/* The options the run had, each with its value. */
static void options_list(struct page *p, const json_t *options) {
  const char *name;
  const json_t *value;
  put(p, "<details class=\"options\"><summary>Options</summary><dl>");
  json_object_foreach((json_t *)options, name, value) {
    put(p, "<dt>--");
    for (const char *c = name; *c; c++)
      put_n(p, *c == '_' ? "-" : c, 1);
    put(p, "</dt><dd><code>");
    esc(p, *json_string_value(value) ? json_string_value(value) : "(none)");
    put(p, "</code></dd>");
  }
  put(p, "</dl></details>");
}

/* Which attachcheck made the report, when, from what command and options. */
static void made_by(struct page *p, const json_t *report) {
  const json_t *tool = json_object_get(report, "tool");
  char text[200];
  snprintf(text, sizeof text, "%s %s \u00b7 report schema %lld \u00b7 made ", str(tool, "name"),
           str(tool, "version"), num(report, "schema_version"));
  put(p, "<p class=\"made\">");
  esc(p, text);
  put(p, "<time>");
  esc(p, str(report, "created"));
  put(p, "</time></p>");
}

/* The command, how many processes, the GPUs. */
static void command_line(struct page *p, const json_t *proc, const json_t *sum) {
  const json_t *argv = json_object_get(proc, "argv"), *a;
  size_t i;
  put(p, "<p class=\"run\">");
  if (json_array_size(argv)) {
    put(p, "<code>");
    json_array_foreach(argv, i, a) {
      if (i) put(p, " ");
      esc(p, json_string_value(a));
    }
    put(p, "</code> ");
  }
  putf(p, "&middot; %lld process%s", num(sum, "processes"), num(sum, "processes") == 1 ? "" : "es");
  json_array_foreach(json_object_get(proc, "gpus"), i, a) {
    put(p, " &middot; ");
    esc(p, json_string_value(a));
  }
  put(p, "</p>");
}

/* The findings by severity, their occurrences, and what was not checked. */
static void counts(struct page *p, const json_t *sum) {
  putf(p,
       "<p class=\"counts\"><span class=\"pill sev-error\">%lld error%s</span> "
       "<span class=\"pill sev-warning\">%lld warning%s</span> "
       "<span class=\"pill sev-note\">%lld note%s</span> "
       "<span class=\"pill suppressed\">%lld suppressed</span> %lld occurrence%s</p>",
       num(sum, "errors"), num(sum, "errors") == 1 ? "" : "s", num(sum, "warnings"),
       num(sum, "warnings") == 1 ? "" : "s", num(sum, "notes"), num(sum, "notes") == 1 ? "" : "s",
       num(sum, "suppressed"), num(sum, "occurrences"), num(sum, "occurrences") == 1 ? "" : "s");
  size_t i;
  const json_t *what;
  json_array_foreach(json_object_get(sum, "not_checked"), i, what) {
    put(p, "<p class=\"unchecked\">Not checked: ");
    esc(p, json_string_value(what));
    put(p, "</p>");
  }
}

static void header(struct page *p, const json_t *report) {
  const json_t *proc = json_object_get(report, "process"),
               *sum = json_object_get(report, "summary");
  put(p, "<header><h1>attachcheck report</h1>");
  made_by(p, report);
  command_line(p, proc, sum);
  counts(p, sum);
  if (json_is_object(json_object_get(proc, "options")))
    options_list(p, json_object_get(proc, "options"));
  put(p, "</header>\n");
}

/* One row per rule: distinct findings, occurrences, suppressed, processes. */
struct rule_row {
  int findings, suppressed;
  long long occurrences;
  json_t *pids; /* pid (as text) -> true */
};

static void rule_rows(const json_t *findings, struct rule_row rows[AC_RULE_COUNT]) {
  size_t i, j;
  const json_t *f, *pid;
  memset(rows, 0, sizeof(struct rule_row) * AC_RULE_COUNT);
  json_array_foreach(findings, i, f) {
    enum ac_rule_id id = ac_rule_by_id(str(f, "rule"));
    if (id == AC_RULE_COUNT) continue;
    struct rule_row *r = &rows[id];
    if (is_suppressed(f))
      r->suppressed++;
    else
      r->findings++;
    r->occurrences += num(f, "count");
    if (!r->pids) r->pids = json_object();
    json_array_foreach(json_object_get(f, "processes"), j, pid) {
      char key[24];
      snprintf(key, sizeof key, "%lld", (long long)json_integer_value(pid));
      json_object_set_new(r->pids, key, json_true());
    }
  }
}

static void summary_table(struct page *p, const json_t *findings) {
  struct rule_row rows[AC_RULE_COUNT];
  rule_rows(findings, rows);
  put(p, "<section id=\"summary\"><h2>Summary</h2>\n<table class=\"summary\"><thead><tr><th>rule"
         "</th><th>name</th><th>severity</th><th class=\"n\">findings</th><th class=\"n\">"
         "occurrences</th><th class=\"n\">suppressed</th><th>processes</th></tr></thead><tbody>\n");
  int shown = 0;
  for (int i = 0; i < AC_RULE_COUNT; i++) {
    struct rule_row *r = &rows[i];
    if (!r->findings && !r->suppressed) continue;
    const struct ac_rule_info *info = ac_rule_info((enum ac_rule_id)i);
    const char *sev = ac_severity_name(info->severity);
    putf(p,
         "<tr class=\"%s\" data-rule=\"%s\"><td><a href=\"#rule-%s\">%s</a></td><td>%s</td>"
         "<td><span class=\"pill sev-%s\">%s</span></td><td class=\"n\">%d</td>"
         "<td class=\"n\">%lld</td><td class=\"n\">%d</td><td>",
         r->findings ? "" : "suppressed", info->id, info->id, info->id, info->name, sev, sev,
         r->findings, r->occurrences, r->suppressed);
    const char *pid;
    json_t *v;
    int n = 0;
    json_object_foreach(r->pids, pid, v) putf(p, "%s%s", n++ ? ", " : "", pid);
    put(p, "</td></tr>\n");
    json_decref(r->pids);
    shown++;
  }
  if (!shown) put(p, "<tr><td colspan=\"7\" class=\"none\">No findings.</td></tr>\n");
  put(p, "</tbody></table></section>\n");
}

/* ---- one finding ---- */

/* A frame: the program's own emphasised (class own), the others (the C
 * library, the loader, the runtime, the driver) plain. */
static void frame(struct page *p, const json_t *fr, int i) {
  putf(p, "<li class=\"%s\"><span class=\"fn\">#%d ",
       ac_frame_is_programs_own(fr) ? "own" : "foreign", i);
  esc(p, json_object_get(fr, "function") ? str(fr, "function") : str(fr, "pc"));
  put(p, "</span>");
  if (json_object_get(fr, "file")) {
    put(p, " <span class=\"loc\">");
    esc(p, str(fr, "file"));
    putf(p, ":%lld</span>", num(fr, "line"));
  }
  const char *module = str(fr, "module"), *base = strrchr(module, '/');
  put(p, " <span class=\"mod\">(");
  esc(p, base ? base + 1 : module);
  put(p, "+");
  esc(p, str(fr, "offset"));
  put(p, ")</span></li>");
}

static void stack(struct page *p, const char *title, const json_t *frames) {
  size_t n = json_array_size(frames);
  if (!n) return;
  put(p, "<div class=\"stack\"><h4>");
  esc(p, title);
  put(p, "</h4><ol>");
  size_t shown = n < MAX_FRAMES ? n : MAX_FRAMES;
  for (size_t i = 0; i < shown;) {
    /* A run of frames outside the program's code folds into one line. */
    size_t run = 0;
    while (i + run < shown && !ac_frame_is_programs_own(json_array_get(frames, i + run)))
      run++;
    if (run) {
      putf(p,
           "<li class=\"fold\"><details><summary>%zu frame%s of the C library, the loader or "
           "the runtime</summary><ol>",
           run, run == 1 ? "" : "s");
      for (size_t j = i; j < i + run; j++)
        frame(p, json_array_get(frames, j), (int)j);
      put(p, "</ol></details></li>");
      i += run;
      continue;
    }
    frame(p, json_array_get(frames, i), (int)i);
    i++;
  }
  if (n > MAX_FRAMES) putf(p, "<li class=\"cut\">&hellip; %zu more frames</li>", n - MAX_FRAMES);
  put(p, "</ol></div>");
}

/* The other side of a finding: what made the stream busy, the attach that
 * gave the memory away, or where the memory was made. */
static void other_side(struct page *p, const json_t *f) {
  const json_t *busy = json_object_get(f, "busy"), *alloc = json_object_get(f, "allocation");
  const json_t *first = json_object_get(busy, "first"),
               *attached = json_object_get(alloc, "attached");
  char title[256];
  if (json_is_object(first)) {
    snprintf(title, sizeof title,
             "Other side: %s on stream #%lld (thread %lld), not known complete", str(first, "api"),
             num(busy, "stream"), num(first, "thread"));
    stack(p, title, json_object_get(first, "stack"));
  } else if (json_is_object(attached)) {
    snprintf(title, sizeof title, "Other side: the memory's last attach, %s (thread %lld)",
             str(attached, "api"), num(attached, "thread"));
    stack(p, title, json_object_get(attached, "stack"));
  }
  const json_t *origin = json_object_get(alloc, "origin");
  if (json_is_object(origin)) {
    snprintf(title, sizeof title, "Memory made by %s (thread %lld)", str(origin, "api"),
             num(origin, "thread"));
    stack(p, title, json_object_get(origin, "stack"));
  }
}

/* Text in <code>. */
static void code(struct page *p, const char *text) {
  put(p, "<code>");
  esc(p, text);
  put(p, "</code>");
}

/* One row of a finding's facts: its term, then what the caller puts. */
static void term(struct page *p, const char *name) {
  put(p, "<dt>");
  esc(p, name);
  put(p, "</dt><dd>");
}

/* "stream #3 (handle 0x...)" or "CU_STREAM_LEGACY (#1)": serial under key. */
static void stream_fact(struct page *p, const json_t *s, const char *key) {
  const char *kind = str(s, "kind");
  if (json_object_get(s, key)) putf(p, "stream #%lld ", num(s, key));
  put(p, "(");
  if (strcmp(kind, "stream made by cuStreamCreate") != 0) {
    esc(p, kind);
    put(p, ", ");
  }
  put(p, "handle ");
  code(p, str(s, "handle"));
  put(p, ")");
}

static void busy_fact(struct page *p, const json_t *busy) {
  if (!json_is_object(busy)) return;
  term(p, "busy");
  stream_fact(p, busy, "stream");
  putf(p, ": %lld operation%s not known complete</dd>", num(busy, "outstanding"),
       num(busy, "outstanding") == 1 ? "" : "s");
}

static void owner_fact(struct page *p, const json_t *owner) {
  if (!json_is_object(owner)) return;
  term(p, "owner");
  put(p, "the memory belongs to ");
  stream_fact(p, owner, "stream");
  put(p, "; only its work may use it</dd>");
}

static void memory_fact(struct page *p, const json_t *f) {
  const json_t *alloc = json_object_get(f, "allocation");
  if (!json_is_object(alloc)) {
    if (json_object_get(f, "memory_kind")) {
      term(p, "memory");
      esc(p, str(f, "memory_kind"));
      put(p, " memory, no allocation</dd>");
    }
    return;
  }
  term(p, "memory");
  if (json_object_get(alloc, "offset")) putf(p, "offset %lld of ", num(alloc, "offset"));
  put(p, "<code>");
  esc(p, str(alloc, "base"));
  putf(p, "</code>, %lld bytes, ", num(alloc, "size"));
  esc(p, str(alloc, "kind"));
  if (*str(alloc, "name")) {
    put(p, " <code>");
    esc(p, str(alloc, "name"));
    put(p, "</code>");
  }
  if (json_object_get(alloc, "association")) put(p, ", ");
  esc(p, str(alloc, "association"));
  if (json_object_get(alloc, "attached_stream"))
    putf(p, " to stream #%lld", num(alloc, "attached_stream"));
  put(p, "</dd>");
}

static void on_stream(struct page *p, const json_t *f) {
  put(p, " on ");
  stream_fact(p, json_object_get(f, "stream"), "serial");
  putf(p, ", thread %lld</dd>", num(f, "thread"));
}

static void attach_facts(struct page *p, const json_t *f) {
  const json_t *call = json_object_get(f, "call"), *driver = json_object_get(f, "driver");
  char text[400];
  snprintf(text, sizeof text, "%s(hStream=%s, dptr=%s, length=%lld, flags=%s)", str(f, "api"),
           str(call, "stream"), str(call, "dptr"), num(call, "length"),
           ac_assoc_name((unsigned)num(call, "flags")));
  term(p, "call");
  code(p, text);
  on_stream(p, f);
  term(p, "driver");
  if (strcmp(str(driver, "outcome"), "crashes") == 0) {
    put(p, "forwarded with --guard off: the driver crashes the process on this call</dd>");
  } else {
    put(p, strcmp(str(driver, "outcome"), "guarded") == 0 ? "not called; the guard returned "
                                                          : "returned ");
    esc(p, str(driver, "name"));
    put(p, "</dd>");
  }
  busy_fact(p, json_object_get(f, "busy"));
  memory_fact(p, f);
}

static void launch_facts(struct page *p, const json_t *f) {
  const json_t *k = json_object_get(f, "kernel"), *arg = json_object_get(f, "argument");
  char shape[96];
  ac_launch_shape(k, shape, sizeof shape);
  term(p, "launch");
  put(p, "<code>");
  esc(p, json_object_get(k, "name") ? str(k, "name") : "a kernel");
  esc(p, shape);
  put(p, "</code> by ");
  code(p, str(f, "api"));
  if (json_is_true(json_object_get(k, "graph_node"))) put(p, " (a kernel node of the graph)");
  on_stream(p, f);
  term(p, "argument");
  if (strcmp(str(arg, "kind"), "parameter") == 0)
    putf(p, "parameter %lld, byte %lld: <code>", num(arg, "index"), num(arg, "offset"));
  else
    put(p, "the module's __managed__ variable <code>");
  esc(p, str(arg, "value"));
  put(p, "</code></dd>");
  memory_fact(p, f);
  owner_fact(p, json_object_get(f, "owner"));
}

static void copy_facts(struct page *p, const json_t *f) {
  term(p, str(f, "operation"));
  code(p, str(f, "api"));
  if (json_is_true(json_object_get(f, "graph_node"))) put(p, " (a node of the graph)");
  on_stream(p, f);
  size_t i;
  const json_t *x;
  json_array_foreach(json_object_get(f, "operands"), i, x) {
    term(p, str(x, "role"));
    code(p, str(x, "address"));
    put(p, ", ");
    esc(p, str(x, "memory"));
    put(p,
        json_is_true(json_object_get(x, "at_fault")) ? " memory, at fault</dd>" : " memory</dd>");
  }
  memory_fact(p, f);
  owner_fact(p, json_object_get(f, "owner"));
}

static void destroy_facts(struct page *p, const json_t *f) {
  term(p, "destroy");
  code(p, str(f, "api"));
  on_stream(p, f);
  busy_fact(p, json_object_get(f, "busy"));
  memory_fact(p, f);
}

static void host_access_facts(struct page *p, const json_t *f) {
  const json_t *access = json_object_get(f, "access");
  term(p, "access");
  esc(p, str(access, "kind"));
  put(p, " of ");
  code(p, str(access, "address"));
  put(p, " by the CPU (seen by ");
  esc(p, str(access, "via"));
  putf(p, ") on thread %lld</dd>", num(f, "thread"));
  busy_fact(p, json_object_get(f, "busy"));
  memory_fact(p, f);
}

static const struct {
  const char *kind, *this_side;
  void (*facts)(struct page *, const json_t *);
} kinds[] = {
    {"attach", "This side: the call at", attach_facts},
    {"launch", "This side: the launch at", launch_facts},
    {"copy", "This side: the call at", copy_facts},
    {"stream_destroy", "This side: the stream destroyed at", destroy_facts},
    {"host_access", "This side: the CPU access at", host_access_facts},
};

/* The kind's row of the table above, or NULL. */
static int kind_of(const json_t *f) {
  for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++)
    if (strcmp(kinds[i].kind, str(f, "kind")) == 0) return (int)i;
  return -1;
}

static void semantics_fact(struct page *p, const json_t *f) {
  const json_t *s = json_object_get(f, "semantics");
  if (!json_is_object(s)) return;
  bool legal = strcmp(str(s, "on_this_device"), "legal") == 0;
  term(p, "semantics");
  put(p, legal ? "legal on this device (" : "on this device (");
  esc(p, str(s, "device"));
  put(p, legal ? "); " : ") a race only where the busy work uses this memory; ");
  put(p, "breaks on devices without concurrent managed access (Jetson, Windows); "
         "<code>--semantics device</code> judges by this device</dd>");
}

static void facts(struct page *p, const json_t *f) {
  int k = kind_of(f);
  put(p, "<dl class=\"facts\">");
  if (k >= 0) kinds[k].facts(p, f);
  semantics_fact(p, f);
  put(p, "</dl>");
}

/* The operations before the finding, as a plain list (the timeline draws them). */
static void operations_list(struct page *p, const json_t *timeline) {
  const json_t *streams = json_object_get(timeline, "streams"), *s, *op;
  size_t i, j;
  if (!json_is_object(timeline)) return;
  putf(p,
       "<details class=\"ops\"><summary>Operations before it (the last %lld per stream)"
       "</summary>",
       num(timeline, "limit"));
  json_array_foreach(streams, i, s) {
    putf(p, "<h5>%s stream #%lld (",
         strcmp(str(s, "role"), "call") == 0 ? "call's" : "other side's", num(s, "stream"));
    esc(p, str(s, "kind"));
    putf(p, "): %lld of %lld operations</h5>", num(s, "shown"), num(s, "recorded"));
    const json_t *created = json_object_get(s, "created");
    if (json_is_object(created)) {
      char title[160];
      snprintf(title, sizeof title, "Stream #%lld made by %s (thread %lld) at", num(s, "stream"),
               str(created, "api"), num(created, "thread"));
      stack(p, title, json_object_get(created, "stack"));
    }
    put(p, "<ol>");
    json_array_foreach(json_object_get(s, "operations"), j, op) {
      putf(p, "<li>@%lld ", num(op, "tick"));
      esc(p, json_object_get(op, "api") ? str(op, "api") : str(op, "kind"));
      if (json_object_get(op, "kernel")) {
        put(p, " <code>");
        esc(p, str(op, "kernel"));
        put(p, "</code>");
      }
      putf(p, " (thread %lld)</li>", num(op, "thread"));
    }
    put(p, "</ol>");
  }
  put(p, "</details>");
}

static void finding(struct page *p, const json_t *f, size_t index) {
  const char *rule = str(f, "rule"), *sev = str(f, "severity");
  bool sup = is_suppressed(f);
  putf(p, "<article class=\"finding sev-%s%s\" id=\"f%zu\" data-index=\"%zu\" data-kind=\"", sev,
       sup ? " suppressed" : "", index, index);
  esc(p, str(f, "kind"));
  put(p, "\" data-rule=\"");
  esc(p, rule);
  put(p, "\" data-pids=\"");
  size_t i;
  const json_t *pid;
  json_array_foreach(json_object_get(f, "processes"), i, pid)
      putf(p, "%s%lld", i ? " " : "", (long long)json_integer_value(pid));
  putf(p, "\"><h3><span class=\"pill sev-%s\">%s</span> ", sev, sev);
  esc(p, rule);
  put(p, " <span class=\"name\">");
  esc(p, str(f, "name"));
  putf(p, "</span> <span class=\"count\">&times;%lld</span>", num(f, "count"));
  if (sup) put(p, " <span class=\"pill suppressed\">suppressed</span>");
  put(p, "</h3><p class=\"message\">");
  esc(p, str(f, "message"));
  put(p, ".</p><p class=\"fix\"><b>Fix:</b> ");
  esc(p, str(f, "fix"));
  put(p, ". <a class=\"doc\" href=\"#page-");
  esc(p, rule);
  put(p, "\">about ");
  esc(p, rule);
  put(p, "</a>");
  char *url = ac_rule_page_url(rule, p->docs_url);
  if (url) { /* where the pages are published: --docs-url */
    put(p, " <a class=\"doc\" href=\"");
    esc(p, url);
    put(p, "\">");
    esc(p, url);
    put(p, "</a>");
    free(url);
  }
  put(p, "</p>");
  if (sup) {
    put(p, "<p class=\"supby\">Suppressed by <code>");
    esc(p, str(json_object_get(f, "suppressed"), "line"));
    put(p, "</code> (");
    esc(p, str(json_object_get(f, "suppressed"), "by"));
    put(p, ")</p>");
  }
  facts(p, f);
  put(p, "<div class=\"stacks\">");
  int k = kind_of(f);
  stack(p, k >= 0 ? kinds[k].this_side : "This side", json_object_get(f, "stack"));
  other_side(p, f);
  put(p, "</div>");
  operations_list(p, json_object_get(f, "timeline"));
  put(p, "</article>\n");
}

/* ---- the data the script draws from ---- */

/* What the timeline needs of a finding, small. */
static json_t *timeline_entry(const json_t *f, size_t index) {
  const json_t *busy = json_object_get(f, "busy");
  json_t *e =
      json_pack("{s:I, s:s, s:s, s:s, s:s, s:I, s:I, s:b, s:O}", "index", (json_int_t)index, "rule",
                str(f, "rule"), "name", str(f, "name"), "severity", str(f, "severity"), "api",
                str(f, "api"), "pid", num(f, "pid"), "thread", num(f, "thread"), "suppressed",
                is_suppressed(f), "timeline", json_object_get(f, "timeline"));
  if (!e) return NULL;
  json_object_set_new(e, "access", json_boolean(json_is_object(json_object_get(f, "access"))));
  json_object_set(e, "pids", json_object_get(f, "processes"));
  const json_t *driver = json_object_get(f, "driver");
  if (json_is_object(driver)) { /* an attach's: the others were not refused */
    json_object_set_new(e, "outcome", json_string(str(driver, "outcome")));
    json_object_set_new(e, "result", json_integer(num(driver, "result")));
    json_object_set_new(e, "result_name", json_string(str(driver, "name")));
  }
  if (!json_is_object(busy)) busy = json_object_get(f, "owner");
  if (json_is_object(busy)) json_object_set_new(e, "busy", json_integer(num(busy, "stream")));
  const json_t *origin = json_object_get(json_object_get(f, "allocation"), "origin");
  if (json_is_object(origin))
    json_object_set_new(e, "alloc_thread", json_integer(num(origin, "thread")));
  return e;
}

static void data_block(struct page *p, const json_t *findings, size_t shown) {
  json_t *list = json_array();
  for (size_t i = 0; i < shown; i++) {
    json_t *e = timeline_entry(json_array_get(findings, i), i);
    if (e) json_array_append_new(list, e);
  }
  /* ESCAPE_SLASH: no "</script>" can end the block early. */
  char *text = json_dumps(list, JSON_COMPACT | JSON_ESCAPE_SLASH);
  json_decref(list);
  if (!text) {
    p->ok = false;
    return;
  }
  put(p, "<script type=\"application/json\" id=\"ac-data\">");
  put(p, text);
  put(p, "</script>\n");
  free(text);
}

/* The page of each rule with findings, inside the report: a link to
 * docs/rules/ would be dead beside a report copied out of the checkout. */
static void rule_pages(struct page *p, const json_t *findings) {
  bool has[AC_RULE_COUNT] = {0};
  size_t i;
  const json_t *f;
  json_array_foreach(findings, i, f) {
    enum ac_rule_id id = ac_rule_by_id(str(f, "rule"));
    if (id != AC_RULE_COUNT) has[id] = true;
  }
  put(p, "<section id=\"rules\"><h2>Rules</h2>\n");
  for (int r = 0; r < AC_RULE_COUNT; r++) {
    const struct ac_rule_info *info = ac_rule_info((enum ac_rule_id)r);
    char *text = has[r] ? ac_rule_page_text(info->id) : NULL;
    if (!text) continue;
    putf(p, "<details class=\"rule-page\" id=\"page-%s\"><summary>%s %s</summary><pre>", info->id,
         info->id, info->name);
    esc(p, text);
    put(p, "</pre></details>\n");
    free(text);
  }
  put(p, "</section>\n");
}

char *ac_html_from_report(const json_t *report) {
  struct page p = {NULL, 0, 0, true, ""};
  p.docs_url =
      ac_json_str(json_object_get(json_object_get(report, "process"), "options"), "docs_url");
  const json_t *findings = json_object_get(report, "findings");
  size_t total = json_array_size(findings), shown = total < MAX_FINDINGS ? total : MAX_FINDINGS;
  put(&p, "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
          "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; "
          "style-src 'unsafe-inline'; script-src 'unsafe-inline'\">"
          "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
          "<title>attachcheck report</title><style>");
  put(&p, HTML_STYLE);
  put(&p, "</style></head><body>\n");
  header(&p, report);
  summary_table(&p, findings);
  put(&p, "<section id=\"timeline\"><h2>Timeline</h2><noscript><p class=\"note\">The timeline is "
          "drawn by the page's script; every finding is listed below with the operations before "
          "it.</p></noscript><div id=\"filters\" hidden></div><div id=\"lanes\"></div>"
          "<div id=\"selected\"></div></section>\n");
  put(&p, "<section id=\"findings\"><h2>Findings</h2>\n");
  bool anchored[AC_RULE_COUNT] = {0};
  for (size_t i = 0; i < shown; i++) {
    const json_t *f = json_array_get(findings, i);
    enum ac_rule_id id = ac_rule_by_id(str(f, "rule"));
    if (id != AC_RULE_COUNT && !anchored[id]) { /* the summary table links to the first */
      anchored[id] = true;
      putf(&p, "<a id=\"rule-%s\"></a>", ac_rule_info(id)->id);
    }
    finding(&p, f, i);
  }
  if (shown < total)
    putf(&p,
         "<p class=\"cut\" id=\"cut\">%zu more findings are not shown here (the page holds "
         "the first %d); the JSON report (--json) has them all.</p>\n",
         total - shown, MAX_FINDINGS);
  put(&p, "</section>\n");
  rule_pages(&p, findings);
  data_block(&p, findings, shown);
  put(&p, "<script>");
  put(&p, HTML_SCRIPT);
  put(&p, "</script></body></html>\n");
  if (!p.ok) {
    free(p.text);
    return NULL;
  }
  return p.text;
}
