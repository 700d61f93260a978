/* html_finding.c - one finding of the HTML report, in full: its message
 * and fix, the facts of its kind (an attach's call, a launch's kernel and
 * arguments, a copy's operands, a destroy's stream, a host access), both
 * sides' stacks with the program's own frames emphasised, and the
 * operations before it. The page around it is html.c's. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "html_internal.h"

/* ---- one finding ---- */

/* A frame: the program's own emphasised (class own), the others (the C
 * library, the loader, the runtime, the driver) plain. */
static void frame(struct page *p, const json_t *fr, int i) {
  html_putf(p, "<li class=\"%s\"><span class=\"fn\">#%d ",
            ac_frame_is_programs_own(fr) ? "own" : "foreign", i);
  html_esc(p, json_object_get(fr, "function") ? html_str(fr, "function") : html_str(fr, "pc"));
  html_put(p, "</span>");
  if (json_object_get(fr, "file")) {
    html_put(p, " <span class=\"loc\">");
    html_esc(p, html_str(fr, "file"));
    html_putf(p, ":%lld</span>", html_num(fr, "line"));
  }
  const char *module = html_str(fr, "module"), *base = strrchr(module, '/');
  html_put(p, " <span class=\"mod\">(");
  html_esc(p, base ? base + 1 : module);
  html_put(p, "+");
  html_esc(p, html_str(fr, "offset"));
  html_put(p, ")</span></li>");
}

static void stack(struct page *p, const char *title, const json_t *frames) {
  size_t n = json_array_size(frames);
  if (!n) return;
  html_put(p, "<div class=\"stack\"><h4>");
  html_esc(p, title);
  html_put(p, "</h4><ol>");
  size_t shown = n < MAX_FRAMES ? n : MAX_FRAMES;
  for (size_t i = 0; i < shown;) {
    /* A run of frames outside the program's code folds into one line. */
    size_t run = 0;
    while (i + run < shown && !ac_frame_is_programs_own(json_array_get(frames, i + run)))
      run++;
    if (run) {
      html_putf(p,
                "<li class=\"fold\"><details><summary>%zu frame%s of the C library, the loader or "
                "the runtime</summary><ol>",
                run, run == 1 ? "" : "s");
      for (size_t j = i; j < i + run; j++)
        frame(p, json_array_get(frames, j), (int)j);
      html_put(p, "</ol></details></li>");
      i += run;
      continue;
    }
    frame(p, json_array_get(frames, i), (int)i);
    i++;
  }
  if (n > MAX_FRAMES)
    html_putf(p, "<li class=\"cut\">&hellip; %zu more frames</li>", n - MAX_FRAMES);
  html_put(p, "</ol></div>");
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
             "Other side: %s on stream #%lld (thread %lld), not known complete",
             html_str(first, "api"), html_num(busy, "stream"), html_num(first, "thread"));
    stack(p, title, json_object_get(first, "stack"));
  } else if (json_is_object(attached)) {
    snprintf(title, sizeof title, "Other side: the memory's last attach, %s (thread %lld)",
             html_str(attached, "api"), html_num(attached, "thread"));
    stack(p, title, json_object_get(attached, "stack"));
  }
  const json_t *origin = json_object_get(alloc, "origin");
  if (json_is_object(origin)) {
    snprintf(title, sizeof title, "Memory made by %s (thread %lld)", html_str(origin, "api"),
             html_num(origin, "thread"));
    stack(p, title, json_object_get(origin, "stack"));
  }
}

/* Text in <code>. */
static void code(struct page *p, const char *text) {
  html_put(p, "<code>");
  html_esc(p, text);
  html_put(p, "</code>");
}

/* One row of a finding's facts: its term, then what the caller puts. */
static void term(struct page *p, const char *name) {
  html_put(p, "<dt>");
  html_esc(p, name);
  html_put(p, "</dt><dd>");
}

/* "stream #3 (handle 0x...)" or "CU_STREAM_LEGACY (#1)": serial under key. */
static void stream_fact(struct page *p, const json_t *s, const char *key) {
  const char *kind = html_str(s, "kind");
  if (json_object_get(s, key)) html_putf(p, "stream #%lld ", html_num(s, key));
  html_put(p, "(");
  if (strcmp(kind, "stream made by cuStreamCreate") != 0) {
    html_esc(p, kind);
    html_put(p, ", ");
  }
  html_put(p, "handle ");
  code(p, html_str(s, "handle"));
  html_put(p, ")");
}

static void busy_fact(struct page *p, const json_t *busy) {
  if (!json_is_object(busy)) return;
  term(p, "busy");
  stream_fact(p, busy, "stream");
  html_putf(p, ": %lld operation%s not known complete</dd>", html_num(busy, "outstanding"),
            html_num(busy, "outstanding") == 1 ? "" : "s");
}

static void owner_fact(struct page *p, const json_t *owner) {
  if (!json_is_object(owner)) return;
  term(p, "owner");
  html_put(p, "the memory belongs to ");
  stream_fact(p, owner, "stream");
  html_put(p, "; only its work may use it</dd>");
}

static void memory_fact(struct page *p, const json_t *f) {
  const json_t *alloc = json_object_get(f, "allocation");
  if (!json_is_object(alloc)) {
    if (json_object_get(f, "memory_kind")) {
      term(p, "memory");
      html_esc(p, html_str(f, "memory_kind"));
      html_put(p, " memory, no allocation</dd>");
    }
    return;
  }
  term(p, "memory");
  if (json_object_get(alloc, "offset")) html_putf(p, "offset %lld of ", html_num(alloc, "offset"));
  html_put(p, "<code>");
  html_esc(p, html_str(alloc, "base"));
  html_putf(p, "</code>, %lld bytes, ", html_num(alloc, "size"));
  html_esc(p, html_str(alloc, "kind"));
  if (*html_str(alloc, "name")) {
    html_put(p, " <code>");
    html_esc(p, html_str(alloc, "name"));
    html_put(p, "</code>");
  }
  if (json_object_get(alloc, "association")) html_put(p, ", ");
  html_esc(p, html_str(alloc, "association"));
  if (json_object_get(alloc, "attached_stream"))
    html_putf(p, " to stream #%lld", html_num(alloc, "attached_stream"));
  html_put(p, "</dd>");
}

static void on_stream(struct page *p, const json_t *f) {
  html_put(p, " on ");
  stream_fact(p, json_object_get(f, "stream"), "serial");
  html_putf(p, ", thread %lld</dd>", html_num(f, "thread"));
}

/* What --on-error repair did about the finding, if anything. */
static void repair_fact(struct page *p, const json_t *f) {
  if (!*html_str(f, "repair")) return;
  term(p, "repair");
  html_esc(p, html_str(f, "repair"));
  html_put(p, "</dd>");
}

static void attach_facts(struct page *p, const json_t *f) {
  const json_t *call = json_object_get(f, "call"), *driver = json_object_get(f, "driver");
  char text[400];
  snprintf(text, sizeof text, "%s(hStream=%s, dptr=%s, length=%lld, flags=%s)", html_str(f, "api"),
           html_str(call, "stream"), html_str(call, "dptr"), html_num(call, "length"),
           ac_assoc_name((unsigned)html_num(call, "flags")));
  term(p, "call");
  code(p, text);
  on_stream(p, f);
  term(p, "driver");
  if (strcmp(html_str(driver, "outcome"), "crashes") == 0) {
    html_put(p, "forwarded with --guard off: the driver crashes the process on this call</dd>");
  } else {
    html_put(p, strcmp(html_str(driver, "outcome"), "guarded") == 0
                    ? "not called; the guard returned "
                    : "returned ");
    html_esc(p, html_str(driver, "name"));
    html_put(p, "</dd>");
  }
  busy_fact(p, json_object_get(f, "busy"));
  memory_fact(p, f);
  repair_fact(p, f);
}

static void launch_facts(struct page *p, const json_t *f) {
  const json_t *k = json_object_get(f, "kernel"), *arg = json_object_get(f, "argument");
  char shape[96];
  ac_launch_shape(k, shape, sizeof shape);
  term(p, "launch");
  html_put(p, "<code>");
  html_esc(p, json_object_get(k, "name") ? html_str(k, "name") : "a kernel");
  html_esc(p, shape);
  html_put(p, "</code> by ");
  code(p, html_str(f, "api"));
  if (json_is_true(json_object_get(k, "graph_node"))) html_put(p, " (a kernel node of the graph)");
  on_stream(p, f);
  term(p, "argument");
  if (strcmp(html_str(arg, "kind"), "parameter") == 0)
    html_putf(p, "parameter %lld, byte %lld: <code>", html_num(arg, "index"),
              html_num(arg, "offset"));
  else
    html_put(p, "the module's __managed__ variable <code>");
  html_esc(p, html_str(arg, "value"));
  html_put(p, "</code></dd>");
  memory_fact(p, f);
  owner_fact(p, json_object_get(f, "owner"));
  repair_fact(p, f);
}

static void copy_facts(struct page *p, const json_t *f) {
  term(p, html_str(f, "operation"));
  code(p, html_str(f, "api"));
  if (json_is_true(json_object_get(f, "graph_node"))) html_put(p, " (a node of the graph)");
  on_stream(p, f);
  size_t i;
  const json_t *x;
  json_array_foreach(json_object_get(f, "operands"), i, x) {
    term(p, html_str(x, "role"));
    code(p, html_str(x, "address"));
    html_put(p, ", ");
    html_esc(p, html_str(x, "memory"));
    html_put(p, json_is_true(json_object_get(x, "at_fault")) ? " memory, at fault</dd>"
                                                             : " memory</dd>");
  }
  memory_fact(p, f);
  owner_fact(p, json_object_get(f, "owner"));
}

static void destroy_facts(struct page *p, const json_t *f) {
  term(p, "destroy");
  code(p, html_str(f, "api"));
  on_stream(p, f);
  busy_fact(p, json_object_get(f, "busy"));
  memory_fact(p, f);
}

static void host_access_facts(struct page *p, const json_t *f) {
  const json_t *access = json_object_get(f, "access");
  term(p, "access");
  html_esc(p, html_str(access, "kind"));
  html_put(p, " of ");
  code(p, html_str(access, "address"));
  html_put(p, " by the CPU (seen by ");
  html_esc(p, html_str(access, "via"));
  html_putf(p, ") on thread %lld</dd>", html_num(f, "thread"));
  busy_fact(p, json_object_get(f, "busy"));
  memory_fact(p, f);
  repair_fact(p, f);
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
    if (strcmp(kinds[i].kind, html_str(f, "kind")) == 0) return (int)i;
  return -1;
}

static void semantics_fact(struct page *p, const json_t *f) {
  const json_t *s = json_object_get(f, "semantics");
  if (!json_is_object(s)) return;
  bool legal = strcmp(html_str(s, "on_this_device"), "legal") == 0;
  term(p, "semantics");
  html_put(p, legal ? "legal on this device (" : "on this device (");
  html_esc(p, html_str(s, "device"));
  html_put(p, legal ? "); " : ") a race only where the busy work uses this memory; ");
  html_put(p, "breaks on devices without concurrent managed access (Jetson, Windows); "
              "<code>--semantics device</code> judges by this device</dd>");
}

static void facts(struct page *p, const json_t *f) {
  int k = kind_of(f);
  html_put(p, "<dl class=\"facts\">");
  if (k >= 0) kinds[k].facts(p, f);
  semantics_fact(p, f);
  html_put(p, "</dl>");
}

/* The operations before the finding, as a plain list (the timeline draws them). */
static void operations_list(struct page *p, const json_t *timeline) {
  const json_t *streams = json_object_get(timeline, "streams"), *s, *op;
  size_t i, j;
  if (!json_is_object(timeline)) return;
  html_putf(p,
            "<details class=\"ops\"><summary>Operations before it (the last %lld per stream)"
            "</summary>",
            html_num(timeline, "limit"));
  json_array_foreach(streams, i, s) {
    html_putf(p, "<h5>%s stream #%lld (",
              strcmp(html_str(s, "role"), "call") == 0 ? "call's" : "other side's",
              html_num(s, "stream"));
    html_esc(p, html_str(s, "kind"));
    html_putf(p, "): %lld of %lld operations</h5>", html_num(s, "shown"), html_num(s, "recorded"));
    const json_t *created = json_object_get(s, "created");
    if (json_is_object(created)) {
      char title[160];
      snprintf(title, sizeof title, "Stream #%lld made by %s (thread %lld) at",
               html_num(s, "stream"), html_str(created, "api"), html_num(created, "thread"));
      stack(p, title, json_object_get(created, "stack"));
    }
    html_put(p, "<ol>");
    json_array_foreach(json_object_get(s, "operations"), j, op) {
      html_putf(p, "<li>@%lld ", html_num(op, "tick"));
      html_esc(p, json_object_get(op, "api") ? html_str(op, "api") : html_str(op, "kind"));
      if (json_object_get(op, "kernel")) {
        html_put(p, " <code>");
        html_esc(p, html_str(op, "kernel"));
        html_put(p, "</code>");
      }
      html_putf(p, " (thread %lld)</li>", html_num(op, "thread"));
    }
    html_put(p, "</ol>");
  }
  html_put(p, "</details>");
}

void html_finding(struct page *p, const json_t *f, size_t index) {
  const char *rule = html_str(f, "rule"), *sev = html_str(f, "severity");
  bool sup = html_is_suppressed(f);
  html_putf(p, "<article class=\"finding sev-%s%s\" id=\"f%zu\" data-index=\"%zu\" data-kind=\"",
            sev, sup ? " suppressed" : "", index, index);
  html_esc(p, html_str(f, "kind"));
  html_put(p, "\" data-rule=\"");
  html_esc(p, rule);
  html_put(p, "\" data-pids=\"");
  size_t i;
  const json_t *pid;
  json_array_foreach(json_object_get(f, "processes"), i, pid)
      html_putf(p, "%s%lld", i ? " " : "", (long long)json_integer_value(pid));
  html_putf(p, "\"><h3><span class=\"pill sev-%s\">%s</span> ", sev, sev);
  html_esc(p, rule);
  html_put(p, " <span class=\"name\">");
  html_esc(p, html_str(f, "name"));
  html_putf(p, "</span> <span class=\"count\">&times;%lld</span>", html_num(f, "count"));
  if (json_object_get(f, "threads")) /* the same access by several threads */
    html_putf(p, " <span class=\"count\">%lld threads</span>", html_num(f, "threads"));
  if (sup) html_put(p, " <span class=\"pill suppressed\">suppressed</span>");
  html_put(p, "</h3><p class=\"message\">");
  html_esc(p, html_str(f, "message"));
  html_put(p, ".</p><p class=\"fix\"><b>Fix:</b> ");
  html_esc(p, html_str(f, "fix"));
  html_put(p, ". <a class=\"doc\" href=\"#page-");
  html_esc(p, rule);
  html_put(p, "\">about ");
  html_esc(p, rule);
  html_put(p, "</a>");
  char *url = ac_rule_page_url(rule, p->docs_url);
  if (url) { /* where the pages are published: --docs-url */
    html_put(p, " <a class=\"doc\" href=\"");
    html_esc(p, url);
    html_put(p, "\">");
    html_esc(p, url);
    html_put(p, "</a>");
    free(url);
  }
  html_put(p, "</p>");
  if (sup) {
    html_put(p, "<p class=\"supby\">Suppressed by <code>");
    html_esc(p, html_str(json_object_get(f, "suppressed"), "line"));
    html_put(p, "</code> (");
    html_esc(p, html_str(json_object_get(f, "suppressed"), "by"));
    html_put(p, ")</p>");
  }
  facts(p, f);
  html_put(p, "<div class=\"stacks\">");
  int k = kind_of(f);
  stack(p, k >= 0 ? kinds[k].this_side : "This side", json_object_get(f, "stack"));
  other_side(p, f);
  html_put(p, "</div>");
  operations_list(p, json_object_get(f, "timeline"));
  html_put(p, "</article>\n");
}
