/* jsonl.c - the per-process record stream.
 *
 * Every record is one line written with one write(2) on an O_APPEND file, so
 * records from several threads or processes never interleave, and each is on
 * disk (in the page cache) before the call that made it returns: a crash right
 * after a finding still leaves the finding.
 */
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "report.h"
#include "sys.h"

bool ac_jsonl_path(const struct ac_options *o, int pid, char *buf, size_t len, char *err,
                   size_t errlen) {
  int n;
  char base[4096];
  err[0] = 0;
  if (o->session_dir && *o->session_dir) {
    n = snprintf(buf, len, "%s/%d.jsonl", o->session_dir, pid);
  } else {
    const char *report = o->json && *o->json ? o->json : o->sarif && *o->sarif ? o->sarif : o->html;
    if (!report || !*report) return false;
    char suffix[32];
    if (!ac_expand_path(report, pid, base, sizeof base, err, errlen)) return false;
    snprintf(suffix, sizeof suffix, ".%d.jsonl", pid);
    n = ac_sibling_name(base, suffix, buf, len) ? 0 : -1;
  }
  if (n < 0 || (size_t)n >= len) return snprintf(err, errlen, "report path too long"), false;
  return true;
}

bool ac_jsonl_append(const char *path, json_t *record) {
  char *line = json_dumps(record, JSON_COMPACT);
  if (!line) return false;
  size_t n = strlen(line);
  line[n] = '\n'; /* json_dumps leaves room for its terminator; reuse it */
  /* O_NONBLOCK: a FIFO planted at the path must not stop the program. */
  int fd =
      ac_sys_open(path, O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK, 0644);
  bool ok = false;
  if (fd >= 0) {
    ok = ac_sys_write_all(fd, line, n + 1);
    ac_sys_close(fd);
  }
  free(line);
  return ok;
}

static json_t *read_argv(void) {
  json_t *argv = json_array();
  int fd = ac_sys_open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC, 0);
  if (fd < 0) return argv;
  char buf[8192];
  ssize_t n = ac_sys_read(fd, buf, sizeof buf - 1);
  ac_sys_close(fd);
  for (ssize_t i = 0; n > 0 && i < n; i += (ssize_t)strlen(buf + i) + 1) {
    buf[n] = 0;
    json_array_append_new(argv, ac_json_text(buf + i));
  }
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
