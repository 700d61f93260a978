/* suppressions.c - silencing findings that come from code the user does not
 * own, one line per rule and place.
 *
 * A suppression file holds lines of RULE:PATTERN. RULE is a rule id (AC202),
 * a rule name (host-access-global-busy) or * for every rule; PATTERN is a
 * glob matched against each frame of the finding's stack: its function, its
 * source file (whole path or file name) and its module (whole path or file
 * name), e.g. AC202:libthirdparty.so or AC301:*legacy_kernel*. Blank lines
 * and lines starting with # are ignored; anything else that is not a valid
 * line is an error naming the file and the line, and the file is not used
 * (a half-read file would silence less than its author meant, silently).
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

static bool add(struct ac_suppressions *set, const char *rule, const char *pattern,
                const char *file, int line) {
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
    char *rule = trim(l), *pattern = trim(colon + 1);
    if (!rule_is_known(rule)) {
      snprintf(err, errlen, "%s:%d: unknown rule '%.40s' (an id like AC202, a rule name, or *)",
               file, line_no, rule);
      goto fail;
    }
    if (!*pattern) {
      snprintf(err, errlen, "%s:%d: empty pattern after '%s:'", file, line_no, rule);
      goto fail;
    }
    if (strlen(rule) >= sizeof set->items[0].rule ||
        strlen(pattern) >= sizeof set->items[0].pattern) {
      snprintf(err, errlen, "%s:%d: rule or pattern too long", file, line_no);
      goto fail;
    }
    if (!add(set, rule, pattern, file, line_no)) {
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

static bool frame_matches(const char *pattern, const json_t *frame) {
  const char *function = ac_json_str(frame, "function");
  return (*function && fnmatch(pattern, function, 0) == 0) ||
         glob_matches_path(pattern, ac_json_str(frame, "file")) ||
         glob_matches_path(pattern, ac_json_str(frame, "module"));
}

const struct ac_suppression *ac_suppressions_match(const struct ac_suppressions *set,
                                                   const char *rule_id, const json_t *stack) {
  const struct ac_rule_info *info = ac_rule_info(ac_rule_by_id(rule_id));
  for (size_t i = 0; i < set->count; i++) {
    const struct ac_suppression *s = &set->items[i];
    if (strcmp(s->rule, "*") != 0 && strcmp(s->rule, rule_id) != 0 &&
        !(info && strcmp(s->rule, info->name) == 0))
      continue;
    size_t j;
    const json_t *frame;
    json_array_foreach(stack, j, frame) if (frame_matches(s->pattern, frame)) return s;
  }
  return NULL;
}

/* The pattern a user would write for this stack: the program's own frame by
 * function name, else by file name, else by module name; glob characters in
 * it are escaped so it matches exactly that. */
bool ac_suppression_suggest(const char *rule_id, const json_t *stack, char *buf, size_t len) {
  const json_t *frame = ac_primary_frame(stack);
  if (!frame) return false;
  const char *what = ac_json_str(frame, "function");
  if (!*what) what = ac_json_str(frame, "file");
  if (!*what) what = ac_json_str(frame, "module");
  const char *slash = what[0] == '/' ? strrchr(what, '/') : NULL;
  if (slash) what = slash + 1;
  if (!*what) return false;
  size_t out = (size_t)snprintf(buf, len, "%s:", rule_id);
  for (const char *p = what; *p && out + 3 < len; p++) {
    if (strchr("*?[\\", *p)) buf[out++] = '\\';
    buf[out++] = *p;
  }
  if (out >= len) return false;
  buf[out] = 0;
  return true;
}
