/* html.c - the final report as one self-contained HTML page.
 *
 * Built from the merged JSON report (merge.c), like SARIF. The page opens
 * offline: its style and script are inside it and its Content-Security-Policy
 * forbids every fetch. Without JavaScript it is complete as text: the header,
 * the summary table and each finding (message, fix, both sides' stacks, the
 * operations before it: html_finding.c). The script (html_page.inc) adds filters and draws the
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

#include "html_internal.h"

#define MAX_FINDINGS 300 /* findings shown in full (the table counts all) */

#include "html_page.inc" /* HTML_STYLE, HTML_SCRIPT */

void html_put_n(struct page *p, const char *s, size_t n) {
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

void html_put(struct page *p, const char *s) {
  html_put_n(p, s, strlen(s));
}

void html_putf(struct page *p, const char *fmt, ...) {
  char *s = NULL;
  va_list ap;
  va_start(ap, fmt);
  int n = vasprintf(&s, fmt, ap);
  va_end(ap);
  if (n < 0) {
    p->ok = false;
    return;
  }
  html_put_n(p, s, (size_t)n);
  free(s);
}

/* Text as HTML: the five characters that mean something escaped. */
void html_esc(struct page *p, const char *s) {
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
      html_put(p, e);
    else
      html_put_n(p, c, 1);
  }
}

const char *html_str(const json_t *o, const char *key) {
  return ac_json_str(o, key);
}

long long html_num(const json_t *o, const char *key) {
  return (long long)json_integer_value(json_object_get(o, key));
}

bool html_is_suppressed(const json_t *f) {
  return json_is_object(json_object_get(f, "suppressed"));
}

/* ---- the header and the summary table ---- */

/* The options the run had, each with its value. */
static void options_list(struct page *p, const json_t *options) {
  const char *name;
  const json_t *value;
  html_put(p, "<details class=\"options\"><summary>Options</summary><dl>");
  json_object_foreach((json_t *)options, name, value) {
    html_put(p, "<dt>--");
    for (const char *c = name; *c; c++)
      html_put_n(p, *c == '_' ? "-" : c, 1);
    html_put(p, "</dt><dd><code>");
    html_esc(p, *json_string_value(value) ? json_string_value(value) : "(none)");
    html_put(p, "</code></dd>");
  }
  html_put(p, "</dl></details>");
}

/* Which attachcheck made the report, when, from what command and options. */
static void made_by(struct page *p, const json_t *report) {
  const json_t *tool = json_object_get(report, "tool");
  char text[200];
  snprintf(text, sizeof text, "%s %s \u00b7 report schema %lld \u00b7 made ",
           html_str(tool, "name"), html_str(tool, "version"), html_num(report, "schema_version"));
  html_put(p, "<p class=\"made\">");
  html_esc(p, text);
  html_put(p, "<time>");
  html_esc(p, html_str(report, "created"));
  html_put(p, "</time></p>");
}

/* The command, how many processes, the GPUs. */
static void command_line(struct page *p, const json_t *proc, const json_t *sum) {
  const json_t *argv = json_object_get(proc, "argv"), *a;
  size_t i;
  html_put(p, "<p class=\"run\">");
  if (json_array_size(argv)) {
    html_put(p, "<code>");
    json_array_foreach(argv, i, a) {
      if (i) html_put(p, " ");
      html_esc(p, json_string_value(a));
    }
    html_put(p, "</code> ");
  }
  html_putf(p, "&middot; %lld process%s", html_num(sum, "processes"),
            html_num(sum, "processes") == 1 ? "" : "es");
  json_array_foreach(json_object_get(proc, "gpus"), i, a) {
    html_put(p, " &middot; ");
    html_esc(p, json_string_value(a));
  }
  html_put(p, "</p>");
}

/* The findings by severity, their occurrences, and what was not checked. */
static void counts(struct page *p, const json_t *sum) {
  html_putf(p,
            "<p class=\"counts\"><span class=\"pill sev-error\">%lld error%s</span> "
            "<span class=\"pill sev-warning\">%lld warning%s</span> "
            "<span class=\"pill sev-note\">%lld note%s</span> "
            "<span class=\"pill suppressed\">%lld suppressed</span> %lld occurrence%s</p>",
            html_num(sum, "errors"), html_num(sum, "errors") == 1 ? "" : "s",
            html_num(sum, "warnings"), html_num(sum, "warnings") == 1 ? "" : "s",
            html_num(sum, "notes"), html_num(sum, "notes") == 1 ? "" : "s",
            html_num(sum, "suppressed"), html_num(sum, "occurrences"),
            html_num(sum, "occurrences") == 1 ? "" : "s");
  size_t i;
  const json_t *what;
  json_array_foreach(json_object_get(sum, "not_checked"), i, what) {
    html_put(p, "<p class=\"unchecked\">Not checked: ");
    html_esc(p, json_string_value(what));
    html_put(p, "</p>");
  }
}

static void header(struct page *p, const json_t *report) {
  const json_t *proc = json_object_get(report, "process"),
               *sum = json_object_get(report, "summary");
  html_put(p, "<header><h1>attachcheck report</h1>");
  made_by(p, report);
  command_line(p, proc, sum);
  counts(p, sum);
  if (json_is_object(json_object_get(proc, "options")))
    options_list(p, json_object_get(proc, "options"));
  html_put(p, "</header>\n");
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
    enum ac_rule_id id = ac_rule_by_id(html_str(f, "rule"));
    if (id == AC_RULE_COUNT) continue;
    struct rule_row *r = &rows[id];
    if (html_is_suppressed(f))
      r->suppressed++;
    else
      r->findings++;
    r->occurrences += html_num(f, "count");
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
  html_put(
      p, "<section id=\"summary\"><h2>Summary</h2>\n<table class=\"summary\"><thead><tr><th>rule"
         "</th><th>name</th><th>severity</th><th class=\"n\">findings</th><th class=\"n\">"
         "occurrences</th><th class=\"n\">suppressed</th><th>processes</th></tr></thead><tbody>\n");
  int shown = 0;
  for (int i = 0; i < AC_RULE_COUNT; i++) {
    struct rule_row *r = &rows[i];
    if (!r->findings && !r->suppressed) continue;
    const struct ac_rule_info *info = ac_rule_info((enum ac_rule_id)i);
    const char *sev = ac_severity_name(info->severity);
    html_putf(p,
              "<tr class=\"%s\" data-rule=\"%s\"><td><a href=\"#rule-%s\">%s</a></td><td>%s</td>"
              "<td><span class=\"pill sev-%s\">%s</span></td><td class=\"n\">%d</td>"
              "<td class=\"n\">%lld</td><td class=\"n\">%d</td><td>",
              r->findings ? "" : "suppressed", info->id, info->id, info->id, info->name, sev, sev,
              r->findings, r->occurrences, r->suppressed);
    const char *pid;
    json_t *v;
    int n = 0;
    json_object_foreach(r->pids, pid, v) html_putf(p, "%s%s", n++ ? ", " : "", pid);
    html_put(p, "</td></tr>\n");
    json_decref(r->pids);
    shown++;
  }
  if (!shown) html_put(p, "<tr><td colspan=\"7\" class=\"none\">No findings.</td></tr>\n");
  html_put(p, "</tbody></table></section>\n");
}

/* ---- the data the script draws from ---- */

/* What the timeline needs of a finding, small. */
static json_t *timeline_entry(const json_t *f, size_t index) {
  const json_t *busy = json_object_get(f, "busy");
  json_t *e = json_pack("{s:I, s:s, s:s, s:s, s:s, s:I, s:I, s:b, s:O}", "index", (json_int_t)index,
                        "rule", html_str(f, "rule"), "name", html_str(f, "name"), "severity",
                        html_str(f, "severity"), "api", html_str(f, "api"), "pid",
                        html_num(f, "pid"), "thread", html_num(f, "thread"), "suppressed",
                        html_is_suppressed(f), "timeline", json_object_get(f, "timeline"));
  if (!e) return NULL;
  json_object_set_new(e, "access", json_boolean(json_is_object(json_object_get(f, "access"))));
  json_object_set(e, "pids", json_object_get(f, "processes"));
  const json_t *driver = json_object_get(f, "driver");
  if (json_is_object(driver)) { /* an attach's: the others were not refused */
    json_object_set_new(e, "outcome", json_string(html_str(driver, "outcome")));
    json_object_set_new(e, "result", json_integer(html_num(driver, "result")));
    json_object_set_new(e, "result_name", json_string(html_str(driver, "name")));
  }
  if (!json_is_object(busy)) busy = json_object_get(f, "owner");
  if (json_is_object(busy)) json_object_set_new(e, "busy", json_integer(html_num(busy, "stream")));
  const json_t *origin = json_object_get(json_object_get(f, "allocation"), "origin");
  if (json_is_object(origin))
    json_object_set_new(e, "alloc_thread", json_integer(html_num(origin, "thread")));
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
  html_put(p, "<script type=\"application/json\" id=\"ac-data\">");
  html_put(p, text);
  html_put(p, "</script>\n");
  free(text);
}

/* The page of each rule with findings, inside the report: a link to
 * docs/rules/ would be dead beside a report copied out of the checkout. */
static void rule_pages(struct page *p, const json_t *findings) {
  bool has[AC_RULE_COUNT] = {0};
  size_t i;
  const json_t *f;
  json_array_foreach(findings, i, f) {
    enum ac_rule_id id = ac_rule_by_id(html_str(f, "rule"));
    if (id != AC_RULE_COUNT) has[id] = true;
  }
  html_put(p, "<section id=\"rules\"><h2>Rules</h2>\n");
  for (int r = 0; r < AC_RULE_COUNT; r++) {
    const struct ac_rule_info *info = ac_rule_info((enum ac_rule_id)r);
    char *text = has[r] ? ac_rule_page_text(info->id) : NULL;
    if (!text) continue;
    html_putf(p, "<details class=\"rule-page\" id=\"page-%s\"><summary>%s %s</summary><pre>",
              info->id, info->id, info->name);
    html_esc(p, text);
    html_put(p, "</pre></details>\n");
    free(text);
  }
  html_put(p, "</section>\n");
}

char *ac_html_from_report(const json_t *report) {
  struct page p = {NULL, 0, 0, true, ""};
  p.docs_url =
      ac_json_str(json_object_get(json_object_get(report, "process"), "options"), "docs_url");
  const json_t *findings = json_object_get(report, "findings");
  size_t total = json_array_size(findings), shown = total < MAX_FINDINGS ? total : MAX_FINDINGS;
  html_put(&p, "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
               "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; "
               "style-src 'unsafe-inline'; script-src 'unsafe-inline'\">"
               "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
               "<title>attachcheck report</title><style>");
  html_put(&p, HTML_STYLE);
  html_put(&p, "</style></head><body>\n");
  header(&p, report);
  summary_table(&p, findings);
  html_put(&p,
           "<section id=\"timeline\"><h2>Timeline</h2><noscript><p class=\"note\">The timeline is "
           "drawn by the page's script; every finding is listed below with the operations before "
           "it.</p></noscript><div id=\"filters\" hidden></div><div id=\"lanes\"></div>"
           "<div id=\"selected\"></div></section>\n");
  html_put(&p, "<section id=\"findings\"><h2>Findings</h2>\n");
  bool anchored[AC_RULE_COUNT] = {0};
  for (size_t i = 0; i < shown; i++) {
    const json_t *f = json_array_get(findings, i);
    enum ac_rule_id id = ac_rule_by_id(html_str(f, "rule"));
    if (id != AC_RULE_COUNT && !anchored[id]) { /* the summary table links to the first */
      anchored[id] = true;
      html_putf(&p, "<a id=\"rule-%s\"></a>", ac_rule_info(id)->id);
    }
    html_finding(&p, f, i);
  }
  if (shown < total)
    html_putf(&p,
              "<p class=\"cut\" id=\"cut\">%zu more findings are not shown here (the page holds "
              "the first %d); the JSON report (--json) has them all.</p>\n",
              total - shown, MAX_FINDINGS);
  html_put(&p, "</section>\n");
  rule_pages(&p, findings);
  data_block(&p, findings, shown);
  html_put(&p, "<script>");
  html_put(&p, HTML_SCRIPT);
  html_put(&p, "</script></body></html>\n");
  if (!p.ok) {
    free(p.text);
    return NULL;
  }
  return p.text;
}
