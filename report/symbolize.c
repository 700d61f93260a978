/* symbolize.c - a return address as (module, offset, function).
 *
 * Only dladdr for now: the dynamic symbol table names exported functions
 * (link programs with -rdynamic for their own). Used only when a finding is
 * presented, never on the hot path.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h> /* program_invocation_name */
#include <limits.h>
#include <pthread.h>
#include <string.h>
#include <unistd.h>

#include "report.h"

static char program_path[PATH_MAX];
static void find_program_path(void) {
  ssize_t n = readlink("/proc/self/exe", program_path, sizeof program_path - 1);
  program_path[n > 0 ? n : 0] = 0;
}

/* dladdr names the program itself by argv[0] (relative, or whatever the
 * program set it to): use the executable's absolute path instead. */
static const char *module_path(const char *name) {
  static pthread_once_t once = PTHREAD_ONCE_INIT;
  if (name[0] == '/' || strcmp(name, program_invocation_name) != 0) return name;
  pthread_once(&once, find_program_path);
  return program_path[0] ? program_path : name;
}

void ac_symbolize(const void *pc, struct ac_frame *out) {
  Dl_info info;
  memset(out, 0, sizeof *out);
  out->pc = pc;
  out->module = "";
  /* A return address points after the call; look up the call itself. */
  const char *lookup = (const char *)pc - 1;
  if (!dladdr(lookup, &info)) return;
  if (info.dli_fname) out->module = module_path(info.dli_fname);
  out->offset = (unsigned long)((const char *)pc - (const char *)info.dli_fbase);
  if (info.dli_sname && info.dli_saddr) {
    out->function = info.dli_sname;
    out->function_offset = (unsigned long)((const char *)pc - (const char *)info.dli_saddr);
  }
}
