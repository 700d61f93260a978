/* suppressions.c - silencing findings that come from code the user does not
 * own, one line per rule and place.
 *
 * A suppression file holds lines of RULE:PATTERN. RULE is a rule id (AC202),
 * a rule name (host-access-global-busy) or * for every rule. PATTERN is one
 * frame pattern matched against each frame of the finding's stack, or, after
 * a ^, a sequence of them separated by ; matched against the program's own
 * frames from the top (the first frame in the program's own code, as SARIF's
 * primary location) outward, as valgrind's suppression blocks are. A frame
 * pattern is a glob over the frame's function, its source file (whole path or
 * file name) and its module (whole path or file name), e.g. libthirdparty.so
 * or *legacy_kernel*; or FILE:LINE, a glob over the source file and the line
 * number (attach_mistakes.c:53). Blank lines and lines starting with # are
 * ignored; anything else that is not a valid line is an error naming the file
 * and the line, and the file is not used (a half-read file would silence less
 * than its author meant, silently).
 *
 * --gen-suppressions suggests the narrowest line that matches the same
 * finding in the next run: ^ and the program's own top frames, each by
 * FILE:LINE (by function or module where there is no line).
 *
 * A suppressed finding is still written to the report (marked, and counted
 * in the summary), never dropped: only stderr and the exit status skip it.
 */
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report.h"
#include "sys.h"

/* The rule part of a line: an id, a name, or "*". */
static bool rule_is_known(const char *rule) {
  if (strcmp(rule, "*") == 0) return true;
  if (ac_rule_by_id(rule) < AC_RULE_COUNT) return true;
  for (int i = 0; i < AC_RULE_COUNT; i++)
    if (strcmp(ac_rule_info((enum ac_rule_id)i)->name, rule) == 0) return true;
  return false;
}

static char *trim(char *s) {
  while (*s == ' ' || *s == '\t')
    s++;
  size_t n = strlen(s);
  while (n && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\r' || s[n - 1] == '\n'))
    s[--n] = 0;
  return s;
}

static bool add(struct ac_suppressions *set, const char *rule, const char *problem,
                const char *pattern, const char *file, int line) {
  if (set->count == set->cap) {
    size_t cap = set->cap ? 2 * set->cap : 8;
    struct ac_suppression *grown = realloc(set->items, cap * sizeof *grown);
    if (!grown) return false;
    set->items = grown;
    set->cap = cap;
  }
  struct ac_suppression *s = &set->items[set->count];
  memset(s, 0, sizeof *s);
  snprintf(s->rule, sizeof s->rule, "%s", rule);
  snprintf(s->problem, sizeof s->problem, "%s", problem);
  snprintf(s->pattern, sizeof s->pattern, "%s", pattern);
  snprintf(s->source, sizeof s->source, "%s:%d", file, line);
  set->count++;
  return true;
}

bool ac_suppressions_parse(struct ac_suppressions *set, const char *text, size_t len,
                           const char *file, char *err, size_t errlen) {
  size_t before = set->count;
  int line_no = 0;
  for (size_t at = 0; at < len;) {
    const char *nl = memchr(text + at, '\n', len - at);
    size_t n = nl ? (size_t)(nl - (text + at)) : len - at;
    char line[1024];
    line_no++;
    if (n >= sizeof line) {
      snprintf(err, errlen, "%s:%d: line too long (at most %zu characters)", file, line_no,
               sizeof line - 1);
      goto fail;
    }
    memcpy(line, text + at, n);
    line[n] = 0;
    at += n + 1;
    if (memchr(line, 0, n)) {
      snprintf(err, errlen, "%s:%d: not text (a NUL byte)", file, line_no);
      goto fail;
    }
    char *l = trim(line);
    if (!*l || *l == '#') continue;
    char *colon = strchr(l, ':');
    if (!colon) {
      snprintf(err, errlen, "%s:%d: expected RULE:PATTERN, got '%.80s'", file, line_no, l);
      goto fail;
    }
    *colon = 0;
    char *rule = trim(l), *pattern = trim(colon + 1), *slash = strchr(rule, '/');
    const char *problem = "";
    if (slash) { /* RULE/PROBLEM: one operand of a launch or copy */
      *slash = 0;
      problem = trim(slash + 1);
      rule = trim(rule);
    }
    if (!rule_is_known(rule)) {
      snprintf(err, errlen, "%s:%d: unknown rule '%.40s' (an id like AC202, a rule name, or *)",
               file, line_no, rule);
      goto fail;
    }
    if (!*pattern) {
      snprintf(err, errlen, "%s:%d: empty pattern after '%s:'", file, line_no, rule);
      goto fail;
    }
    if (slash && !*problem) {
      snprintf(err, errlen, "%s:%d: empty problem after '%s/'", file, line_no, rule);
      goto fail;
    }
    if (strlen(rule) >= sizeof set->items[0].rule ||
        strlen(problem) >= sizeof set->items[0].problem ||
        strlen(pattern) >= sizeof set->items[0].pattern) {
      snprintf(err, errlen, "%s:%d: rule or pattern too long", file, line_no);
      goto fail;
    }
    if (!add(set, rule, problem, pattern, file, line_no)) {
      snprintf(err, errlen, "%s:%d: out of memory", file, line_no);
      goto fail;
    }
  }
  return true;
fail:
  set->count = before;
  return false;
}

/* A suppression file is small: reading is bounded, and anything but a
 * regular file (a FIFO that never ends, /dev/zero) is refused. */
#define AC_SUPPRESSIONS_MAX_BYTES (1u << 20)

static bool load_file(struct ac_suppressions *set, const char *path, char *err, size_t errlen) {
  char why[600];
  size_t len = 0;
  char *text = ac_sys_read_small_file(path, AC_SUPPRESSIONS_MAX_BYTES, &len, why, sizeof why);
  if (!text) return snprintf(err, errlen, "suppression file: %s", why), false;
  bool ok = ac_suppressions_parse(set, text, len, path, err, errlen);
  free(text);
  return ok;
}

bool ac_suppressions_load(struct ac_suppressions *set, const char *paths, char *err,
                          size_t errlen) {
  if (!paths) return true;
  char *copy = strdup(paths), *save = NULL;
  if (!copy) return snprintf(err, errlen, "out of memory"), false;
  bool ok = true;
  for (char *p = strtok_r(copy, ":", &save); p && ok; p = strtok_r(NULL, ":", &save))
    ok = load_file(set, p, err, errlen);
  free(copy);
  return ok;
}

void ac_suppressions_free(struct ac_suppressions *set) {
  free(set->items);
  memset(set, 0, sizeof *set);
}

static bool glob_matches_path(const char *pattern, const char *path) {
  if (!*path) return false;
  const char *base = strrchr(path, '/');
  return fnmatch(pattern, path, 0) == 0 || (base && fnmatch(pattern, base + 1, 0) == 0);
}

/* FILE:LINE: the line number after the last ':' of spec (0 when it is not
 * one), the file glob before it into file. */
static long file_line(const char *spec, char *file, size_t len) {
  const char *colon = strrchr(spec, ':');
  if (!colon || colon == spec || !colon[1] || (size_t)(colon - spec) >= len) return 0;
  char *end;
  long line = strtol(colon + 1, &end, 10);
  if (*end || line <= 0 || colon[1] < '0' || colon[1] > '9') return 0;
  memcpy(file, spec, (size_t)(colon - spec));
  file[colon - spec] = 0;
  return line;
}

/* One frame pattern against one frame. */
static bool frame_matches(const char *spec, const json_t *frame) {
  char file[512];
  long line = file_line(spec, file, sizeof file);
  if (line)
    return json_integer_value(json_object_get(frame, "line")) == line &&
           glob_matches_path(file, ac_json_str(frame, "file"));
  const char *function = ac_json_str(frame, "function");
  return (*function && fnmatch(spec, function, 0) == 0) ||
         glob_matches_path(spec, ac_json_str(frame, "file")) ||
         glob_matches_path(spec, ac_json_str(frame, "module"));
}

/* The next frame pattern of a ^-sequence, at *at (an unescaped ';' ends it). */
static bool next_spec(const char **at, char *spec, size_t len) {
  const char *p = *at;
  size_t n = 0;
  if (!*p) return false;
  for (; *p && !(*p == ';'); p++) {
    if (*p == '\\' && p[1] && n + 2 < len) spec[n++] = *p++;
    if (n + 1 < len) spec[n++] = *p;
  }
  spec[n] = 0;
  *at = *p ? p + 1 : p;
  return true;
}

/* The program's own frames from the top, each matching the sequence's next
 * pattern. Without an own frame, the stack's frames from the first. */
static bool sequence_matches(const char *sequence, const json_t *stack) {
  size_t i = 0, n = json_array_size(stack);
  bool any_own = false;
  for (size_t j = 0; j < n && !any_own; j++)
    any_own = ac_frame_is_programs_own(json_array_get(stack, j));
  char spec[512];
  const char *at = sequence;
  while (next_spec(&at, spec, sizeof spec)) {
    while (i < n && any_own && !ac_frame_is_programs_own(json_array_get(stack, i)))
      i++;
    if (i >= n || !frame_matches(spec, json_array_get(stack, i))) return false;
    i++;
  }
  return true;
}

static bool pattern_matches(const char *pattern, const json_t *stack) {
  if (pattern[0] == '^') return sequence_matches(pattern + 1, stack);
  size_t j;
  const json_t *frame;
  json_array_foreach(stack, j, frame) if (frame_matches(pattern, frame)) return true;
  return false;
}

void ac_finding_problem(const json_t *f, char *buf, size_t len) {
  const json_t *arg = json_object_get(f, "argument"), *x;
  size_t i;
  buf[0] = 0;
  if (strcmp(ac_json_str(arg, "kind"), "parameter") == 0)
    snprintf(buf, len, "arg%lld", (long long)json_integer_value(json_object_get(arg, "index")));
  else if (json_is_object(arg))
    snprintf(buf, len, "variable");
  json_array_foreach(json_object_get(f, "operands"), i, x) {
    if (json_is_true(json_object_get(x, "at_fault")))
      snprintf(buf, len, "%s", ac_json_str(x, "role"));
  }
}

const struct ac_suppression *ac_suppressions_match(const struct ac_suppressions *set,
                                                   const json_t *finding) {
  const char *rule_id = ac_json_str(finding, "rule");
  const json_t *stack = json_object_get(finding, "stack");
  const struct ac_rule_info *info = ac_rule_info(ac_rule_by_id(rule_id));
  char problem[48];
  ac_finding_problem(finding, problem, sizeof problem);
  for (size_t i = 0; i < set->count; i++) {
    const struct ac_suppression *s = &set->items[i];
    if (strcmp(s->rule, "*") != 0 && strcmp(s->rule, rule_id) != 0 &&
        !(info && strcmp(s->rule, info->name) == 0))
      continue;
    if (s->problem[0] && fnmatch(s->problem, problem, 0) != 0) continue;
    if (pattern_matches(s->pattern, stack)) return s;
  }
  return NULL;
}

/* Appends text to buf at *out, its glob characters (and ';') escaped so it
 * matches exactly itself; false when it does not fit. */
static bool append_escaped(char *buf, size_t len, size_t *out, const char *text) {
  for (const char *p = text; *p; p++) {
    if (strchr("*?[\\;", *p)) {
      if (*out + 1 >= len) return false;
      buf[(*out)++] = '\\';
    }
    if (*out + 1 >= len) return false;
    buf[(*out)++] = *p;
  }
  buf[*out] = 0;
  return true;
}

/* How one frame is named in a suggestion: FILE:LINE (its file name), else
 * its function, else its module's file name. */
static bool name_frame(const json_t *frame, char *buf, size_t len, size_t *out) {
  const char *file = ac_json_str(frame, "file"), *what = ac_json_str(frame, "function");
  json_int_t line = json_integer_value(json_object_get(frame, "line"));
  if (*file && line > 0) {
    const char *base = strrchr(file, '/');
    char number[24];
    snprintf(number, sizeof number, ":%lld", (long long)line);
    return append_escaped(buf, len, out, base ? base + 1 : file) &&
           append_escaped(buf, len, out, number);
  }
  if (!*what) {
    what = ac_json_str(frame, "module");
    const char *slash = strrchr(what, '/');
    if (slash) what = slash + 1;
  }
  return *what && append_escaped(buf, len, out, what);
}

/* The narrowest line that matches this finding again: ^ and the program's
 * own frames from the top, at most AC_SUGGESTED_FRAMES of them. */
#define AC_SUGGESTED_FRAMES 4

bool ac_suppression_suggest(const json_t *finding, char *buf, size_t len) {
  const json_t *stack = json_object_get(finding, "stack");
  const json_t *top = ac_primary_frame(stack);
  if (!top) return false;
  bool own = ac_frame_is_programs_own(top);
  char problem[48];
  ac_finding_problem(finding, problem, sizeof problem); /* two wrong arguments: two lines */
  size_t out = (size_t)snprintf(buf, len, "%s%s%s:^", ac_json_str(finding, "rule"),
                                problem[0] ? "/" : "", problem),
         i, named = 0;
  if (out >= len) return false;
  const json_t *frame;
  bool reached = false;
  json_array_foreach(stack, i, frame) {
    reached = reached || frame == top;
    if (!reached || (own && !ac_frame_is_programs_own(frame))) continue;
    if (named == AC_SUGGESTED_FRAMES) break;
    size_t before = out;
    if (named) {
      if (out + 2 >= len) return false;
      buf[out++] = ';';
      buf[out] = 0;
    }
    if (!name_frame(frame, buf, len, &out)) {
      out = before; /* a frame without a name ends the sequence */
      buf[out] = 0;
      break;
    }
    named++;
  }
  return named > 0;
}
