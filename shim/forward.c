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
    if (AC_UNLIKELY(!ac_start())) return CUDA_ERROR_NOT_INITIALIZED;                               \
    if (AC_UNLIKELY(!ac_real.Name)) return CUDA_ERROR_NOT_FOUND;                                   \
    return ac_real.Name Args;                                                                      \
  }
#include "entrypoints.inc"
