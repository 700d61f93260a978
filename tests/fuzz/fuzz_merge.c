/* fuzz_merge.c - libFuzzer target: any bytes as a process's record stream
 * (a crash can leave anything behind). The merge must keep what it can, count
 * what it cannot, and the result must turn into SARIF. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "report.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char path[] = "/tmp/attachcheck-fuzz-XXXXXX";
  int fd = mkstemp(path);
  if (fd < 0) return 0;
  if (write(fd, data, size) != (ssize_t)size) {
    close(fd), unlink(path);
    return 0;
  }
  close(fd);
  const char *paths[1] = {path};
  struct ac_summary sum;
  json_t *report = ac_merge_streams(paths, 1, &sum);
  unlink(path);
  if (!report) return 0;
  json_t *sarif = ac_sarif_from_report(report);
  char *text = sarif ? json_dumps(sarif, JSON_COMPACT) : NULL;
  free(text);
  json_decref(sarif);
  json_decref(report);
  return 0;
}
