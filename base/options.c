/* options.c - parsing and printing the options of options.inc. */
#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/auxv.h>

#include "options.h"

#define AC_OPT_IS_PATH_BOOL false
#define AC_OPT_IS_PATH_INT false
#define AC_OPT_IS_PATH_COUNT false
#define AC_OPT_IS_PATH_PATH true
#define AC_OPT_IS_PATH_PATHS true
#define AC_OPT_IS_PATH_CHOICE false
#define AC_OPT_IS_PATH_URL false

const struct ac_option_info ac_option_table[] = {
#define AC_OPTION(Type, Name, Scope, Default, Metavar, Desc)                                       \
  {#Name, AC_SCOPE_##Scope, Default, Metavar, Desc, AC_OPT_IS_PATH_##Type},
#include "options.inc"
#undef AC_OPTION
};
const size_t ac_option_count = sizeof ac_option_table / sizeof ac_option_table[0];

void ac_option_spell(size_t index, char *cli, char *env, size_t len) {
  const char *name = ac_option_table[index].name;
  snprintf(env, len, "ATTACHCHECK_");
  size_t i = 0, e = strlen(env);
  for (; name[i] && i + 1 < len && e + 1 < len; i++, e++) {
    cli[i] = name[i] == '_' ? '-' : name[i];
    env[e] = (char)toupper((unsigned char)name[i]);
  }
  cli[i] = 0;
  env[e] = 0;
}

static bool parse_bool(const char *v, bool *out, const char *choices) {
  (void)choices;
  static const char *yes[] = {"on", "yes", "1", "true"}, *no[] = {"off", "no", "0", "false"};
  for (int i = 0; i < 4; i++) {
    if (strcasecmp(v, yes[i]) == 0) return *out = true, true;
    if (strcasecmp(v, no[i]) == 0) return *out = false, true;
  }
  return false;
}

static bool parse_int(const char *v, long *out, const char *choices) {
  (void)choices;
  char *end;
  errno = 0;
  long n = strtol(v, &end, 10);
  if (errno || end == v || *end || n < 0 || n > 255) return false;
  *out = n;
  return true;
}

static bool parse_count(const char *v, long *out, const char *choices) {
  (void)choices;
  char *end;
  errno = 0;
  long n = strtol(v, &end, 10);
  if (errno || end == v || *end || n < 0 || n > 1000000000L) return false;
  *out = n;
  return true;
}

static bool parse_path(const char *v, const char **out, const char *choices) {
  (void)choices;
  *out = v;
  return true;
}

/* A list grows by one path per use; the first use replaces the default. The
 * joined text lives as long as the process, as options do. */
static bool parse_paths(const char *v, const char **out, const char *choices) {
  (void)choices;
  static char *owned[64];
  static size_t owned_count;
  if (!*out || !**out || !*v) return *out = v, true;
  if (owned_count == sizeof owned / sizeof *owned) return false; /* more files than anyone needs */
  char *joined = malloc(strlen(*out) + strlen(v) + 2);
  if (!joined) return false;
  sprintf(joined, "%s:%s", *out, v);
  owned[owned_count++] = joined; /* reachable: not a leak */
  *out = joined;
  return true;
}

/* An absolute address a report may link to (a page beside a report file, or
 * in code scanning's view, reaches no relative one), or none. */
static bool parse_url(const char *v, const char **out, const char *choices) {
  (void)choices;
  const char *rest = strncmp(v, "https://", 8) == 0  ? v + 8
                     : strncmp(v, "http://", 7) == 0 ? v + 7
                                                     : NULL;
  if (*v && (!rest || !*rest || *rest == '/' || strpbrk(v, " \t\"<>"))) return false;
  *out = v;
  return true;
}

/* One of the '|'-separated words of choices. */
/* The place of v in "a|b|c", or -1. */
static int choice_index(const char *v, const char *choices) {
  size_t n = strlen(v);
  int index = 0;
  for (const char *c = choices; *c; index++) {
    const char *end = strchr(c, '|');
    size_t len = end ? (size_t)(end - c) : strlen(c);
    if (len == n && strncmp(c, v, n) == 0) return index;
    if (!end) break;
    c = end + 1;
  }
  return -1;
}

static bool parse_choice(const char *v, int *out, const char *choices) {
  int index = choice_index(v, choices);
  if (index < 0) return false;
  *out = index;
  return true;
}

/* The text of choice number index in "a|b|c". */
static void format_choice(char *buf, size_t len, int index, const char *choices) {
  const char *c = choices;
  for (int i = 0; i < index && c; i++) {
    c = strchr(c, '|');
    if (c) c++;
  }
  const char *end = c ? strchr(c, '|') : NULL;
  snprintf(buf, len, "%.*s", c ? (int)(end ? (size_t)(end - c) : strlen(c)) : 0, c ? c : "");
}

#define PARSE_BOOL parse_bool
#define PARSE_INT parse_int
#define PARSE_COUNT parse_count
#define PARSE_PATH parse_path
#define PARSE_PATHS parse_paths
#define PARSE_CHOICE parse_choice
#define PARSE_URL parse_url
#define EXPECT_BOOL "on or off"
#define EXPECT_INT "a number from 0 to 255"
#define EXPECT_COUNT "a number, 0 or more"
#define EXPECT_PATH "a path"
#define EXPECT_PATHS "a path"
#define EXPECT_CHOICE "one of"
#define EXPECT_URL "an absolute http:// or https:// address"

bool ac_option_set_index(struct ac_options *o, size_t index, const char *value, const char *shown,
                         char *err, size_t errlen) {
  size_t i = 0;
#define AC_OPTION(Type, Name, Scope, Default, Metavar, Desc)                                       \
  if (i++ == index) {                                                                              \
    if (PARSE_##Type(value, &o->Name, Metavar)) return true;                                       \
    snprintf(err, errlen, "invalid value '%s' for %s: expected %s%s%s", value, shown,              \
             EXPECT_##Type, strcmp(#Type, "CHOICE") ? "" : " ",                                    \
             strcmp(#Type, "CHOICE") ? "" : Metavar);                                              \
    return false;                                                                                  \
  }
#include "options.inc"
#undef AC_OPTION
  snprintf(err, errlen, "no option number %zu", index);
  return false;
}

void ac_options_defaults(struct ac_options *o) {
  char err[128];
  memset(o, 0, sizeof *o);
  for (size_t i = 0; i < ac_option_count; i++)
    ac_option_set_index(o, i, ac_option_table[i].default_value, "", err, sizeof err);
}

long ac_option_find(const char *name) {
  for (size_t i = 0; i < ac_option_count; i++) {
    const char *a = ac_option_table[i].name, *b = name;
    while (*a && (*a == *b || (*a == '_' && *b == '-')))
      a++, b++;
    if (!*a && !*b) return (long)i;
  }
  return -1;
}

bool ac_option_set(struct ac_options *o, const char *name, const char *value, char *err,
                   size_t errlen) {
  long i = ac_option_find(name);
  if (i < 0) {
    snprintf(err, errlen, "unknown option '%s'", name);
    return false;
  }
  return ac_option_set_index(o, (size_t)i, value, name, err, errlen);
}

/* Adds an option's variable to the list of those ignored. */
static void note_ignored(char *list, size_t len, const char *env) {
  size_t n = strlen(list);
  snprintf(list + n, len - n, "%s%s", n ? ", " : "", env);
}

/* How many single-character edits make a into b (a name past 63 characters
 * is near nothing). */
static size_t edit_distance(const char *a, const char *b) {
  size_t n = strlen(b), row[64], diagonal;
  if (n >= sizeof row / sizeof *row || strlen(a) >= sizeof row / sizeof *row) return 99;
  for (size_t j = 0; j <= n; j++)
    row[j] = j;
  for (size_t i = 1; a[i - 1]; i++) {
    diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= n; j++) {
      size_t swapped = diagonal + (a[i - 1] != b[j - 1]), added = row[j - 1] + 1,
             dropped = row[j] + 1;
      diagonal = row[j];
      row[j] = swapped < added ? swapped : added;
      if (dropped < row[j]) row[j] = dropped;
    }
  }
  return row[n];
}

/* The option a variable name is a spelling of (exactly, or within two
 * edits when near), or -1. */
static long variable_option(const char *name, size_t len, bool exact) {
  char cli[64], env[96], typed[96];
  snprintf(typed, sizeof typed, "%.*s", (int)len, name);
  for (size_t i = 0; i < ac_option_count; i++) {
    ac_option_spell(i, cli, env, sizeof cli);
    if (exact ? strcmp(env, typed) == 0 : edit_distance(typed, env) <= 2) return (long)i;
  }
  return -1;
}

/* One line for each ATTACHCHECK_* variable that names no option (a
 * misspelling would otherwise be ignored without a word), as ASan says
 * "unrecognized flag"; and for one that names an option of the CLI alone. */
static void warn_unknown_variables(void (*warn)(const char *line)) {
  extern char **environ;
  char line[400], cli[64], env[96];
  for (char **e = environ; e && *e; e++) {
    const char *eq = strchr(*e, '=');
    if (strncmp(*e, "ATTACHCHECK_", 12) != 0 || !eq) continue;
    size_t len = (size_t)(eq - *e);
    long known = variable_option(*e, len, true), near = variable_option(*e, len, false);
    if (known >= 0 && ac_option_table[known].scope == AC_SCOPE_SHIM) continue;
    if (known >= 0) {
      ac_option_spell((size_t)known, cli, env, sizeof cli);
      snprintf(line, sizeof line,
               "%s is not read from the environment: --%s is an option of the "
               "attachcheck command only",
               env, cli);
    } else {
      if (near >= 0) ac_option_spell((size_t)near, cli, env, sizeof cli);
      snprintf(line, sizeof line, "unrecognized environment variable %.*s (ignored)%s%s%s",
               (int)len, *e, near >= 0 ? ": did you mean " : "", near >= 0 ? env : "",
               near >= 0 ? "?" : "");
    }
    warn(line);
  }
}

void ac_options_from_env(struct ac_options *o, void (*warn)(const char *line)) {
  /* In a secure-exec process (set-user-ID or set-group-ID, or given
   * capabilities by its file: AT_SECURE) the environment is the unprivileged
   * caller's. A path from it would let that user choose where a privileged
   * process writes, what it reads and which library it loads: those options
   * keep their defaults, and one line says so. */
  bool secure = getauxval(AT_SECURE) != 0;
  char ignored[1024] = "", line[1200];
  for (size_t i = 0; i < ac_option_count; i++) {
    char cli[64], env[96], err[256];
    if (ac_option_table[i].scope != AC_SCOPE_SHIM) continue;
    ac_option_spell(i, cli, env, sizeof cli);
    const char *v = getenv(env);
    if (v && secure && ac_option_table[i].is_path) {
      note_ignored(ignored, sizeof ignored, env);
      continue;
    }
    if (!v || ac_option_set_index(o, i, v, env, err, sizeof err)) continue;
    snprintf(line, sizeof line, "%s; using the default '%s'", err,
             ac_option_table[i].default_value);
    warn(line);
    ac_option_set_index(o, i, ac_option_table[i].default_value, env, err, sizeof err);
  }
  /* Under the CLI the CLI said it already, for the whole run. */
  if (!o->session_dir || !*o->session_dir) warn_unknown_variables(warn);
  if (!ignored[0]) return;
  snprintf(line, sizeof line,
           "a set-user-ID, set-group-ID or capability-raising program (AT_SECURE): %s ignored "
           "(paths and the driver are not taken from the environment of such a program)",
           ignored);
  warn(line);
}

void ac_option_format(const struct ac_options *o, size_t index, char *buf, size_t len) {
  size_t i = 0;
#define FORMAT_BOOL(v, Metavar) snprintf(buf, len, "%s", (v) ? "on" : "off")
#define FORMAT_INT(v, Metavar) snprintf(buf, len, "%ld", (v))
#define FORMAT_COUNT FORMAT_INT
#define FORMAT_PATH(v, Metavar) snprintf(buf, len, "%s", (v) ? (v) : "")
#define FORMAT_CHOICE(v, Metavar) format_choice(buf, len, (v), Metavar)
#define FORMAT_PATHS FORMAT_PATH
#define FORMAT_URL FORMAT_PATH
#define AC_OPTION(Type, Name, Scope, Default, Metavar, Desc)                                       \
  if (i++ == index) {                                                                              \
    FORMAT_##Type(o->Name, Metavar);                                                               \
    return;                                                                                        \
  }
#include "options.inc"
#undef AC_OPTION
  if (len) buf[0] = 0;
}

void ac_options_print_help(FILE *out) {
  for (size_t i = 0; i < ac_option_count; i++) {
    const struct ac_option_info *opt = &ac_option_table[i];
    char cli[64], env[96];
    if (strcmp(opt->name, "session_dir") == 0) continue; /* internal */
    ac_option_spell(i, cli, env, sizeof cli);
    fprintf(out, "  --%s %s\n", cli, opt->metavar);
    fprintf(out, "      %s\n", opt->description);
    fprintf(out, "      default: %s%s%s\n", *opt->default_value ? opt->default_value : "(none)",
            opt->scope == AC_SCOPE_SHIM ? "; environment: " : "",
            opt->scope == AC_SCOPE_SHIM ? env : "");
  }
}
