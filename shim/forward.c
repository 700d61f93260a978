/* forward.c - the wrappers that only forward, generated from the table.
 *
 * They exist so that every door hands out a wrapper for these entry points
 * already; the ordering model gives them meaning. The cost on the hot path is
 * one predictable branch and an indirect call.
 */
#include "shim.h"

#define AC_HOOK(Name, Params, Args)
#define AC_PASS(Name, Params, Args)                                                                \
  AC_EXPORT CUresult Name Params {                                                                 \
    AC_START_OR_FAIL(Name);                                                                        \
    return ac_real.Name Args;                                                                      \
  }
#include "entrypoints.inc"
