/* shortfall.c - how a run fell short of a whole report, said in one line:
 * each process whose findings may be missing from it, and how - its record
 * stream cut (a full disk, no descriptor left) or torn (it died
 * mid-write), or CPU accesses its page guard let through unjudged. The CLI
 * then exits with EXIT_RECORDS_LOST (cli.c's run_status).
 */
#include <stdio.h>
#include <string.h>

#include "cli.h"

/* Appends ", text" to buf (or text, when buf is empty). */
static void add_part(char *buf, size_t len, const char *text) {
  size_t used = strlen(buf);
  if (used < len) snprintf(buf + used, len - used, "%s%s", used ? ", " : "", text);
}

/* How one process's records fell short, as the report says it: "PID (cut:
 * why, N records lost, torn: N partial records, N CPU accesses unjudged)". */
static void describe_incomplete(const json_t *proc, char *buf, size_t len) {
  const json_t *inc = json_object_get(proc, "incomplete");
  json_int_t torn = json_integer_value(json_object_get(inc, "torn_records"));
  json_int_t lost = json_integer_value(json_object_get(inc, "lost_records"));
  json_int_t unjudged = json_integer_value(json_object_get(inc, "unjudged_accesses"));
  const char *why = ac_json_str(inc, "why");
  bool cut = json_is_true(json_object_get(inc, "cut"));
  char parts[240] = "", part[100];
  if (cut) {
    snprintf(part, sizeof part, "cut%s%s", *why ? ": " : "", why);
    add_part(parts, sizeof parts, part);
  }
  if (lost) {
    snprintf(part, sizeof part, "%lld record%s lost", (long long)lost, lost == 1 ? "" : "s");
    add_part(parts, sizeof parts, part);
  }
  if (torn) {
    snprintf(part, sizeof part, "torn: %lld partial record%s", (long long)torn,
             torn == 1 ? "" : "s");
    add_part(parts, sizeof parts, part);
  }
  if (unjudged) {
    snprintf(part, sizeof part, "%lld CPU access%s unjudged%s%s", (long long)unjudged,
             unjudged == 1 ? "" : "es", *why && !cut ? ": " : "", cut ? "" : why);
    add_part(parts, sizeof parts, part);
  }
  snprintf(buf, len, "%lld (%s)", (long long)json_integer_value(json_object_get(proc, "pid")),
           parts);
}

/* The one line for a report that misses records: which processes, and how. */
void ac_cli_say_incomplete(const json_t *report) {
  char line[1024], one[300];
  size_t i, said = 0;
  const json_t *proc;
  int n = snprintf(line, sizeof line, AC_PREFIX "error: the report is incomplete: process");
  json_array_foreach(json_object_get(report, "processes"), i, proc) {
    if (!json_object_get(proc, "incomplete")) continue;
    describe_incomplete(proc, one, sizeof one);
    if (n > 0 && (size_t)n < sizeof line)
      n += snprintf(line + n, sizeof line - (size_t)n, "%s %s", said++ ? "," : "", one);
  }
  fprintf(stderr, "%s: findings may be missing\n", line);
}
