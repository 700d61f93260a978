/* frames.c - which frame of a stack is the program's own.
 *
 * A finding's stack starts in whatever called the driver: often the CUDA
 * runtime (linked into the program or as libcudart), under it the program.
 * SARIF's primary location and --gen-suppressions both want the first frame
 * a program's author would look at: not the driver, the runtime, the C
 * library or the loader. Frames are those of the JSON report (symbolised).
 */
#include <fnmatch.h>
#include <string.h>

#include "report.h"

uint64_t ac_hash_text(uint64_t h, const char *s) {
  for (; *s; s++)
    h = (h ^ (unsigned char)*s) * 1099511628211ull; /* FNV-1a */
  return h;
}

uint64_t ac_hash_bytes(uint64_t h, const void *bytes, size_t n) {
  const unsigned char *p = bytes;
  for (size_t i = 0; i < n; i++)
    h = (h ^ p[i]) * 1099511628211ull;
  return h;
}

bool ac_frame_is_programs_own(const json_t *frame) {
  static const char *const foreign_modules[] = {"*/libcuda.so*", "*/libcudart.so*", "*/libc.so*",
                                                "*/ld-linux*",   "*/libstdc++.so*", "*/libpython*"};
  static const char *const foreign_functions[] = {"cuda*",          "libcudart_static_*", "__cuda*",
                                                  "__device_stub*", "__libc_start*",      "_start"};
  const char *module = ac_json_str(frame, "module"), *function = ac_json_str(frame, "function");
  for (size_t i = 0; i < sizeof foreign_modules / sizeof *foreign_modules; i++)
    if (fnmatch(foreign_modules[i], module, 0) == 0) return false;
  for (size_t i = 0; i < sizeof foreign_functions / sizeof *foreign_functions; i++)
    if (*function && fnmatch(foreign_functions[i], function, 0) == 0) return false;
  return true;
}

const json_t *ac_primary_frame(const json_t *stack) {
  size_t i;
  const json_t *frame;
  json_array_foreach(stack, i, frame) if (ac_frame_is_programs_own(frame)) return frame;
  return json_array_get(stack, 0);
}
