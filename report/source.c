/* source.c - the text of one line of a program's source, for the reports.
 *
 * SARIF's fingerprints are made of it (not of line numbers or offsets, which
 * change with every edit above the line), so an alert stays the same alert
 * across commits, as GitHub's primaryLocationLineHash does. Whitespace is
 * normalised: runs of spaces and tabs become one space, and the ends are
 * trimmed, so re-indenting does not change it either. Read with raw system
 * calls (sys.h), bounded, only when a finding is first reported, and the
 * last file kept.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "report.h"
#include "sys.h"

#define SOURCE_MAX_BYTES (8u << 20)

/* Line n (from 1) of text, as [*start, *end); false if there is none. */
static bool find_line(const char *text, size_t len, int n, const char **start, const char **end) {
  const char *p = text, *stop = text + len;
  for (int i = 1; i < n; i++) {
    p = memchr(p, '\n', (size_t)(stop - p));
    if (!p) return false;
    p++;
  }
  const char *nl = memchr(p, '\n', (size_t)(stop - p));
  *start = p;
  *end = nl ? nl : stop;
  return p < stop || n == 1;
}

static void normalise(const char *p, const char *end, char *out, size_t len) {
  size_t o = 0;
  bool space = false;
  for (; p < end && o + 1 < len; p++) {
    bool blank = *p == ' ' || *p == '\t' || *p == '\r' || *p == '\f' || *p == '\v';
    if (blank) {
      space = o > 0;
      continue;
    }
    if (space && o + 2 < len) out[o++] = ' ';
    space = false;
    out[o++] = *p;
  }
  out[o] = 0;
}

/* The last file read: a finding's frames are mostly in one file, and a
 * program with many findings must not read it again for each. Used under the
 * sink's lock (json_finding.c is called from there only). */
static struct {
  char path[4096];
  char *text;
  size_t len;
} last;

static const char *source_text(const char *path, size_t *len) {
  if (last.text && strcmp(last.path, path) == 0) {
    *len = last.len;
    return last.text;
  }
  if (strlen(path) >= sizeof last.path) return NULL; /* longer than a path may be */
  char why[256];
  size_t n = 0;
  int saved = errno; /* the program's, read in the middle of its calls */
  char *text = ac_sys_read_small_file(path, SOURCE_MAX_BYTES, &n, why, sizeof why);
  errno = saved;
  if (!text) return NULL;
  free(last.text);
  last.text = text;
  last.len = n;
  snprintf(last.path, sizeof last.path, "%s", path);
  *len = n;
  return text;
}

bool ac_source_line(const char *path, int line, char *out, size_t len) {
  if (!path || !*path || line <= 0 || len == 0) return false;
  size_t n = 0;
  const char *text = source_text(path, &n), *start, *end;
  if (!text) return false;
  out[0] = 0;
  if (find_line(text, n, line, &start, &end)) normalise(start, end, out, len);
  return out[0] != 0;
}
