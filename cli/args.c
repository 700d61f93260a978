/* args.c - the command line's conventions, shared by running a program and
 * by `attachcheck report`: every option takes a value (--name value or
 * --name=value), so an on/off option never takes the program's name for its
 * value; an unknown option is named as typed; and every error names an option
 * the way the user gave it - typed, or the ATTACHCHECK_* variable it came
 * from - never by its C name.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

const char *ac_cli_help = "attachcheck --help";

/* How the user wrote each option on the command line ("" when not there). */
static char typed_names[AC_OPTION_COUNT][64];

void ac_cli_usage_error(const char *fmt, ...) {
  va_list args;
  va_start(args, fmt);
  fprintf(stderr, "attachcheck: ");
  vfprintf(stderr, fmt, args);
  va_end(args);
  fprintf(stderr, " (see %s)\n", ac_cli_help);
  exit(EXIT_USAGE);
}

const char *ac_cli_option_shown(size_t index) {
  char cli[64];
  if (!typed_names[index][0])
    ac_option_spell(index, cli, typed_names[index], sizeof typed_names[index]);
  return typed_names[index];
}

bool ac_cli_is_option(const char *arg) {
  return arg[0] == '-' && strcmp(arg, "-") != 0;
}

/* The option an argument names (--name or --name=value), or a usage error
 * that names it as typed. */
static size_t option_named(const char *a) {
  const char *eq = strchr(a, '=');
  size_t len = eq ? (size_t)(eq - a) : strlen(a);
  char name[64];
  long index = -1;
  if (strncmp(a, "--", 2) == 0 && len - 2 < sizeof name) {
    snprintf(name, sizeof name, "%.*s", (int)(len - 2), a + 2);
    index = ac_option_find(name);
  }
  if (index < 0 || strcmp(ac_option_table[index].name, "session_dir") == 0) /* internal */
    ac_cli_usage_error("unknown option '%.*s'", (int)len, a);
  snprintf(typed_names[index], sizeof typed_names[index], "%.*s", (int)len, a);
  return (size_t)index;
}

size_t ac_cli_parse_option(int argc, char **argv, int *i, struct ac_options *o) {
  const char *a = argv[*i];
  size_t index = option_named(a);
  const char *eq = strchr(a, '='), *value = eq ? eq + 1 : NULL;
  char err[512];
  if (!value && *i + 1 >= argc) ac_cli_usage_error("option '%s' needs a value", a);
  if (!value) value = argv[++*i];
  ++*i;
  if (!ac_option_set_index(o, index, value, typed_names[index], err, sizeof err))
    ac_cli_usage_error("%s", err);
  return index;
}
