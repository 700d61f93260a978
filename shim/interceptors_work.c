/* interceptors_work.c - wrappers of the work that is enqueued on a stream
 * other than copies and sets (interceptors_copy.c): kernels, graphs,
 * prefetches, host functions, stream memory operations, stream-ordered
 * allocations, sparse mappings, external semaphores, and graphs changed
 * after instantiation. Thin: forward, then tell check_order.c, kernel_args.c
 * and graph_args.c. */
#include "repair.h"
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
    AC_REPAIR_BEFORE(ac_repair_launch_order(Func, Stream, PerThread, KernelParams, Extra));        \
    ac_launch_ahead(Func, Stream, PerThread, KernelParams, Extra);                                 \
    CUresult r = ac_real.Name Args;                                                                \
    struct ac_launch_dims dims = {                                                                 \
        {gridDimX, gridDimY, gridDimZ}, {blockDimX, blockDimY, blockDimZ}, sharedMemBytes};        \
    if (r == CUDA_SUCCESS)                                                                         \
      ac_on_launch(AC_RETURN_SLOT(), #Name, Func, &dims, Stream, PerThread, KernelParams, Extra);  \
    AC_REPAIR_AFTER();                                                                             \
    return r;                                                                                      \
  }
LAUNCH(cuLaunchKernel, false, AC_LAUNCH_PARAMS, AC_LAUNCH_ARGS, f, hStream, kernelParams, extra)
LAUNCH(cuLaunchKernel_ptsz, true, AC_LAUNCH_PARAMS, AC_LAUNCH_ARGS, f, hStream, kernelParams, extra)
LAUNCH(cuLaunchCooperativeKernel, false, AC_COOP_PARAMS, AC_COOP_ARGS, f, hStream, kernelParams,
       NULL)
LAUNCH(cuLaunchCooperativeKernel_ptsz, true, AC_COOP_PARAMS, AC_COOP_ARGS, f, hStream, kernelParams,
       NULL)
/* A launch with attributes: the events it records are told first (check_order.c). */
#define LAUNCH_EX(Name, PerThread)                                                                 \
  AC_EXPORT CUresult Name(const CUlaunchConfig *config, CUfunction f, void **kernelParams,         \
                          void **extra) {                                                          \
    AC_START_OR_FAIL(Name);                                                                        \
    AC_REPAIR_BEFORE(ac_repair_launch_order(f, config->hStream, PerThread, kernelParams, extra));  \
    ac_launch_ahead(f, config->hStream, PerThread, kernelParams, extra);                           \
    CUresult r = ac_real.Name(config, f, kernelParams, extra);                                     \
    if (r == CUDA_SUCCESS) {                                                                       \
      ac_on_launch_events(config, PerThread);                                                      \
      struct ac_launch_dims dims = {{config->gridDimX, config->gridDimY, config->gridDimZ},        \
                                    {config->blockDimX, config->blockDimY, config->blockDimZ},     \
                                    config->sharedMemBytes};                                       \
      ac_on_launch(AC_RETURN_SLOT(), #Name, f, &dims, config->hStream, PerThread, kernelParams,    \
                   extra);                                                                         \
    }                                                                                              \
    AC_REPAIR_AFTER();                                                                             \
    return r;                                                                                      \
  }
LAUNCH_EX(cuLaunchKernelEx, false)
LAUNCH_EX(cuLaunchKernelEx_ptsz, true)
/* A graph launch: an operation whose nodes' memory is judged (graph_args.c). */
#define GRAPH_LAUNCH(Name, PerThread)                                                              \
  AC_EXPORT CUresult Name(CUgraphExec hGraphExec, CUstream hStream) {                              \
    AC_START_OR_FAIL(Name);                                                                        \
    AC_REPAIR_BEFORE(ac_repair_graph_order(hGraphExec, hStream, PerThread));                       \
    ac_graph_launch_ahead(hGraphExec, hStream, PerThread);                                         \
    CUresult r = ac_real.Name(hGraphExec, hStream);                                                \
    if (r == CUDA_SUCCESS) ac_on_graph_launch(#Name, hGraphExec, hStream, PerThread);              \
    AC_REPAIR_AFTER();                                                                             \
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

/* An update gives the executable the parameters of another graph of its shape. */
#define UPDATE(Name, Params, Args)                                                                 \
  AC_EXPORT CUresult Name Params {                                                                 \
    AC_START_OR_FAIL(Name);                                                                        \
    CUresult r = ac_real.Name Args;                                                                \
    if (r == CUDA_SUCCESS) ac_on_graph_updated(hGraphExec, hGraph);                                \
    return r;                                                                                      \
  }
UPDATE(cuGraphExecUpdate_v2,
       (CUgraphExec hGraphExec, CUgraph hGraph, CUgraphExecUpdateResultInfo *resultInfo),
       (hGraphExec, hGraph, resultInfo))

AC_EXPORT CUresult cuGraphExecDestroy(CUgraphExec hGraphExec) {
  AC_START_OR_FAIL(cuGraphExecDestroy);
  CUresult r = ac_real.cuGraphExecDestroy(hGraphExec);
  if (r == CUDA_SUCCESS) ac_on_graph_exec_destroyed(hGraphExec);
  return r;
}

/* A prefetch: an operation of its stream that keeps the host out of nothing
 * (ac_order_enqueue_quiet), and the program's own last prefetch of the
 * memory (check_memory.c: the guard prefetches too). */
#define PREFETCH(Name, PerThread, Params, Args, Where)                                             \
  AC_EXPORT CUresult Name Params {                                                                 \
    AC_START_OR_FAIL(Name);                                                                        \
    CUresult r = ac_real.Name Args;                                                                \
    if (r == CUDA_SUCCESS) {                                                                       \
      ac_check_prefetched(devPtr, count, Where);                                                   \
      ac_on_quiet_work(#Name, hStream, PerThread);                                                 \
    }                                                                                              \
    return r;                                                                                      \
  }
static CUmemLocation location_of(CUdevice dev) {
  return dev == CU_DEVICE_CPU ? (CUmemLocation){.type = CU_MEM_LOCATION_TYPE_HOST}
                              : (CUmemLocation){.type = CU_MEM_LOCATION_TYPE_DEVICE, .id = dev};
}
#define PREFETCH_PARAMS (CUdeviceptr devPtr, size_t count, CUdevice dstDevice, CUstream hStream)
#define PREFETCH_ARGS (devPtr, count, dstDevice, hStream)
PREFETCH(cuMemPrefetchAsync, false, PREFETCH_PARAMS, PREFETCH_ARGS, location_of(dstDevice))
PREFETCH(cuMemPrefetchAsync_ptsz, true, PREFETCH_PARAMS, PREFETCH_ARGS, location_of(dstDevice))
#define PREFETCH2_PARAMS                                                                           \
  (CUdeviceptr devPtr, size_t count, CUmemLocation location, unsigned int flags, CUstream hStream)
#define PREFETCH2_ARGS (devPtr, count, location, flags, hStream)
PREFETCH(cuMemPrefetchAsync_v2, false, PREFETCH2_PARAMS, PREFETCH2_ARGS, location)
PREFETCH(cuMemPrefetchAsync_v2_ptsz, true, PREFETCH2_PARAMS, PREFETCH2_ARGS, location)

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

/* ---- stream memory operations ----
 * Each is an operation of its stream in which the GPU reads (wait) or writes
 * (write) one address: judged like a copy's operand, so memory attached to
 * another stream or to the host is found there too (AC301, AC302). */
#define VALUE_OP(Name, PerThread, Params)                                                          \
  AC_EXPORT CUresult Name Params {                                                                 \
    AC_START_OR_FAIL(Name);                                                                        \
    AC_REPAIR_BEFORE(ac_repair_copy_order(#Name, stream, PerThread, addr, 0));                     \
    CUresult r = ac_real.Name AC_VALUE_ARGS;                                                       \
    if (r == CUDA_SUCCESS) ac_on_copy(#Name, stream, PerThread, addr, 0);                          \
    AC_REPAIR_AFTER();                                                                             \
    return r;                                                                                      \
  }
VALUE_OP(cuStreamWaitValue32, false, AC_VALUE32_PARAMS)
VALUE_OP(cuStreamWaitValue32_ptsz, true, AC_VALUE32_PARAMS)
VALUE_OP(cuStreamWaitValue32_v2, false, AC_VALUE32_PARAMS)
VALUE_OP(cuStreamWaitValue32_v2_ptsz, true, AC_VALUE32_PARAMS)
VALUE_OP(cuStreamWaitValue64, false, AC_VALUE64_PARAMS)
VALUE_OP(cuStreamWaitValue64_ptsz, true, AC_VALUE64_PARAMS)
VALUE_OP(cuStreamWaitValue64_v2, false, AC_VALUE64_PARAMS)
VALUE_OP(cuStreamWaitValue64_v2_ptsz, true, AC_VALUE64_PARAMS)
VALUE_OP(cuStreamWriteValue32, false, AC_VALUE32_PARAMS)
VALUE_OP(cuStreamWriteValue32_ptsz, true, AC_VALUE32_PARAMS)
VALUE_OP(cuStreamWriteValue32_v2, false, AC_VALUE32_PARAMS)
VALUE_OP(cuStreamWriteValue32_v2_ptsz, true, AC_VALUE32_PARAMS)
VALUE_OP(cuStreamWriteValue64, false, AC_VALUE64_PARAMS)
VALUE_OP(cuStreamWriteValue64_ptsz, true, AC_VALUE64_PARAMS)
VALUE_OP(cuStreamWriteValue64_v2, false, AC_VALUE64_PARAMS)
VALUE_OP(cuStreamWriteValue64_v2_ptsz, true, AC_VALUE64_PARAMS)

/* The address a batched operation reads or writes, or 0 (a flush, a barrier). */
static CUdeviceptr batch_op_address(const CUstreamBatchMemOpParams *op) {
  switch (op->operation) {
  case CU_STREAM_MEM_OP_WAIT_VALUE_32:
  case CU_STREAM_MEM_OP_WAIT_VALUE_64:
    return op->waitValue.address;
  case CU_STREAM_MEM_OP_WRITE_VALUE_32:
  case CU_STREAM_MEM_OP_WRITE_VALUE_64:
    return op->writeValue.address;
  default:
    return 0;
  }
}

/* Under --on-error repair, before the batch: each operation ordered. */
static void repair_batch_mem_op(const char *api, CUstream stream, bool per_thread, unsigned count,
                                const CUstreamBatchMemOpParams *ops) {
  for (unsigned i = 0; ops && i < count; i++)
    if (batch_op_address(&ops[i]))
      ac_repair_copy_order(api, stream, per_thread, batch_op_address(&ops[i]), 0);
}

/* A batch: each operation with an address is judged in the batch's stream;
 * a batch without one is still an operation of the stream. */
static void on_batch_mem_op(const char *api, CUstream stream, bool per_thread, unsigned count,
                            const CUstreamBatchMemOpParams *ops) {
  bool judged = false;
  for (unsigned i = 0; ops && i < count; i++) {
    CUdeviceptr addr = batch_op_address(&ops[i]);
    if (!addr) continue;
    ac_on_copy(api, stream, per_thread, addr, 0);
    judged = true;
  }
  if (!judged) ac_on_work(api, stream, per_thread);
}

#define BATCH_OP(Name, PerThread)                                                                  \
  AC_EXPORT CUresult Name AC_BATCH_OP_PARAMS {                                                     \
    AC_START_OR_FAIL(Name);                                                                        \
    AC_REPAIR_BEFORE(repair_batch_mem_op(#Name, stream, PerThread, count, paramArray));            \
    CUresult r = ac_real.Name AC_BATCH_OP_ARGS;                                                    \
    if (r == CUDA_SUCCESS) on_batch_mem_op(#Name, stream, PerThread, count, paramArray);           \
    AC_REPAIR_AFTER();                                                                             \
    return r;                                                                                      \
  }
BATCH_OP(cuStreamBatchMemOp, false)
BATCH_OP(cuStreamBatchMemOp_ptsz, true)
BATCH_OP(cuStreamBatchMemOp_v2, false)
BATCH_OP(cuStreamBatchMemOp_v2_ptsz, true)

/* ---- more work on a stream ---- */
WORK(cuGraphUpload, false, (CUgraphExec hGraphExec, CUstream hStream), (hGraphExec, hStream),
     hStream)
WORK(cuGraphUpload_ptsz, true, (CUgraphExec hGraphExec, CUstream hStream), (hGraphExec, hStream),
     hStream)
/* A batch of prefetches: range i goes where the last location whose index
 * is at most i says. */
static void batch_prefetched(CUdeviceptr *dptrs, size_t *sizes, size_t count, CUmemLocation *locs,
                             size_t *loc_idxs, size_t num_locs) {
  size_t j = 0;
  for (size_t i = 0; dptrs && sizes && locs && loc_idxs && i < count; i++) {
    while (j + 1 < num_locs && loc_idxs[j + 1] <= i)
      j++;
    if (num_locs && loc_idxs[j] <= i) ac_check_prefetched(dptrs[i], sizes[i], locs[j]);
  }
}
/* A batch of prefetches keeps the host out of nothing, as one does; one that
 * discards first makes the memory's contents undefined while it runs, and so
 * is work the host waits for like any other. */
#define PREFETCH_BATCH(Name, PerThread, OnWork)                                                    \
  AC_EXPORT CUresult Name AC_PREFETCH_BATCH_PARAMS {                                               \
    AC_START_OR_FAIL(Name);                                                                        \
    CUresult r = ac_real.Name AC_PREFETCH_BATCH_ARGS;                                              \
    if (r == CUDA_SUCCESS) {                                                                       \
      batch_prefetched(dptrs, sizes, count, prefetchLocs, prefetchLocIdxs, numPrefetchLocs);       \
      OnWork(#Name, hStream, PerThread);                                                           \
    }                                                                                              \
    return r;                                                                                      \
  }
PREFETCH_BATCH(cuMemPrefetchBatchAsync, false, ac_on_quiet_work)
PREFETCH_BATCH(cuMemPrefetchBatchAsync_ptsz, true, ac_on_quiet_work)
WORK(cuMemDiscardBatchAsync, false, AC_DISCARD_BATCH_PARAMS, AC_DISCARD_BATCH_ARGS, hStream)
WORK(cuMemDiscardBatchAsync_ptsz, true, AC_DISCARD_BATCH_PARAMS, AC_DISCARD_BATCH_ARGS, hStream)
PREFETCH_BATCH(cuMemDiscardAndPrefetchBatchAsync, false, ac_on_work)
PREFETCH_BATCH(cuMemDiscardAndPrefetchBatchAsync_ptsz, true, ac_on_work)

/* A stream-ordered allocation, a sparse array's mapping and an external
 * semaphore's signal or wait name no managed memory, but each is an operation
 * of its stream: memory attached to it stays the GPU's until it completes. */
#define ALLOC_ASYNC_ARGS (dptr, bytesize, hStream)
WORK(cuMemAllocAsync, false, AC_ALLOC_ASYNC_PARAMS, ALLOC_ASYNC_ARGS, hStream)
WORK(cuMemAllocAsync_ptsz, true, AC_ALLOC_ASYNC_PARAMS, ALLOC_ASYNC_ARGS, hStream)
#define ALLOC_POOL_ARGS (dptr, bytesize, pool, hStream)
WORK(cuMemAllocFromPoolAsync, false, AC_ALLOC_POOL_PARAMS, ALLOC_POOL_ARGS, hStream)
WORK(cuMemAllocFromPoolAsync_ptsz, true, AC_ALLOC_POOL_PARAMS, ALLOC_POOL_ARGS, hStream)
#define MAP_ARRAY_ARGS (mapInfoList, count, hStream)
WORK(cuMemMapArrayAsync, false, AC_MAP_ARRAY_PARAMS, MAP_ARRAY_ARGS, hStream)
WORK(cuMemMapArrayAsync_ptsz, true, AC_MAP_ARRAY_PARAMS, MAP_ARRAY_ARGS, hStream)
#define SIGNAL_PARAMS AC_SEMAPHORES_PARAMS(CUDA_EXTERNAL_SEMAPHORE_SIGNAL_PARAMS)
#define WAIT_PARAMS AC_SEMAPHORES_PARAMS(CUDA_EXTERNAL_SEMAPHORE_WAIT_PARAMS)
WORK(cuSignalExternalSemaphoresAsync, false, SIGNAL_PARAMS, AC_SEMAPHORES_ARGS, stream)
WORK(cuSignalExternalSemaphoresAsync_ptsz, true, SIGNAL_PARAMS, AC_SEMAPHORES_ARGS, stream)
WORK(cuWaitExternalSemaphoresAsync, false, WAIT_PARAMS, AC_SEMAPHORES_ARGS, stream)
WORK(cuWaitExternalSemaphoresAsync_ptsz, true, WAIT_PARAMS, AC_SEMAPHORES_ARGS, stream)

/* ---- graphs instantiated or updated through the ABIs of CUDA 10 and 11 ---- */
INSTANTIATE(cuGraphInstantiate, AC_INSTANTIATE_OLD_PARAMS, AC_INSTANTIATE_OLD_ARGS)
INSTANTIATE(cuGraphInstantiate_v2, AC_INSTANTIATE_OLD_PARAMS, AC_INSTANTIATE_OLD_ARGS)

UPDATE(cuGraphExecUpdate,
       (CUgraphExec hGraphExec, CUgraph hGraph, CUgraphNode *hErrorNode_out,
        CUgraphExecUpdateResult *updateResult_out),
       (hGraphExec, hGraph, hErrorNode_out, updateResult_out))

/* ---- executable graphs changed node by node: what the node gives the GPU
 * is read again from its new parameters (graph_args.c) ---- */
#define NODE_SET(Name, Params, Args, Given, Tell)                                                  \
  AC_EXPORT CUresult Name Params {                                                                 \
    AC_START_OR_FAIL(Name);                                                                        \
    CUresult r = ac_real.Name Args;                                                                \
    if (r == CUDA_SUCCESS && (Given)) Tell;                                                        \
    return r;                                                                                      \
  }
NODE_SET(cuGraphExecKernelNodeSetParams_v2,
         (CUgraphExec hGraphExec, CUgraphNode hNode, const CUDA_KERNEL_NODE_PARAMS *p),
         (hGraphExec, hNode, p), p,
         ac_on_graph_kernel_node_set(hGraphExec, hNode, p->func ? p->func : (CUfunction)p->kern,
                                     p->kernelParams, p->extra))
NODE_SET(cuGraphExecKernelNodeSetParams,
         (CUgraphExec hGraphExec, CUgraphNode hNode, const CUDA_KERNEL_NODE_PARAMS_v1 *p),
         (hGraphExec, hNode, p), p,
         ac_on_graph_kernel_node_set(hGraphExec, hNode, p->func, p->kernelParams, p->extra))
NODE_SET(cuGraphExecMemcpyNodeSetParams,
         (CUgraphExec hGraphExec, CUgraphNode hNode, const CUDA_MEMCPY3D *p, CUcontext ctx),
         (hGraphExec, hNode, p, ctx), p, ac_on_graph_copy_node_set(hGraphExec, hNode, p))
NODE_SET(cuGraphExecMemsetNodeSetParams,
         (CUgraphExec hGraphExec, CUgraphNode hNode, const CUDA_MEMSET_NODE_PARAMS *p,
          CUcontext ctx),
         (hGraphExec, hNode, p, ctx), p, ac_on_graph_memset_node_set(hGraphExec, hNode, p->dst))
NODE_SET(cuGraphExecChildGraphNodeSetParams,
         (CUgraphExec hGraphExec, CUgraphNode hNode, CUgraph child), (hGraphExec, hNode, child),
         child, ac_on_graph_child_node_set(hGraphExec, hNode, child))
NODE_SET(cuGraphExecEventRecordNodeSetEvent,
         (CUgraphExec hGraphExec, CUgraphNode hNode, CUevent event), (hGraphExec, hNode, event),
         event, ac_on_graph_event_node_set(hGraphExec, hNode, event))
NODE_SET(cuGraphExecEventWaitNodeSetEvent,
         (CUgraphExec hGraphExec, CUgraphNode hNode, CUevent event), (hGraphExec, hNode, event),
         event, ac_on_graph_event_node_set(hGraphExec, hNode, event))
NODE_SET(cuGraphExecNodeSetParams,
         (CUgraphExec hGraphExec, CUgraphNode hNode, CUgraphNodeParams *p), (hGraphExec, hNode, p),
         p, ac_on_graph_node_params_set(hGraphExec, hNode, p))

/* ---- code loading: over a driver without cuFuncGetParamInfo (before 12.4)
 * the image is read for its kernels' parameter layouts (module_images.c);
 * otherwise these only forward ---- */
#define LOAD(Name, Params, Args, Handle, Image)                                                    \
  AC_EXPORT CUresult Name Params {                                                                 \
    AC_START_OR_FAIL(Name);                                                                        \
    CUresult r = ac_real.Name Args;                                                                \
    if (r == CUDA_SUCCESS && (Handle)) ac_image_loaded((uintptr_t) * (Handle), Image);             \
    return r;                                                                                      \
  }
LOAD(cuModuleLoadData, (CUmodule * module, const void *image), (module, image), module, image)
LOAD(cuModuleLoadDataEx,
     (CUmodule * module, const void *image, unsigned int numOptions, CUjit_option *options,
      void **optionValues),
     (module, image, numOptions, options, optionValues), module, image)
LOAD(cuModuleLoadFatBinary, (CUmodule * module, const void *fatCubin), (module, fatCubin), module,
     fatCubin)
LOAD(cuLibraryLoadData,
     (CUlibrary * library, const void *code, CUjit_option *jitOptions, void **jitOptionsValues,
      unsigned int numJitOptions, CUlibraryOption *libraryOptions, void **libraryOptionValues,
      unsigned int numLibraryOptions),
     (library, code, jitOptions, jitOptionsValues, numJitOptions, libraryOptions,
      libraryOptionValues, numLibraryOptions),
     library, code)

#define FIND_FUNCTION(Name, Handle, Module)                                                        \
  AC_EXPORT CUresult Name(Handle *out, Module m, const char *name) {                               \
    AC_START_OR_FAIL(Name);                                                                        \
    CUresult r = ac_real.Name(out, m, name);                                                       \
    if (r == CUDA_SUCCESS && out) ac_image_function_found((uintptr_t)*out, (uintptr_t)m, name);    \
    return r;                                                                                      \
  }
FIND_FUNCTION(cuModuleGetFunction, CUfunction, CUmodule)
FIND_FUNCTION(cuLibraryGetKernel, CUkernel, CUlibrary)
