/* fuzz_suppressions.c - libFuzzer target: any bytes as a suppression file.
 * The parser must accept or refuse with a message, never crash or leak, and
 * what it accepts must be usable for matching and suggesting. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "report.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  struct ac_suppressions set = {0};
  char err[512];
  if (ac_suppressions_parse(&set, (const char *)data, size, "fuzz.supp", err, sizeof err)) {
    json_t *finding =
        json_pack("{s:s, s:{s:s, s:i}, s:[{s:s, s:s, s:i, s:s}, {s:s}]}", "rule", "AC301",
                  "argument", "kind", "parameter", "index", 1, "stack", "function", "ns::f<int>()",
                  "file", "/src/a.cu", "line", 12, "module", "/usr/lib/libthird.so", "module", "");
    for (size_t i = 0; i < set.count; i++) {
      json_object_set_new(finding, "rule",
                          json_string(set.items[i].rule[0] == '*' ? "AC101" : set.items[i].rule));
      ac_suppressions_match(&set, finding);
    }
    char line[700];
    ac_suppression_suggest(finding, line, sizeof line);
    json_decref(finding);
  } else if (!err[0]) {
    __builtin_trap(); /* a refusal must say why */
  }
  ac_suppressions_free(&set);
  return 0;
}
