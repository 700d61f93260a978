/* symbolize.c - a return address as (module, offset, function).
 *
 * Only dladdr for now: the dynamic symbol table names exported functions
 * (link programs with -rdynamic for their own). Used only when a finding is
 * presented, never on the hot path.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <string.h>

#include "report.h"

void ac_symbolize(const void *pc, struct ac_frame *out) {
  Dl_info info;
  memset(out, 0, sizeof *out);
  out->pc = pc;
  out->module = "";
  /* A return address points after the call; look up the call itself. */
  const char *lookup = (const char *)pc - 1;
  if (!dladdr(lookup, &info)) return;
  if (info.dli_fname) out->module = info.dli_fname;
  out->offset = (unsigned long)((const char *)pc - (const char *)info.dli_fbase);
  if (info.dli_sname && info.dli_saddr) {
    out->function = info.dli_sname;
    out->function_offset = (unsigned long)((const char *)pc - (const char *)info.dli_saddr);
  }
}
