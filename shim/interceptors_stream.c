/* interceptors_stream.c - wrappers of stream creation, destruction, capture
 * and attach, and of the lifetimes that end streams and memory with them:
 * contexts and modules. Thin: forward, then tell check_*.c what happened. */
#include "shim.h"

AC_EXPORT CUresult cuInit(unsigned int Flags) {
  AC_START_OR_FAIL(cuInit);
  CUresult r = ac_real.cuInit(Flags);
  if (r == CUDA_SUCCESS) ac_semantics_decide();
  ac_note_cuda_init(r);
  return r;
}

AC_EXPORT CUresult cuStreamCreate(CUstream *phStream, unsigned int Flags) {
  AC_START_OR_FAIL(cuStreamCreate);
  CUresult r = ac_real.cuStreamCreate(phStream, Flags);
  if (r == CUDA_SUCCESS && phStream) {
    ac_check_stream_created("cuStreamCreate", *phStream, Flags, 0);
    ac_check_stream_context(*phStream);
  }
  return r;
}

AC_EXPORT CUresult cuStreamCreateWithPriority(CUstream *phStream, unsigned int flags,
                                              int priority) {
  AC_START_OR_FAIL(cuStreamCreateWithPriority);
  CUresult r = ac_real.cuStreamCreateWithPriority(phStream, flags, priority);
  if (r == CUDA_SUCCESS && phStream) {
    ac_check_stream_created("cuStreamCreateWithPriority", *phStream, flags, priority);
    ac_check_stream_context(*phStream);
  }
  return r;
}

#define DESTROY(Name)                                                                              \
  AC_EXPORT CUresult Name(CUstream hStream) {                                                      \
    AC_START_OR_FAIL(Name);                                                                        \
    uint64_t serial = ac_check_stream_to_destroy(hStream);                                         \
    CUresult r = ac_real.Name(hStream);                                                            \
    if (r == CUDA_SUCCESS) ac_check_stream_destroyed(#Name, hStream, serial);                      \
    return r;                                                                                      \
  }
DESTROY(cuStreamDestroy)
DESTROY(cuStreamDestroy_v2)

#define ATTACH(Name, PerThread)                                                                    \
  AC_EXPORT CUresult Name(CUstream hStream, CUdeviceptr dptr, size_t length, unsigned int flags) { \
    if (AC_UNLIKELY(!ac_start())) return CUDA_ERROR_NOT_INITIALIZED;                               \
    return ac_check_attach(AC_RETURN_SLOT(), #Name, PerThread, hStream, dptr, length, flags);      \
  }
ATTACH(cuStreamAttachMemAsync, false)
ATTACH(cuStreamAttachMemAsync_ptsz, true)

#define BEGIN_CAPTURE(Name, PerThread, Params, Args)                                               \
  AC_EXPORT CUresult Name Params {                                                                 \
    AC_START_OR_FAIL(Name);                                                                        \
    CUresult r = ac_real.Name Args;                                                                \
    if (r == CUDA_SUCCESS) ac_check_capture_begun(hStream, PerThread);                             \
    return r;                                                                                      \
  }
BEGIN_CAPTURE(cuStreamBeginCapture, false, (CUstream hStream), (hStream))
BEGIN_CAPTURE(cuStreamBeginCapture_ptsz, true, (CUstream hStream), (hStream))
BEGIN_CAPTURE(cuStreamBeginCapture_v2, false, (CUstream hStream, CUstreamCaptureMode mode),
              (hStream, mode))
BEGIN_CAPTURE(cuStreamBeginCapture_v2_ptsz, true, (CUstream hStream, CUstreamCaptureMode mode),
              (hStream, mode))
#define TO_GRAPH_PARAMS                                                                            \
  (CUstream hStream, CUgraph hGraph, const CUgraphNode *dependencies,                              \
   const CUgraphEdgeData *dependencyData, size_t numDependencies, CUstreamCaptureMode mode)
#define TO_GRAPH_ARGS (hStream, hGraph, dependencies, dependencyData, numDependencies, mode)
BEGIN_CAPTURE(cuStreamBeginCaptureToGraph, false, TO_GRAPH_PARAMS, TO_GRAPH_ARGS)
BEGIN_CAPTURE(cuStreamBeginCaptureToGraph_ptsz, true, TO_GRAPH_PARAMS, TO_GRAPH_ARGS)

/* A capture ends with the call whatever the driver answers (an invalidated
 * capture is over too). */
#define END_CAPTURE(Name, PerThread)                                                               \
  AC_EXPORT CUresult Name(CUstream hStream, CUgraph *phGraph) {                                    \
    AC_START_OR_FAIL(Name);                                                                        \
    CUresult r = ac_real.Name(hStream, phGraph);                                                   \
    if (r != CUDA_ERROR_INVALID_VALUE) ac_check_capture_ended(hStream, PerThread);                 \
    return r;                                                                                      \
  }
END_CAPTURE(cuStreamEndCapture, false)
END_CAPTURE(cuStreamEndCapture_ptsz, true)

/* A stream of a green context is a stream like cuStreamCreate's, counted as
 * the green context's for its events. */
AC_EXPORT CUresult cuGreenCtxStreamCreate(CUstream *phStream, CUgreenCtx greenCtx,
                                          unsigned int flags, int priority) {
  AC_START_OR_FAIL(cuGreenCtxStreamCreate);
  CUresult r = ac_real.cuGreenCtxStreamCreate(phStream, greenCtx, flags, priority);
  if (r == CUDA_SUCCESS && phStream)
    ac_check_green_stream_created(*phStream, greenCtx, flags, priority);
  return r;
}

/* Its streams are no longer counted as its own (the handle may come back). */
AC_EXPORT CUresult cuGreenCtxDestroy(CUgreenCtx hCtx) {
  AC_START_OR_FAIL(cuGreenCtxDestroy);
  CUresult r = ac_real.cuGreenCtxDestroy(hCtx);
  if (r == CUDA_SUCCESS) ac_check_green_ctx_destroyed(hCtx);
  return r;
}

/* ---- lifetimes: a module's __managed__ variables end with it ---- */
#define UNLOAD(Name, Type)                                                                         \
  AC_EXPORT CUresult Name(Type handle) {                                                           \
    AC_START_OR_FAIL(Name);                                                                        \
    ac_check_before_module_unload((uintptr_t)handle);                                              \
    CUresult r = ac_real.Name(handle);                                                             \
    ac_check_module_unloaded((uintptr_t)handle, r);                                                \
    return r;                                                                                      \
  }
UNLOAD(cuModuleUnload, CUmodule)
UNLOAD(cuLibraryUnload, CUlibrary)

/* ---- contexts: the shim counts them, and with the last one every allocation
 * and stream of the process ends ---- */
#define CTX_CREATE(Name, Params, Args)                                                             \
  AC_EXPORT CUresult Name Params {                                                                 \
    AC_START_OR_FAIL(Name);                                                                        \
    CUresult r = ac_real.Name Args;                                                                \
    if (r == CUDA_SUCCESS) ac_check_context_created();                                             \
    return r;                                                                                      \
  }
CTX_CREATE(cuCtxCreate, (CUcontext * pctx, unsigned int flags, CUdevice dev), (pctx, flags, dev))
CTX_CREATE(cuCtxCreate_v2, (CUcontext * pctx, unsigned int flags, CUdevice dev), (pctx, flags, dev))
CTX_CREATE(cuCtxCreate_v3,
           (CUcontext * pctx, CUexecAffinityParam *paramsArray, int numParams, unsigned int flags,
            CUdevice dev),
           (pctx, paramsArray, numParams, flags, dev))
CTX_CREATE(cuCtxCreate_v4,
           (CUcontext * pctx, CUctxCreateParams *ctxCreateParams, unsigned int flags, CUdevice dev),
           (pctx, ctxCreateParams, flags, dev))

AC_EXPORT CUresult cuDevicePrimaryCtxRetain(CUcontext *pctx, CUdevice dev) {
  AC_START_OR_FAIL(cuDevicePrimaryCtxRetain);
  CUresult r = ac_real.cuDevicePrimaryCtxRetain(pctx, dev);
  if (r == CUDA_SUCCESS) ac_check_primary_retained(dev);
  return r;
}

#define CTX_END(Name, Type, Arg, How, Dev)                                                         \
  AC_EXPORT CUresult Name(Type Arg) {                                                              \
    AC_START_OR_FAIL(Name);                                                                        \
    bool last = ac_check_before_context_end(How, Dev);                                             \
    CUresult r = ac_real.Name(Arg);                                                                \
    ac_check_context_ended(How, Dev, last, r);                                                     \
    if (How == AC_CTX_DESTROY && r == CUDA_SUCCESS)                                                \
      ac_check_context_destroyed((CUcontext)(uintptr_t)Arg);                                       \
    return r;                                                                                      \
  }
CTX_END(cuCtxDestroy, CUcontext, ctx, AC_CTX_DESTROY, -1)
CTX_END(cuCtxDestroy_v2, CUcontext, ctx, AC_CTX_DESTROY, -1)
CTX_END(cuDevicePrimaryCtxRelease, CUdevice, dev, AC_CTX_RELEASE, dev)
CTX_END(cuDevicePrimaryCtxRelease_v2, CUdevice, dev, AC_CTX_RELEASE, dev)
CTX_END(cuDevicePrimaryCtxReset, CUdevice, dev, AC_CTX_RESET, dev)
CTX_END(cuDevicePrimaryCtxReset_v2, CUdevice, dev, AC_CTX_RESET, dev)
