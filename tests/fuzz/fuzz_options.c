/* fuzz_options.c - libFuzzer target: the option parser and report-name
 * expansion. The input is lines of NAME=VALUE (as the CLI and the environment
 * give them) and a last line used as a report file name pattern. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "report.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char *text = malloc(size + 1);
  if (!text) return 0;
  memcpy(text, data, size);
  text[size] = 0;
  struct ac_options o;
  ac_options_defaults(&o);
  char err[512], *save = NULL, *last = NULL;
  for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
    last = line;
    char *eq = strchr(line, '=');
    if (!eq) continue;
    *eq = 0;
    if (!ac_option_set(&o, line, eq + 1, err, sizeof err) && !err[0]) __builtin_trap();
    *eq = '=';
  }
  for (size_t i = 0; i < ac_option_count; i++) { /* every value formats back */
    char value[4096];
    ac_option_format(&o, i, value, sizeof value);
  }
  char path[256];
  if (last && !ac_expand_path(last, 4242, path, sizeof path, err, sizeof err) && !err[0])
    __builtin_trap();
  free(text);
  return 0;
}
