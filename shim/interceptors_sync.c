/* interceptors_sync.c - wrappers of the synchronisation the host may rely on
 * (stream and context synchronisation, successful queries, events) and of
 * event recording and waiting. Thin: forward, then tell check_order.c. */
#include "shim.h"

/* cuStreamSynchronize, and cuStreamQuery when it answers CUDA_SUCCESS. */
#define STREAM_SYNC(Name, PerThread)                                                               \
  AC_EXPORT CUresult Name(CUstream hStream) {                                                      \
    AC_START_OR_FAIL(Name);                                                                        \
    ac_guard_park();                                                                               \
    CUresult r = ac_real.Name(hStream);                                                            \
    ac_guard_unpark();                                                                             \
    if (r == CUDA_SUCCESS) ac_on_stream_sync(hStream, PerThread);                                  \
    return r;                                                                                      \
  }
STREAM_SYNC(cuStreamSynchronize, false)
STREAM_SYNC(cuStreamSynchronize_ptsz, true)
STREAM_SYNC(cuStreamQuery, false)
STREAM_SYNC(cuStreamQuery_ptsz, true)

AC_EXPORT CUresult cuCtxSynchronize(void) {
  AC_START_OR_FAIL(cuCtxSynchronize);
  ac_guard_park();
  CUresult r = ac_real.cuCtxSynchronize();
  ac_guard_unpark();
  if (r == CUDA_SUCCESS) ac_on_ctx_sync(NULL);
  return r;
}

AC_EXPORT CUresult cuCtxSynchronize_v2(CUcontext ctx) {
  AC_START_OR_FAIL(cuCtxSynchronize_v2);
  ac_guard_park();
  CUresult r = ac_real.cuCtxSynchronize_v2(ctx);
  ac_guard_unpark();
  if (r == CUDA_SUCCESS) ac_on_ctx_sync(ctx);
  return r;
}

/* cuEventSynchronize, and cuEventQuery when it answers CUDA_SUCCESS. */
#define EVENT_SYNC(Name)                                                                           \
  AC_EXPORT CUresult Name(CUevent hEvent) {                                                        \
    AC_START_OR_FAIL(Name);                                                                        \
    ac_guard_park();                                                                               \
    CUresult r = ac_real.Name(hEvent);                                                             \
    ac_guard_unpark();                                                                             \
    if (r == CUDA_SUCCESS) ac_on_event_sync(hEvent);                                               \
    return r;                                                                                      \
  }
EVENT_SYNC(cuEventSynchronize)
EVENT_SYNC(cuEventQuery)

#define EVENT_DESTROY(Name)                                                                        \
  AC_EXPORT CUresult Name(CUevent hEvent) {                                                        \
    AC_START_OR_FAIL(Name);                                                                        \
    CUresult r = ac_real.Name(hEvent);                                                             \
    if (r == CUDA_SUCCESS) ac_on_event_destroyed(hEvent);                                          \
    return r;                                                                                      \
  }
EVENT_DESTROY(cuEventDestroy)
EVENT_DESTROY(cuEventDestroy_v2)

#define RECORD(Name, PerThread, Params, Args, Flags)                                               \
  AC_EXPORT CUresult Name Params {                                                                 \
    AC_START_OR_FAIL(Name);                                                                        \
    CUresult r = ac_real.Name Args;                                                                \
    if (r == CUDA_SUCCESS) ac_on_event_record(hEvent, hStream, Flags, PerThread);                  \
    return r;                                                                                      \
  }
RECORD(cuEventRecord, false, (CUevent hEvent, CUstream hStream), (hEvent, hStream), 0)
RECORD(cuEventRecord_ptsz, true, (CUevent hEvent, CUstream hStream), (hEvent, hStream), 0)
#define RECORD_FLAGS_PARAMS (CUevent hEvent, CUstream hStream, unsigned int flags)
RECORD(cuEventRecordWithFlags, false, RECORD_FLAGS_PARAMS, (hEvent, hStream, flags), flags)
RECORD(cuEventRecordWithFlags_ptsz, true, RECORD_FLAGS_PARAMS, (hEvent, hStream, flags), flags)

#define WAIT(Name, PerThread)                                                                      \
  AC_EXPORT CUresult Name(CUstream hStream, CUevent hEvent, unsigned int Flags) {                  \
    AC_START_OR_FAIL(Name);                                                                        \
    CUresult r = ac_real.Name(hStream, hEvent, Flags);                                             \
    if (r == CUDA_SUCCESS) ac_on_stream_wait(hStream, hEvent, PerThread);                          \
    return r;                                                                                      \
  }
WAIT(cuStreamWaitEvent, false)
WAIT(cuStreamWaitEvent_ptsz, true)

/* A context's or a green context's events: recorded over, or waited for by,
 * each of its streams. */
#define OWNER_EVENT(Name, Owner, Tell)                                                             \
  AC_EXPORT CUresult Name(Owner hCtx, CUevent hEvent) {                                            \
    AC_START_OR_FAIL(Name);                                                                        \
    CUresult r = ac_real.Name(hCtx, hEvent);                                                       \
    if (r == CUDA_SUCCESS) Tell(hCtx, hEvent);                                                     \
    return r;                                                                                      \
  }
OWNER_EVENT(cuGreenCtxRecordEvent, CUgreenCtx, ac_on_green_event_record)
OWNER_EVENT(cuGreenCtxWaitEvent, CUgreenCtx, ac_on_green_event_wait)
OWNER_EVENT(cuCtxRecordEvent, CUcontext, ac_on_ctx_event_record)
OWNER_EVENT(cuCtxWaitEvent, CUcontext, ac_on_ctx_event_wait)
