/* summary.c - the run's summary: distinct findings by severity, how often
 * they occurred, those suppressed, and the checks that did not run. The CLI
 * prints it after the program (merge.c counts), the shim alone at exit (its
 * own counts): one wording for both. */
#include <string.h>

#include "report.h"

static const char *const unchecked_names[] = {
#define AC_UNCHECKED_NAME(Enum, Name, Text) Name,
    AC_UNCHECKED_LIST(AC_UNCHECKED_NAME)
#undef AC_UNCHECKED_NAME
};
static const char *const unchecked_texts[] = {
#define AC_UNCHECKED_TEXT(Enum, Name, Text) Text,
    AC_UNCHECKED_LIST(AC_UNCHECKED_TEXT)
#undef AC_UNCHECKED_TEXT
};

/* Whether a stack's first frame of the program's own has no source line. */
static bool lacks_source(const json_t *stack) {
  const json_t *frame = ac_primary_frame(stack);
  return frame && ac_frame_is_programs_own(frame) && !json_object_get(frame, "file");
}

void ac_summary_count(struct ac_summary *sum, const json_t *finding, bool suppressed) {
  const char *sev = json_string_value(json_object_get(finding, "severity"));
  if (!sev) return;
  json_int_t count = json_integer_value(json_object_get(finding, "count"));
  if (suppressed) {
    sum->suppressed++;
    return;
  }
  if (strcmp(sev, "error") == 0)
    sum->errors++;
  else if (strcmp(sev, "warning") == 0)
    sum->warnings++;
  else
    sum->notes++;
  sum->occurrences += count > 0 ? count : 1;
  if (lacks_source(json_object_get(finding, "stack")))
    sum->not_checked |= 1u << AC_UNCHECKED_SOURCE_BIT;
}

void ac_summary_note_options(struct ac_summary *sum, bool guard_pages_off, bool guard_off) {
  if (guard_pages_off) sum->not_checked |= 1u << AC_UNCHECKED_CPU_ACCESS_BIT;
  if (guard_off) sum->not_checked |= 1u << AC_UNCHECKED_GUARD_BIT;
}

json_t *ac_summary_not_checked(const struct ac_summary *sum) {
  json_t *list = json_array();
  for (int i = 0; i < AC_UNCHECKED_COUNT; i++)
    if (sum->not_checked & (1u << i)) json_array_append_new(list, json_string(unchecked_names[i]));
  return list;
}

static const char *plural(long long n, const char *many) {
  return n == 1 ? "" : many;
}

void ac_summary_write(FILE *out, const struct ac_summary *s, const char *prefix,
                      const char *where) {
  char suppressed[48] = "";
  if (s->suppressed) snprintf(suppressed, sizeof suppressed, "; %d suppressed", s->suppressed);
  fprintf(out, "%ssummary: %d error%s, %d warning%s, %d note%s (%lld occurrence%s%s) ", prefix,
          s->errors, plural(s->errors, "s"), s->warnings, plural(s->warnings, "s"), s->notes,
          plural(s->notes, "s"), s->occurrences, plural(s->occurrences, "s"), suppressed);
  if (where)
    fprintf(out, "%s\n", where);
  else
    fprintf(out, "in %d process%s\n", s->processes, plural(s->processes, "es"));
  for (int i = 0; i < AC_UNCHECKED_COUNT; i++)
    if (s->not_checked & (1u << i)) fprintf(out, "%snot checked: %s\n", prefix, unchecked_texts[i]);
}
