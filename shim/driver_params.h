/* driver_params.h - parameter lists that several rows of driver_api.inc share
 * (an entry point and its _ptsz / _v2 twins take the same parameters), each
 * with the argument list its wrappers forward, so that a list is written once
 * for the table and for the wrappers in interceptors_work.c.
 */
#ifndef AC_DRIVER_PARAMS_H
#define AC_DRIVER_PARAMS_H

#define AC_LAUNCH_PARAMS                                                                           \
  (CUfunction f, unsigned int gridDimX, unsigned int gridDimY, unsigned int gridDimZ,              \
   unsigned int blockDimX, unsigned int blockDimY, unsigned int blockDimZ,                         \
   unsigned int sharedMemBytes, CUstream hStream, void **kernelParams, void **extra)
#define AC_LAUNCH_ARGS                                                                             \
  (f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ, sharedMemBytes, hStream,      \
   kernelParams, extra)
#define AC_COOP_PARAMS                                                                             \
  (CUfunction f, unsigned int gridDimX, unsigned int gridDimY, unsigned int gridDimZ,              \
   unsigned int blockDimX, unsigned int blockDimY, unsigned int blockDimZ,                         \
   unsigned int sharedMemBytes, CUstream hStream, void **kernelParams)
#define AC_COOP_ARGS                                                                               \
  (f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ, sharedMemBytes, hStream,      \
   kernelParams)

/* Stream memory operations: work on their stream that reads or writes one address. */
#define AC_VALUE32_PARAMS (CUstream stream, CUdeviceptr addr, cuuint32_t value, unsigned int flags)
#define AC_VALUE64_PARAMS (CUstream stream, CUdeviceptr addr, cuuint64_t value, unsigned int flags)
#define AC_VALUE_ARGS (stream, addr, value, flags)
#define AC_BATCH_OP_PARAMS                                                                         \
  (CUstream stream, unsigned int count, CUstreamBatchMemOpParams *paramArray, unsigned int flags)
#define AC_BATCH_OP_ARGS (stream, count, paramArray, flags)

#define AC_PREFETCH_BATCH_PARAMS                                                                   \
  (CUdeviceptr * dptrs, size_t * sizes, size_t count, CUmemLocation * prefetchLocs,                \
   size_t * prefetchLocIdxs, size_t numPrefetchLocs, unsigned long long flags, CUstream hStream)
#define AC_PREFETCH_BATCH_ARGS                                                                     \
  (dptrs, sizes, count, prefetchLocs, prefetchLocIdxs, numPrefetchLocs, flags, hStream)
#define AC_DISCARD_BATCH_PARAMS                                                                    \
  (CUdeviceptr * dptrs, size_t * sizes, size_t count, unsigned long long flags, CUstream hStream)
#define AC_DISCARD_BATCH_ARGS (dptrs, sizes, count, flags, hStream)
#define AC_ALLOC_ASYNC_PARAMS (CUdeviceptr * dptr, size_t bytesize, CUstream hStream)
#define AC_ALLOC_POOL_PARAMS                                                                       \
  (CUdeviceptr * dptr, size_t bytesize, CUmemoryPool pool, CUstream hStream)
#define AC_MAP_ARRAY_PARAMS (CUarrayMapInfo * mapInfoList, unsigned int count, CUstream hStream)
#define AC_SEMAPHORES_PARAMS(Params)                                                               \
  (const CUexternalSemaphore *extSemArray, const Params *paramsArray, unsigned int numExtSems,     \
   CUstream stream)
#define AC_SEMAPHORES_ARGS (extSemArray, paramsArray, numExtSems, stream)
#define AC_INSTANTIATE_OLD_PARAMS                                                                  \
  (CUgraphExec * phGraphExec, CUgraph hGraph, CUgraphNode * phErrorNode, char *logBuffer,          \
   size_t bufferSize)
#define AC_INSTANTIATE_OLD_ARGS (phGraphExec, hGraph, phErrorNode, logBuffer, bufferSize)

#endif
