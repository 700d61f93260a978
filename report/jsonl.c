/* jsonl.c - the records of the per-process stream, and where it goes.
 *
 * Every record is one line, written with one write(2) by stream.c, so each is
 * on disk (in the page cache) before the call that made it returns: a crash
 * right after a finding still leaves the finding.
 */
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "report.h"
#include "sys.h"

bool ac_jsonl_place(const struct ac_options *o, int pid, struct ac_records_place *place, char *err,
                    size_t errlen) {
  err[0] = 0;
  if (o->session_dir && *o->session_dir) {
    place->make_folder = false;
    int n = snprintf(place->where, sizeof place->where, "%s", o->session_dir);
    if (n < 0 || (size_t)n >= sizeof place->where)
      return snprintf(err, errlen, "session folder path too long"), false;
    return true;
  }
  const char *report = o->json && *o->json ? o->json : o->sarif && *o->sarif ? o->sarif : o->html;
  if (!report || !*report) return false;
  char base[4096], suffix[32];
  if (!ac_expand_path(report, pid, base, sizeof base, err, errlen)) return false;
  /* The folder's name ends in six random characters: named with a stand-in
   * tail here (so a long name takes its short form), which is then cut off. */
  snprintf(suffix, sizeof suffix, ".%d.XXXXXX", pid);
  if (!ac_sibling_name(base, suffix, place->where, sizeof place->where))
    return snprintf(err, errlen, "report path too long"), false;
  place->where[strlen(place->where) - 6] = 0;
  place->make_folder = true;
  return true;
}

char *ac_jsonl_line(json_t *record, size_t *len) {
  char *line = json_dumps(record, JSON_COMPACT);
  if (!line) return NULL;
  *len = strlen(line);
  line[(*len)++] = '\n'; /* json_dumps leaves room for its terminator; reuse it */
  return line;
}

static json_t *read_argv(void) {
  json_t *argv = json_array();
  char buf[8192];
  ssize_t n = ac_sys_read_once("/proc/self/cmdline", buf, sizeof buf);
  for (ssize_t i = 0; i < n; i += (ssize_t)strlen(buf + i) + 1)
    json_array_append_new(argv, ac_json_text(buf + i));
  return argv;
}

json_t *ac_jsonl_process_record(const struct ac_options *o) {
  json_t *options = json_object();
  for (size_t i = 0; i < ac_option_count; i++) {
    char value[512];
    if (ac_option_table[i].scope != AC_SCOPE_SHIM) continue;
    ac_option_format(o, i, value, sizeof value);
    json_object_set_new(options, ac_option_table[i].name, ac_json_text(value));
  }
  char host[256] = "";
  if (gethostname(host, sizeof host - 1) != 0) host[0] = 0;
  return json_pack("{s:s, s:i, s:i, s:o, s:o, s:{s:s, s:s}, s:o}", "type", "process", "pid",
                   (int)getpid(), "ppid", (int)getppid(), "host", ac_json_text(host), "argv",
                   read_argv(), "tool", "name", AC_TOOL_NAME, "version", AC_TOOL_VERSION, "options",
                   options);
}
