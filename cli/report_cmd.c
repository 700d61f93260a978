/* report_cmd.c - `attachcheck report [options] FILE.json...`: saved JSON
 * reports - the ranks of a job on several machines, several runs - read back
 * and merged as the processes of one run are (a finding of the same key is
 * one finding that lists its processes), then said as text on stdout and
 * written as the JSON, SARIF and HTML reports the options ask for.
 *
 * Exit status: 2 for a usage error, a report that cannot be read and one
 * that cannot be written; 5 when a report says records of a process are
 * missing; N of --error-exitcode when there are error findings; else 0.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

/* The options that mean something to saved reports. */
static const size_t report_options[] = {AC_OPTION_INDEX_json, AC_OPTION_INDEX_sarif,
                                        AC_OPTION_INDEX_html, AC_OPTION_INDEX_error_exitcode,
                                        AC_OPTION_INDEX_overwrite};

static bool applies(size_t index) {
  for (size_t i = 0; i < sizeof report_options / sizeof *report_options; i++)
    if (report_options[i] == index) return true;
  return false;
}

/* The options and the files; a usage error for anything else. Options may
 * come before or after the files; "--" ends them. */
static size_t parse(int argc, char **argv, struct ac_options *o, char **files) {
  size_t n = 0;
  for (int i = 1; i < argc;) {
    const char *a = argv[i];
    if (strcmp(a, "--") == 0) {
      while (++i < argc)
        files[n++] = argv[i];
      break;
    }
    if (!ac_cli_is_option(a)) {
      files[n++] = argv[i++];
      continue;
    }
    if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0)
      ac_manual_print_report_help(stdout), exit(0);
    size_t index = ac_cli_parse_option(argc, argv, &i, o);
    if (!applies(index))
      ac_cli_usage_error("%s does not apply to saved reports", ac_cli_option_shown(index));
  }
  return n;
}

/* One saved report, or a usage error that says why it is not one. */
static json_t *load_report(const char *path) {
  json_error_t error;
  json_t *r = json_load_file(path, 0, &error);
  if (!r) ac_cli_usage_error("cannot read the report %s: %s", path, error.text);
  json_int_t version = json_integer_value(json_object_get(r, "schema_version"));
  if (!json_is_object(r) || !json_is_array(json_object_get(r, "findings")) ||
      !json_is_array(json_object_get(r, "processes")))
    ac_cli_usage_error("%s is not an attachcheck JSON report (--json)", path);
  /* A version-1 report is read as a complete one (docs/report-schema.md). */
  if (version < 1 || version > AC_SCHEMA_VERSION)
    ac_cli_usage_error("%s is a report of schema version %lld; this attachcheck reads versions 1 "
                       "to %d",
                       path, (long long)version, AC_SCHEMA_VERSION);
  return r;
}

/* A finding as the text summary says it: how often and in how many
 * processes, then the block a run prints for it; suppressed ones only
 * count. */
static void print_finding(FILE *out, const json_t *f) {
  if (json_is_object(json_object_get(f, "suppressed"))) return;
  json_int_t count = json_integer_value(json_object_get(f, "count"));
  size_t processes = json_array_size(json_object_get(f, "processes"));
  fprintf(out, AC_PREFIX "%lld time%s in %zu process%s:\n", (long long)count, count == 1 ? "" : "s",
          processes, processes == 1 ? "" : "es");
  ac_text_write_finding(out, f, AC_PREFIX);
}

static void print_text(FILE *out, const json_t *merged, const struct ac_summary *sum) {
  char line[1024];
  size_t i;
  const json_t *f;
  json_array_foreach(json_object_get(merged, "findings"), i, f) print_finding(out, f);
  ac_cli_summary_line(sum, line, sizeof line);
  fputs(line, out);
}

/* The status, said in one line where it is not the findings' own. */
static int report_status(const struct ac_options *o, const struct ac_summary *sum, bool written) {
  if (!written) return EXIT_OUTPUT_LOST;
  if (sum->incomplete_processes) {
    fprintf(stderr,
            AC_PREFIX "error: the reports are incomplete: records of %d process%s did not all "
                      "reach them (see \"incomplete\" in the processes): findings may be missing\n",
            sum->incomplete_processes, sum->incomplete_processes == 1 ? "" : "es");
    return EXIT_RECORDS_LOST;
  }
  if (o->error_exitcode && sum->errors > 0) return (int)o->error_exitcode;
  return 0;
}

int ac_report_command(int argc, char **argv) {
  struct ac_options o;
  ac_cli_help = "attachcheck report --help";
  ac_options_defaults(&o); /* not the environment's: its report names are a run's */
  char **files = calloc((size_t)argc, sizeof *files);
  if (!files) return EXIT_USAGE;
  size_t n = parse(argc, argv, &o, files);
  if (!n) ac_cli_usage_error("%s", "no report to read");
  ac_cli_check_distinct_outputs(&o);
  json_t **reports = calloc(n, sizeof *reports);
  if (!reports) return EXIT_USAGE;
  for (size_t i = 0; i < n; i++)
    reports[i] = load_report(files[i]);
  struct ac_summary sum;
  json_t *merged = ac_merge_reports(reports, n, &sum);
  char why[4200];
  bool written = merged && ac_write_final_reports(merged, &o, (int)getpid(), why, sizeof why);
  if (!written)
    fprintf(stderr, "attachcheck: cannot write the report: %s\n", merged ? why : "out of memory");
  if (merged) print_text(stdout, merged, &sum);
  int status = report_status(&o, &sum, written);
  json_decref(merged);
  for (size_t i = 0; i < n; i++)
    json_decref(reports[i]);
  free(reports);
  free(files);
  return status;
}
