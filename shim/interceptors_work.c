/* interceptors_work.c - wrappers of everything that enqueues work on a stream
 * (kernels, graphs, asynchronous copies, sets and prefetches, host functions)
 * and of the synchronous copies and sets, which the host waits for on the
 * legacy NULL stream. Thin: forward, then tell check_order.c. */
#include "shim.h"

/* An operation on the stream Stream (an expression over the parameters). */
#define WORK(Name, PerThread, Params, Args, Stream)                                                \
  AC_EXPORT CUresult Name Params {                                                                 \
    AC_START_OR_FAIL(Name);                                                                        \
    CUresult r = ac_real.Name Args;                                                                \
    if (r == CUDA_SUCCESS) ac_on_work(#Name, Stream, PerThread);                                   \
    return r;                                                                                      \
  }

/* A kernel launch: an operation whose arguments are judged (kernel_args.c). */
#define LAUNCH(Name, PerThread, Params, Args, Func, Stream, KernelParams, Extra)                   \
  AC_EXPORT CUresult Name Params {                                                                 \
    AC_START_OR_FAIL(Name);                                                                        \
    CUresult r = ac_real.Name Args;                                                                \
    if (r == CUDA_SUCCESS) ac_on_launch(#Name, Func, Stream, PerThread, KernelParams, Extra);      \
    return r;                                                                                      \
  }
LAUNCH(cuLaunchKernel, false, AC_LAUNCH_PARAMS, AC_LAUNCH_ARGS, f, hStream, kernelParams, extra)
LAUNCH(cuLaunchKernel_ptsz, true, AC_LAUNCH_PARAMS, AC_LAUNCH_ARGS, f, hStream, kernelParams, extra)
LAUNCH(cuLaunchCooperativeKernel, false, AC_COOP_PARAMS, AC_COOP_ARGS, f, hStream, kernelParams,
       NULL)
LAUNCH(cuLaunchCooperativeKernel_ptsz, true, AC_COOP_PARAMS, AC_COOP_ARGS, f, hStream, kernelParams,
       NULL)
#define EX_PARAMS (const CUlaunchConfig *config, CUfunction f, void **kernelParams, void **extra)
#define EX_ARGS (config, f, kernelParams, extra)
LAUNCH(cuLaunchKernelEx, false, EX_PARAMS, EX_ARGS, f, config->hStream, kernelParams, extra)
LAUNCH(cuLaunchKernelEx_ptsz, true, EX_PARAMS, EX_ARGS, f, config->hStream, kernelParams, extra)
/* A graph launch: an operation whose kernel nodes' arguments are judged. */
#define GRAPH_LAUNCH(Name, PerThread)                                                              \
  AC_EXPORT CUresult Name(CUgraphExec hGraphExec, CUstream hStream) {                              \
    AC_START_OR_FAIL(Name);                                                                        \
    CUresult r = ac_real.Name(hGraphExec, hStream);                                                \
    if (r == CUDA_SUCCESS) ac_on_graph_launch(#Name, hGraphExec, hStream, PerThread);              \
    return r;                                                                                      \
  }
GRAPH_LAUNCH(cuGraphLaunch, false)
GRAPH_LAUNCH(cuGraphLaunch_ptsz, true)

#define INSTANTIATE(Name, Params, Args)                                                            \
  AC_EXPORT CUresult Name Params {                                                                 \
    AC_START_OR_FAIL(Name);                                                                        \
    CUresult r = ac_real.Name Args;                                                                \
    if (r == CUDA_SUCCESS && phGraphExec) ac_on_graph_instantiated(*phGraphExec, hGraph);          \
    return r;                                                                                      \
  }
INSTANTIATE(cuGraphInstantiateWithFlags,
            (CUgraphExec * phGraphExec, CUgraph hGraph, unsigned long long flags),
            (phGraphExec, hGraph, flags))
#define WITH_PARAMS                                                                                \
  (CUgraphExec * phGraphExec, CUgraph hGraph, CUDA_GRAPH_INSTANTIATE_PARAMS * instantiateParams)
INSTANTIATE(cuGraphInstantiateWithParams, WITH_PARAMS, (phGraphExec, hGraph, instantiateParams))
INSTANTIATE(cuGraphInstantiateWithParams_ptsz, WITH_PARAMS,
            (phGraphExec, hGraph, instantiateParams))

AC_EXPORT CUresult cuGraphExecUpdate_v2(CUgraphExec hGraphExec, CUgraph hGraph,
                                        CUgraphExecUpdateResultInfo *resultInfo) {
  AC_START_OR_FAIL(cuGraphExecUpdate_v2);
  CUresult r = ac_real.cuGraphExecUpdate_v2(hGraphExec, hGraph, resultInfo);
  if (r == CUDA_SUCCESS) ac_on_graph_instantiated(hGraphExec, hGraph);
  return r;
}

AC_EXPORT CUresult cuGraphExecDestroy(CUgraphExec hGraphExec) {
  AC_START_OR_FAIL(cuGraphExecDestroy);
  CUresult r = ac_real.cuGraphExecDestroy(hGraphExec);
  if (r == CUDA_SUCCESS) ac_on_graph_exec_destroyed(hGraphExec);
  return r;
}

/* An asynchronous copy or set: its operands are judged too. */
#define COPY(Name, PerThread, Params, Args, Dst, Src)                                              \
  AC_EXPORT CUresult Name Params {                                                                 \
    AC_START_OR_FAIL(Name);                                                                        \
    CUresult r = ac_real.Name Args;                                                                \
    if (r == CUDA_SUCCESS) ac_on_copy(#Name, hStream, PerThread, Dst, Src);                        \
    return r;                                                                                      \
  }

#define COPY_PARAMS (CUdeviceptr dst, CUdeviceptr src, size_t ByteCount, CUstream hStream)
#define COPY_ARGS (dst, src, ByteCount, hStream)
COPY(cuMemcpyAsync, false, COPY_PARAMS, COPY_ARGS, dst, src)
COPY(cuMemcpyAsync_ptsz, true, COPY_PARAMS, COPY_ARGS, dst, src)
#define HTOD_PARAMS (CUdeviceptr dstDevice, const void *srcHost, size_t ByteCount, CUstream hStream)
#define HTOD_ARGS (dstDevice, srcHost, ByteCount, hStream)
COPY(cuMemcpyHtoDAsync_v2, false, HTOD_PARAMS, HTOD_ARGS, dstDevice, 0)
COPY(cuMemcpyHtoDAsync_v2_ptsz, true, HTOD_PARAMS, HTOD_ARGS, dstDevice, 0)
#define DTOH_PARAMS (void *dstHost, CUdeviceptr srcDevice, size_t ByteCount, CUstream hStream)
#define DTOH_ARGS (dstHost, srcDevice, ByteCount, hStream)
COPY(cuMemcpyDtoHAsync_v2, false, DTOH_PARAMS, DTOH_ARGS, 0, srcDevice)
COPY(cuMemcpyDtoHAsync_v2_ptsz, true, DTOH_PARAMS, DTOH_ARGS, 0, srcDevice)
#define DTOD_PARAMS                                                                                \
  (CUdeviceptr dstDevice, CUdeviceptr srcDevice, size_t ByteCount, CUstream hStream)
#define DTOD_ARGS (dstDevice, srcDevice, ByteCount, hStream)
COPY(cuMemcpyDtoDAsync_v2, false, DTOD_PARAMS, DTOD_ARGS, dstDevice, srcDevice)
COPY(cuMemcpyDtoDAsync_v2_ptsz, true, DTOD_PARAMS, DTOD_ARGS, dstDevice, srcDevice)
#define SET_PARAMS(T) (CUdeviceptr dstDevice, T value, size_t N, CUstream hStream)
#define SET_ARGS (dstDevice, value, N, hStream)
COPY(cuMemsetD8Async, false, SET_PARAMS(unsigned char), SET_ARGS, dstDevice, 0)
COPY(cuMemsetD8Async_ptsz, true, SET_PARAMS(unsigned char), SET_ARGS, dstDevice, 0)
COPY(cuMemsetD16Async, false, SET_PARAMS(unsigned short), SET_ARGS, dstDevice, 0)
COPY(cuMemsetD16Async_ptsz, true, SET_PARAMS(unsigned short), SET_ARGS, dstDevice, 0)
COPY(cuMemsetD32Async, false, SET_PARAMS(unsigned int), SET_ARGS, dstDevice, 0)
COPY(cuMemsetD32Async_ptsz, true, SET_PARAMS(unsigned int), SET_ARGS, dstDevice, 0)
#define PREFETCH_PARAMS (CUdeviceptr devPtr, size_t count, CUdevice dstDevice, CUstream hStream)
#define PREFETCH_ARGS (devPtr, count, dstDevice, hStream)
WORK(cuMemPrefetchAsync, false, PREFETCH_PARAMS, PREFETCH_ARGS, hStream)
WORK(cuMemPrefetchAsync_ptsz, true, PREFETCH_PARAMS, PREFETCH_ARGS, hStream)
#define PREFETCH2_PARAMS                                                                           \
  (CUdeviceptr devPtr, size_t count, CUmemLocation location, unsigned int flags, CUstream hStream)
#define PREFETCH2_ARGS (devPtr, count, location, flags, hStream)
WORK(cuMemPrefetchAsync_v2, false, PREFETCH2_PARAMS, PREFETCH2_ARGS, hStream)
WORK(cuMemPrefetchAsync_v2_ptsz, true, PREFETCH2_PARAMS, PREFETCH2_ARGS, hStream)

/* Host functions run through the trampoline of check_order.c. */
#define HOST_FUNC(Name, PerThread)                                                                 \
  AC_EXPORT CUresult Name(CUstream hStream, CUhostFn fn, void *userData) {                         \
    AC_START_OR_FAIL(Name);                                                                        \
    struct host_call *c =                                                                          \
        fn ? ac_on_host_function(#Name, hStream, PerThread, fn, NULL, userData) : NULL;            \
    if (!c) return ac_real.Name(hStream, fn, userData);                                            \
    CUresult r = ac_real.Name(hStream, ac_host_call_trampoline(), c);                              \
    if (r != CUDA_SUCCESS) ac_host_function_not_enqueued(c);                                       \
    return r;                                                                                      \
  }
HOST_FUNC(cuLaunchHostFunc, false)
HOST_FUNC(cuLaunchHostFunc_ptsz, true)

#define CALLBACK(Name, PerThread)                                                                  \
  AC_EXPORT CUresult Name(CUstream hStream, CUstreamCallback callback, void *userData,             \
                          unsigned int flags) {                                                    \
    AC_START_OR_FAIL(Name);                                                                        \
    struct host_call *c = callback && flags == 0 ? ac_on_host_function(#Name, hStream, PerThread,  \
                                                                       NULL, callback, userData)   \
                                                 : NULL;                                           \
    if (!c) return ac_real.Name(hStream, callback, userData, flags);                               \
    CUresult r = ac_real.Name(hStream, ac_stream_callback_trampoline(), c, flags);                 \
    if (r != CUDA_SUCCESS) ac_host_function_not_enqueued(c);                                       \
    return r;                                                                                      \
  }
CALLBACK(cuStreamAddCallback, false)
CALLBACK(cuStreamAddCallback_ptsz, true)

/* Synchronous copies and sets: an operation on the legacy stream (the
 * thread's own default stream for _ptds) that the host waits for. */
#define SYNC_COPY(Name, PerThread, Params, Args)                                                   \
  AC_EXPORT CUresult Name Params {                                                                 \
    AC_START_OR_FAIL(Name);                                                                        \
    CUresult r = ac_real.Name Args;                                                                \
    if (r == CUDA_SUCCESS) ac_on_sync_copy(#Name, PerThread);                                      \
    return r;                                                                                      \
  }
#define MEMCPY_PARAMS (CUdeviceptr dst, CUdeviceptr src, size_t ByteCount)
SYNC_COPY(cuMemcpy, false, MEMCPY_PARAMS, (dst, src, ByteCount))
SYNC_COPY(cuMemcpy_ptds, true, MEMCPY_PARAMS, (dst, src, ByteCount))
#define SYNC_HTOD_PARAMS (CUdeviceptr dstDevice, const void *srcHost, size_t ByteCount)
SYNC_COPY(cuMemcpyHtoD_v2, false, SYNC_HTOD_PARAMS, (dstDevice, srcHost, ByteCount))
SYNC_COPY(cuMemcpyHtoD_v2_ptds, true, SYNC_HTOD_PARAMS, (dstDevice, srcHost, ByteCount))
#define SYNC_DTOH_PARAMS (void *dstHost, CUdeviceptr srcDevice, size_t ByteCount)
SYNC_COPY(cuMemcpyDtoH_v2, false, SYNC_DTOH_PARAMS, (dstHost, srcDevice, ByteCount))
SYNC_COPY(cuMemcpyDtoH_v2_ptds, true, SYNC_DTOH_PARAMS, (dstHost, srcDevice, ByteCount))
#define SYNC_DTOD_PARAMS (CUdeviceptr dstDevice, CUdeviceptr srcDevice, size_t ByteCount)
SYNC_COPY(cuMemcpyDtoD_v2, false, SYNC_DTOD_PARAMS, (dstDevice, srcDevice, ByteCount))
SYNC_COPY(cuMemcpyDtoD_v2_ptds, true, SYNC_DTOD_PARAMS, (dstDevice, srcDevice, ByteCount))
#define SYNC_SET_PARAMS(T) (CUdeviceptr dstDevice, T value, size_t N)
SYNC_COPY(cuMemsetD8_v2, false, SYNC_SET_PARAMS(unsigned char), (dstDevice, value, N))
SYNC_COPY(cuMemsetD8_v2_ptds, true, SYNC_SET_PARAMS(unsigned char), (dstDevice, value, N))
SYNC_COPY(cuMemsetD16_v2, false, SYNC_SET_PARAMS(unsigned short), (dstDevice, value, N))
SYNC_COPY(cuMemsetD16_v2_ptds, true, SYNC_SET_PARAMS(unsigned short), (dstDevice, value, N))
SYNC_COPY(cuMemsetD32_v2, false, SYNC_SET_PARAMS(unsigned int), (dstDevice, value, N))
SYNC_COPY(cuMemsetD32_v2_ptds, true, SYNC_SET_PARAMS(unsigned int), (dstDevice, value, N))
