/* options.h - the options of the shim and the CLI (declared in options.inc). */
#ifndef AC_OPTIONS_H
#define AC_OPTIONS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#define AC_OPT_TYPE_BOOL bool
#define AC_OPT_TYPE_INT long
#define AC_OPT_TYPE_COUNT long
#define AC_OPT_TYPE_PATH const char *
#define AC_OPT_TYPE_PATHS const char * /* ':'-separated */
#define AC_OPT_TYPE_URL const char *   /* absolute: http:// or https://, or "" */
#define AC_OPT_TYPE_CHOICE int         /* the value's place in its list below */

/* The values of each CHOICE option, in order: AC_CHOICE(Enum, "text"). From
 * each list come its enum (so the shim compares numbers decided once, at
 * start-up) and the Metavar that parsing, --help and the man page use. */
#define AC_SEMANTICS_CHOICES(AC_CHOICE)                                                            \
  AC_CHOICE(AC_SEMANTICS_STRICT, "strict") AC_CHOICE(AC_SEMANTICS_DEVICE, "device")
#define AC_GUARD_PAGES_CHOICES(AC_CHOICE)                                                          \
  AC_CHOICE(AC_GUARD_AUTO, "auto")                                                                 \
  AC_CHOICE(AC_GUARD_PKEYS, "pkeys")                                                               \
  AC_CHOICE(AC_GUARD_MPROTECT, "mprotect") AC_CHOICE(AC_GUARD_OFF, "off")
#define AC_TARGET_PROCESSES_CHOICES(AC_CHOICE)                                                     \
  AC_CHOICE(AC_TARGET_ALL, "all") AC_CHOICE(AC_TARGET_APPLICATION_ONLY, "application-only")
#define AC_ON_ERROR_CHOICES(AC_CHOICE)                                                             \
  AC_CHOICE(AC_ON_ERROR_REPORT, "report")                                                          \
  AC_CHOICE(AC_ON_ERROR_HALT, "halt") AC_CHOICE(AC_ON_ERROR_REPAIR, "repair")

#define AC_CHOICE_ENUM(Enum, Text) Enum,
#define AC_CHOICE_TEXT(Enum, Text) "|" Text
/* "a|b|c" from a list (the first '|' skipped). */
#define AC_CHOICES(List) (&(List(AC_CHOICE_TEXT))[1])
enum ac_semantics { AC_SEMANTICS_CHOICES(AC_CHOICE_ENUM) };
enum ac_target_processes { AC_TARGET_PROCESSES_CHOICES(AC_CHOICE_ENUM) };
enum ac_guard_pages { AC_GUARD_PAGES_CHOICES(AC_CHOICE_ENUM) };
enum ac_on_error { AC_ON_ERROR_CHOICES(AC_CHOICE_ENUM) };

struct ac_options {
#define AC_OPTION(Type, Name, Scope, Default, Metavar, Desc) AC_OPT_TYPE_##Type Name;
#include "options.inc"
#undef AC_OPTION
};

/* Each option's place in the table, and how many there are. */
enum ac_option_index {
#define AC_OPTION(Type, Name, Scope, Default, Metavar, Desc) AC_OPTION_INDEX_##Name,
#include "options.inc"
#undef AC_OPTION
  AC_OPTION_COUNT
};

enum ac_option_scope { AC_SCOPE_SHIM, AC_SCOPE_CLI };

struct ac_option_info {
  const char *name; /* "error_exitcode" */
  enum ac_option_scope scope;
  const char *default_value, *metavar, *description;
  /* A file, folder or library: never taken from a secure-exec program's environment. */
  bool is_path;
};
/* The option's index by name (underscores or dashes), or -1. */
long ac_option_find(const char *name);

extern const struct ac_option_info ac_option_table[];
extern const size_t ac_option_count;

void ac_options_defaults(struct ac_options *o);
/* Sets one option by name (underscores or dashes); on a bad name or value,
 * writes a one-line reason to err and returns false. */
bool ac_option_set(struct ac_options *o, const char *name, const char *value, char *err,
                   size_t errlen);
/* The same by index; a bad value's reason names the option as shown - the
 * way the user wrote it ("--print-limit", "ATTACHCHECK_PRINT_LIMIT"). */
bool ac_option_set_index(struct ac_options *o, size_t index, const char *value, const char *shown,
                         char *err, size_t errlen);
/* Reads every shim option from ATTACHCHECK_*; a malformed value is reported
 * through warn (one line each) and the default is kept; so is each
 * ATTACHCHECK_* variable that names no option (unless under the CLI, which
 * said it for the run: ATTACHCHECK_SESSION_DIR is set). In a secure-exec
 * process (AT_SECURE: set-user-ID, set-group-ID, file capabilities) the path
 * options (reports, log, suppressions, session, driver) are not read: one
 * line through warn names those that were set. */
void ac_options_from_env(struct ac_options *o, void (*warn)(const char *line));
/* The option's current value as text, for passing on and for reports. */
void ac_option_format(const struct ac_options *o, size_t index, char *buf, size_t len);
void ac_options_print_help(FILE *out);
/* The option's spellings: "error-exitcode" and "ATTACHCHECK_ERROR_EXITCODE". */
void ac_option_spell(size_t index, char *cli, char *env, size_t len);

#endif
