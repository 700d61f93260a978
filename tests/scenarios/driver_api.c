/* driver_api.c - entry points beyond attach, launch and copy that change what
 * the model must know: stream memory operations (work on their stream that
 * reads or writes one address), the end of a context (every allocation and
 * stream of it ends), the unloading of a module (its __managed__ variables
 * end), a library's variables found by cuLibraryGetGlobal, the events cuLaunchKernelEx records,
 * stream work that names no managed memory (stream-ordered allocations, sparse
 * mappings, external semaphores), placement advice (told, not judged),
 * green contexts: their streams and their events, and a context's own events.
 *
 *   driver_api CASE
 */
#include <stdbool.h>
#include <stdint.h>
#include <unistd.h>

#include "../fakecuda/sparse_tile.h"
#include "scenario.h"

static const char ptx[] = ".version 8.0\n.target sm_90\n.address_size 64\n"
                          ".visible .global .attribute(.managed) .align 4 .b8 table[4096];\n"
                          ".visible .global .align 4 .b8 plain[64];\n"
                          ".visible .entry use(.param .u64 p)\n{\n  ret;\n}\n"
                          ".visible .entry uses_table()\n{\n  ret;\n}\n";

static CUdevice dev;
static CUmodule mod;
static CUfunction use, uses_table;
static CUstream s, t;
static CUdeviceptr m, g;
static volatile int sink;

static void launch_use(CUstream stream, CUdeviceptr p) {
  launch_with_pointer(use, stream, p);
}
static void load_module(void) {
  EXPECT_RC(cu.cuModuleLoadData(&mod, ptx), CUDA_SUCCESS);
  EXPECT_RC(cu.cuModuleGetFunction(&use, mod, "use"), CUDA_SUCCESS);
  EXPECT_RC(cu.cuModuleGetFunction(&uses_table, mod, "uses_table"), CUDA_SUCCESS);
}
/* The primary context, two streams, two managed allocations. */
static void start_primary(void) {
  start_cuda("link");
  EXPECT_RC(cu.cuDeviceGet(&dev, 0), CUDA_SUCCESS);
  load_module();
  EXPECT_RC(cu.cuStreamCreate(&s, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
  EXPECT_RC(cu.cuStreamCreate(&t, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
  EXPECT_RC(cu.cuMemAllocManaged(&m, 1 << 20, CU_MEM_ATTACH_GLOBAL), CUDA_SUCCESS);
  EXPECT_RC(cu.cuMemAllocManaged(&g, 1 << 20, CU_MEM_ATTACH_GLOBAL), CUDA_SUCCESS);
}

/* ---- stream memory operations ---- */

/* The driver refuses a managed address in a stream memory operation
 * (docs/driver-facts.md): memory single-attached to s named from t is an
 * error the program is told of, not a race to report. */
static void value_ops_managed_refused(void) {
  CUstreamBatchMemOpParams op;
  memset(&op, 0, sizeof op);
  op.writeValue.operation = CU_STREAM_MEM_OP_WRITE_VALUE_64;
  op.writeValue.address = m + 64;
  op.writeValue.value64 = 7;
  attach_sync(s, m, CU_MEM_ATTACH_SINGLE);
  EXPECT_RC(cuStreamWriteValue32(t, m, 1, CU_STREAM_WRITE_VALUE_DEFAULT), CUDA_ERROR_INVALID_VALUE);
  EXPECT_RC(cuStreamWaitValue32(t, m, 1, CU_STREAM_WAIT_VALUE_GEQ), CUDA_ERROR_INVALID_VALUE);
  EXPECT_RC(cuStreamBatchMemOp(t, 1, &op, 0), CUDA_ERROR_INVALID_VALUE);
}
static CUdeviceptr device_word(void) {
  CUdeviceptr d = 0;
  EXPECT_RC(cu.cuMemAlloc(&d, 4096), CUDA_SUCCESS);
  return d;
}
/* wrong: a write to device memory makes its stream busy; the CPU touches
 * GLOBAL memory (AC202) */
static void write_value_busy_touch(void) {
  EXPECT_RC(cuStreamWriteValue64(s, device_word(), 1, CU_STREAM_WRITE_VALUE_DEFAULT), CUDA_SUCCESS);
  sink = *(volatile int *)g;
}
/* right: ... after the host waited for it; a batch likewise */
static void write_value_same_stream(void) {
  CUstreamBatchMemOpParams op;
  memset(&op, 0, sizeof op);
  op.writeValue.operation = CU_STREAM_MEM_OP_WRITE_VALUE_32;
  op.writeValue.address = device_word();
  op.writeValue.value = 7;
  attach_sync(s, m, CU_MEM_ATTACH_SINGLE);
  EXPECT_RC(cuStreamWriteValue32(s, op.writeValue.address, 1, CU_STREAM_WRITE_VALUE_DEFAULT),
            CUDA_SUCCESS);
  EXPECT_RC(cuStreamBatchMemOp(s, 1, &op, 0), CUDA_SUCCESS);
  EXPECT_RC(cu.cuStreamSynchronize(s), CUDA_SUCCESS);
  sink = *(volatile int *)g;
  sink = *(volatile int *)m;
}

/* ---- more work on a stream: uploads, prefetch batches ---- */

/* A graph of one kernel on p, captured on capture_on. */
static CUgraph captured(CUstream capture_on, CUdeviceptr p) {
  CUgraph graph = NULL;
  EXPECT_RC(cu.cuStreamBeginCapture(capture_on, CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_SUCCESS);
  launch_use(capture_on, p);
  EXPECT_RC(cu.cuStreamEndCapture(capture_on, &graph), CUDA_SUCCESS);
  return graph;
}
static void upload_on_s(void) {
  CUgraphExec exec;
  EXPECT_RC(cuGraphInstantiate(&exec, captured(t, m), 0), CUDA_SUCCESS);
  EXPECT_RC(cuGraphUpload(exec, s), CUDA_SUCCESS);
}
/* wrong: an upload is work of its stream; the CPU touches GLOBAL memory (AC202) */
static void graph_upload_busy_touch(void) {
  upload_on_s();
  sink = *(volatile int *)g;
}
/* right: ... after the host waited for it */
static void graph_upload_sync(void) {
  upload_on_s();
  EXPECT_RC(cu.cuStreamSynchronize(s), CUDA_SUCCESS);
  sink = *(volatile int *)g;
}
static void prefetch_batch_on_s(void) {
  size_t size = 1 << 20, loc_index = 0;
  CUmemLocation loc = {CU_MEM_LOCATION_TYPE_DEVICE, 0};
  EXPECT_RC(cuMemPrefetchBatchAsync(&m, &size, 1, &loc, &loc_index, 1, 0, s), CUDA_SUCCESS);
}
/* right: a prefetch batch keeps the host out of nothing (a prefetch moves
 * memory without changing it, and the driver takes one only where the CPU may
 * touch managed memory while the GPU works) */
static void prefetch_batch_touch(void) {
  prefetch_batch_on_s();
  sink = *(volatile int *)g;
}
/* right: ... nor after the host waited for it */
static void prefetch_batch_sync(void) {
  prefetch_batch_on_s();
  EXPECT_RC(cu.cuStreamSynchronize(s), CUDA_SUCCESS);
  sink = *(volatile int *)g;
}
static void prefetch_on(CUstream stream, CUdeviceptr p, CUmemLocationType where) {
  CUmemLocation loc = {where, 0};
  EXPECT_RC(cuMemPrefetchAsync(p, 1 << 20, loc, 0, stream), CUDA_SUCCESS);
}
/* right: prefetched to the host on the legacy stream, then written at once,
 * as NVIDIA's UnifiedMemoryPerf sample does where the device has concurrent
 * managed access (without it, the driver refuses the prefetch) */
static void prefetch_host_then_write(void) {
  prefetch_on(NULL, m, CU_MEM_LOCATION_TYPE_HOST);
  *(volatile int *)m = 1;
}
/* the stand-in's Jetson (no concurrent managed access) refuses a prefetch,
 * to the host too, as the reference says the driver does */
static void prefetch_refused(void) {
  CUmemLocation loc = {CU_MEM_LOCATION_TYPE_HOST, 0};
  EXPECT_RC(cuMemPrefetchAsync(m, 1 << 20, loc, 0, NULL), CUDA_ERROR_INVALID_DEVICE);
  *(volatile int *)m = 1;
}
/* wrong: work on s, then a prefetch behind it: the work keeps s busy (AC202) */
static void work_then_prefetch_touch(void) {
  launch_use(s, m);
  prefetch_on(s, m, CU_MEM_LOCATION_TYPE_DEVICE);
  sink = *(volatile int *)g;
}
/* right: ... the host waited for an event recorded after the work; only the
 * prefetch may still be running */
static void work_synced_prefetch_pending(void) {
  CUevent e;
  EXPECT_RC(cu.cuEventCreate(&e, CU_EVENT_DISABLE_TIMING), CUDA_SUCCESS);
  launch_use(s, m);
  EXPECT_RC(cu.cuEventRecord(e, s), CUDA_SUCCESS);
  prefetch_on(s, m, CU_MEM_LOCATION_TYPE_DEVICE);
  EXPECT_RC(cu.cuEventSynchronize(e), CUDA_SUCCESS);
  sink = *(volatile int *)g;
}
/* right: a prefetch on the legacy stream still orders: it waits for the
 * blocking stream's kernel, and work of another blocking stream waits for it,
 * so the host waiting for that work has seen the kernel complete */
static void prefetch_orders_legacy(void) {
  CUstream a, b;
  EXPECT_RC(cu.cuStreamCreate(&a, CU_STREAM_DEFAULT), CUDA_SUCCESS);
  EXPECT_RC(cu.cuStreamCreate(&b, CU_STREAM_DEFAULT), CUDA_SUCCESS);
  launch_use(a, m);
  prefetch_on(NULL, m, CU_MEM_LOCATION_TYPE_DEVICE);
  launch_use(b, m);
  EXPECT_RC(cu.cuStreamSynchronize(b), CUDA_SUCCESS);
  sink = *(volatile int *)g;
}

/* ---- stream work that names no managed memory ----
 * Each case runs one such operation on s and touches GLOBAL memory: while
 * the operation may be in flight (AC202), or after the host waited for s. */
static void work_then_touch(void (*work_on_s)(void), bool wait) {
  work_on_s();
  if (wait) EXPECT_RC(cu.cuStreamSynchronize(s), CUDA_SUCCESS);
  sink = *(volatile int *)g;
}
static void alloc_async_on_s(void) {
  CUdeviceptr d;
  EXPECT_RC(cuMemAllocAsync(&d, 4096, s), CUDA_SUCCESS);
}
static void free_async_on_s(void) {
  CUdeviceptr d;
  EXPECT_RC(cuMemAllocAsync(&d, 4096, t), CUDA_SUCCESS);
  EXPECT_RC(cu.cuStreamSynchronize(t), CUDA_SUCCESS);
  EXPECT_RC(cuMemFreeAsync(d, s), CUDA_SUCCESS);
}
static void pool_alloc_on_s(void) {
  CUmemoryPool pool;
  CUdeviceptr d;
  EXPECT_RC(cuDeviceGetDefaultMemPool(&pool, dev), CUDA_SUCCESS);
  EXPECT_RC(cuMemAllocFromPoolAsync(&d, 4096, pool, s), CUDA_SUCCESS);
}
static void map_array_on_s(void) {
  CUarray array;
  CUmemGenericAllocationHandle tiles;
  EXPECT_RC(sparse_tile_map(s, &array, &tiles), CUDA_SUCCESS);
}
/* A semaphore another API exported (any descriptor, over the stand-in). */
static CUexternalSemaphore imported_semaphore(void) {
  CUDA_EXTERNAL_SEMAPHORE_HANDLE_DESC desc = {.type = CU_EXTERNAL_SEMAPHORE_HANDLE_TYPE_OPAQUE_FD,
                                              .handle.fd = dup(2)};
  CUexternalSemaphore sem = NULL;
  EXPECT_RC(cuImportExternalSemaphore(&sem, &desc), CUDA_SUCCESS);
  return sem;
}
static void semaphore_signal_on_s(void) {
  CUexternalSemaphore sem = imported_semaphore();
  CUDA_EXTERNAL_SEMAPHORE_SIGNAL_PARAMS params = {0};
  EXPECT_RC(cuSignalExternalSemaphoresAsync(&sem, &params, 1, s), CUDA_SUCCESS);
}
static void semaphore_wait_on_s(void) {
  CUexternalSemaphore sem = imported_semaphore();
  CUDA_EXTERNAL_SEMAPHORE_WAIT_PARAMS params = {0};
  EXPECT_RC(cuWaitExternalSemaphoresAsync(&sem, &params, 1, s), CUDA_SUCCESS);
}
/* The driver refuses a signal or a wait of no semaphore: no work on s. */
static void semaphores_refused_on_s(void) {
  EXPECT_RC(cuSignalExternalSemaphoresAsync(NULL, NULL, 0, s), CUDA_ERROR_INVALID_VALUE);
  EXPECT_RC(cuWaitExternalSemaphoresAsync(NULL, NULL, 0, s), CUDA_ERROR_INVALID_VALUE);
}
/* wrong: each is work of s while the CPU touches GLOBAL memory (AC202) */
static void alloc_async_busy_touch(void) {
  work_then_touch(alloc_async_on_s, false);
}
static void free_async_busy_touch(void) {
  work_then_touch(free_async_on_s, false);
}
static void pool_alloc_busy_touch(void) {
  work_then_touch(pool_alloc_on_s, false);
}
static void map_array_busy_touch(void) {
  work_then_touch(map_array_on_s, false);
}
static void semaphore_signal_busy_touch(void) {
  work_then_touch(semaphore_signal_on_s, false);
}
static void semaphore_wait_busy_touch(void) {
  work_then_touch(semaphore_wait_on_s, false);
}
/* right: ... after the host waited for s, or when the driver refused it */
static void alloc_async_sync(void) {
  work_then_touch(alloc_async_on_s, true);
}
static void free_async_sync(void) {
  work_then_touch(free_async_on_s, true);
}
static void pool_alloc_sync(void) {
  work_then_touch(pool_alloc_on_s, true);
}
static void map_array_sync(void) {
  work_then_touch(map_array_on_s, true);
}
static void semaphore_wait_sync(void) {
  work_then_touch(semaphore_wait_on_s, true);
}
static void semaphores_refused_touch(void) {
  work_then_touch(semaphores_refused_on_s, false);
}

/* ---- placement advice: told in the timeline, not a transition ---- */

static void advise_g(void) {
  CUmemLocation gpu = {CU_MEM_LOCATION_TYPE_DEVICE, 0};
  EXPECT_RC(cuMemAdvise(g, 4096, CU_MEM_ADVISE_SET_READ_MOSTLY, gpu), CUDA_SUCCESS);
}
static void advise_then_launch_on_s(void) {
  advise_g();
  launch_use(s, m);
}
/* wrong: advice hides nothing: GLOBAL memory touched while s runs (AC202) */
static void advised_busy_touch(void) {
  work_then_touch(advise_then_launch_on_s, false);
}
/* right: ... after the host waited for s; and advice alone is no work */
static void advised_sync(void) {
  work_then_touch(advise_then_launch_on_s, true);
}
static void advice_alone_touch(void) {
  work_then_touch(advise_g, false);
}

/* The instantiation ABI of CUDA 11, which cuda.h 12 and later declare only
 * for the driver's own build; old binaries still call it. */
CUresult CUDAAPI cuGraphInstantiate_v2(CUgraphExec *phGraphExec, CUgraph hGraph,
                                       CUgraphNode *phErrorNode, char *logBuffer,
                                       size_t bufferSize);
static void launch_old_instantiated(CUstream capture_on, CUstream launch_on) {
  CUgraphExec exec;
  attach_sync(s, m, CU_MEM_ATTACH_SINGLE);
  EXPECT_RC(cuGraphInstantiate_v2(&exec, captured(capture_on, m), NULL, NULL, 0), CUDA_SUCCESS);
  EXPECT_RC(cuGraphLaunch(exec, launch_on), CUDA_SUCCESS);
  EXPECT_RC(cu.cuStreamSynchronize(launch_on), CUDA_SUCCESS);
}
/* wrong: its kernel node is given memory single-attached to s, launched on t (AC301) */
static void old_instantiate_foreign(void) {
  launch_old_instantiated(t, t);
}
/* right: ... launched on s */
static void old_instantiate_same_stream(void) {
  launch_old_instantiated(s, s);
}

/* ---- the end of a context ----
 * Work left outstanding (an asynchronous set on s), then the context ends:
 * that work is over, s is gone, and the memory of the next context is the
 * CPU's while nothing runs. */

static void busy_then(CUresult (*end)(void)) {
  EXPECT_RC(cuMemsetD32Async(m, 0, 16, s), CUDA_SUCCESS);
  EXPECT_RC(end(), CUDA_SUCCESS);
}
static CUcontext created;
static CUresult destroy_created(void) {
  return cuCtxDestroy(created);
}
static CUresult reset_primary(void) {
  return cuDevicePrimaryCtxReset(dev);
}
static CUresult release_primary(void) {
  return cuDevicePrimaryCtxRelease(dev);
}
/* A program of its own context (cuCtxCreate), without the primary one. */
static void start_created(void) {
  load_driver("link");
  EXPECT_RC(cu.cuInit(0), CUDA_SUCCESS);
  EXPECT_RC(cu.cuDeviceGet(&dev, 0), CUDA_SUCCESS);
  EXPECT_RC(cuCtxCreate(&created, NULL, 0, dev), CUDA_SUCCESS);
  EXPECT_RC(cu.cuStreamCreate(&s, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
  EXPECT_RC(cu.cuMemAllocManaged(&m, 1 << 20, CU_MEM_ATTACH_GLOBAL), CUDA_SUCCESS);
}
static void next_context(bool primary) {
  CUcontext ctx;
  if (primary) {
    EXPECT_RC(cu.cuDevicePrimaryCtxRetain(&ctx, dev), CUDA_SUCCESS);
    EXPECT_RC(cu.cuCtxSetCurrent(ctx), CUDA_SUCCESS);
  } else {
    EXPECT_RC(cuCtxCreate(&ctx, NULL, 0, dev), CUDA_SUCCESS);
  }
}
/* right: the new context's memory, touched while nothing runs (larger than
 * anything before, so it lands on no address the page guard once knew) */
static void touch_next(bool primary) {
  next_context(primary);
  CUdeviceptr fresh;
  EXPECT_RC(cu.cuMemAllocManaged(&fresh, 8 << 20, CU_MEM_ATTACH_GLOBAL), CUDA_SUCCESS);
  *(volatile int *)fresh = 1;
}
/* wrong: the old context's stream used in the new one (AC106, refused) */
static void attach_to_gone_stream(bool primary) {
  next_context(primary);
  CUdeviceptr fresh;
  EXPECT_RC(cu.cuMemAllocManaged(&fresh, 1 << 20, CU_MEM_ATTACH_GLOBAL), CUDA_SUCCESS);
  EXPECT_RC(cu.cuStreamAttachMemAsync(s, fresh, 0, CU_MEM_ATTACH_SINGLE),
            CUDA_ERROR_INVALID_HANDLE);
}
static void ctx_destroy_touch(void) {
  start_created();
  busy_then(destroy_created);
  touch_next(false);
}
static void ctx_destroy_gone_stream(void) {
  start_created();
  busy_then(destroy_created);
  attach_to_gone_stream(false);
}
static void primary_reset_touch(void) {
  start_primary();
  busy_then(reset_primary);
  touch_next(true);
}
static void primary_reset_gone_stream(void) {
  start_primary();
  busy_then(reset_primary);
  attach_to_gone_stream(true);
}
static void primary_release_touch(void) {
  start_primary();
  busy_then(release_primary); /* start_cuda's one retain: the context ends */
  touch_next(true);
}

/* ---- modules: __managed__ variables end with their module ---- */

static CUdeviceptr table_of(CUmodule module) {
  CUdeviceptr p;
  size_t size;
  EXPECT_RC(cu.cuModuleGetGlobal(&p, &size, module, "table"), CUDA_SUCCESS);
  return p;
}
/* wrong: the variable is gone; attaching its old address is no managed memory (AC104) */
static void module_unload_stale_attach(void) {
  CUdeviceptr table = table_of(mod);
  EXPECT_RC(cuModuleUnload(mod), CUDA_SUCCESS);
  EXPECT_RC(cu.cuStreamAttachMemAsync(s, table, 0, CU_MEM_ATTACH_SINGLE), CUDA_ERROR_INVALID_VALUE);
}
/* A module of one large __managed__ variable (its own mapping, which the
 * driver hands out again once the module is gone). */
static const char frames_ptx[] =
    ".version 8.0\n.target sm_90\n.address_size 64\n"
    ".visible .global .attribute(.managed) .align 8 .b8 frames[1048576];\n";
static CUmodule frames_module(CUdeviceptr *frames) {
  CUmodule module;
  size_t size;
  EXPECT_RC(cu.cuModuleLoadData(&module, frames_ptx), CUDA_SUCCESS);
  EXPECT_RC(cu.cuModuleGetGlobal(frames, &size, module, "frames"), CUDA_SUCCESS);
  return module;
}
/* right: the variable was single-attached to s; once its module is gone, an
 * allocation at the same address is new GLOBAL memory that t may use */
static void module_unload_address_reused(void) {
  CUdeviceptr frames, fresh;
  CUmodule module = frames_module(&frames);
  attach_sync(s, frames, CU_MEM_ATTACH_SINGLE);
  EXPECT_RC(cuModuleUnload(module), CUDA_SUCCESS);
  EXPECT_RC(cu.cuMemAllocManaged(&fresh, 1 << 20, CU_MEM_ATTACH_GLOBAL), CUDA_SUCCESS);
  if (fresh != frames) fprintf(stderr, "scenario: the address was not reused\n");
  EXPECT_RC(cuMemsetD32Async(fresh, 0, 16, t), CUDA_SUCCESS);
}
/* wrong: another module's variable stays known: single-attached to s, set on t (AC301) */
static void module_unload_other_foreign(void) {
  CUdeviceptr frames;
  frames_module(&frames);
  table_of(mod);
  attach_sync(s, frames, CU_MEM_ATTACH_SINGLE);
  EXPECT_RC(cuModuleUnload(mod), CUDA_SUCCESS);
  EXPECT_RC(cuMemsetD32Async(frames, 0, 16, t), CUDA_SUCCESS);
}

/* ---- libraries: a __managed__ variable found by cuLibraryGetGlobal ----
 * The kernel uses_table reaches table itself, through no argument: only the
 * lookup tells the model of the variable. */

static CUlibrary library;
static CUkernel uses_table_kernel, use_kernel;

/* The module's code loaded as a library; *table its variable, *plain the
 * address of a variable that is not managed memory. */
static void load_library(CUdeviceptr *table, CUdeviceptr *plain) {
  size_t size = 0;
  EXPECT_RC(cuLibraryLoadData(&library, ptx, NULL, NULL, 0, NULL, NULL, 0), CUDA_SUCCESS);
  EXPECT_RC(cuLibraryGetKernel(&uses_table_kernel, library, "uses_table"), CUDA_SUCCESS);
  EXPECT_RC(cuLibraryGetKernel(&use_kernel, library, "use"), CUDA_SUCCESS);
  EXPECT_RC(cuLibraryGetGlobal(table, &size, library, "table"), CUDA_SUCCESS);
  if (size != 4096) fprintf(stderr, "scenario: table is %zu bytes\n", size), failures++;
  EXPECT_RC(cuLibraryGetGlobal(plain, NULL, library, "plain"), CUDA_SUCCESS);
}
static void launch_uses_table(CUstream stream) {
  EXPECT_RC(
      cu.cuLaunchKernel((CUfunction)uses_table_kernel, 1, 1, 1, 32, 1, 1, 0, stream, NULL, NULL),
      CUDA_SUCCESS);
}
/* wrong: the CPU writes the GLOBAL variable while the library's kernel runs (AC202) */
static void library_global_busy_touch(void) {
  CUdeviceptr table, plain;
  load_library(&table, &plain);
  launch_uses_table(s);
  *(volatile int *)table = 1;
}
/* right: after the host waited for it; the variable single-attached to s and
 * used by the kernel on s; a variable that is not managed memory stays out
 * of the model (attaching it is refused) */
static void library_global_sync(void) {
  CUdeviceptr table, plain;
  load_library(&table, &plain);
  launch_uses_table(s);
  EXPECT_RC(cu.cuStreamSynchronize(s), CUDA_SUCCESS);
  *(volatile int *)table = 1;
  attach_sync(s, table, CU_MEM_ATTACH_SINGLE);
  launch_with_pointer(use, s, table);
  EXPECT_RC(cu.cuStreamSynchronize(s), CUDA_SUCCESS);
  sink = *(volatile int *)table;
}
/* wrong: the variable single-attached to s, given to the library's kernel on
 * t (AC301: a kernel's arguments are read through cuKernelGetParamInfo) */
static void library_global_foreign(void) {
  CUdeviceptr table, plain;
  load_library(&table, &plain);
  attach_sync(s, table, CU_MEM_ATTACH_SINGLE);
  launch_with_pointer((CUfunction)use_kernel, t, table);
}
/* wrong: the library is gone, and its variable with it: attaching the old
 * address is no managed memory (AC104) */
static void library_unload_stale_attach(void) {
  CUdeviceptr table, plain;
  load_library(&table, &plain);
  EXPECT_RC(cuLibraryUnload(library), CUDA_SUCCESS);
  EXPECT_RC(cu.cuStreamAttachMemAsync(s, table, 0, CU_MEM_ATTACH_SINGLE), CUDA_ERROR_INVALID_VALUE);
}

/* ---- the events cuLaunchKernelEx records ----
 * They fire after the work before the kernel and before the kernel completes:
 * synchronising on one makes the earlier work's memory the CPU's, never the
 * kernel's. */

static CUevent timingless_event(void) {
  CUevent e;
  EXPECT_RC(cu.cuEventCreate(&e, CU_EVENT_DISABLE_TIMING), CUDA_SUCCESS);
  return e;
}
/* use(p) on stream, recording e through attribute id; with overlap the launch
 * may also overlap the work before it (programmatic stream serialisation). */
static void launch_recording(CUstream stream, CUdeviceptr p, CUlaunchAttributeID id, CUevent e,
                             bool overlap) {
  CUlaunchAttribute attrs[2];
  memset(attrs, 0, sizeof attrs);
  attrs[0].id = id;
  if (id == CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_EVENT)
    attrs[0].value.programmaticEvent.event = e;
  else
    attrs[0].value.launchCompletionEvent.event = e;
  attrs[1].id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
  attrs[1].value.programmaticStreamSerializationAllowed = 1;
  CUlaunchConfig config = one_block_on(stream);
  config.attrs = attrs;
  config.numAttrs = overlap ? 2 : 1;
  void *args[] = {&p};
  EXPECT_RC(cu.cuLaunchKernelEx(&config, use, args, NULL), CUDA_SUCCESS);
}
/* m single-attached to s and given to the kernel whose event the host waits for. */
static void event_of_kernel(CUlaunchAttributeID id) {
  CUevent e = timingless_event();
  attach_sync(s, m, CU_MEM_ATTACH_SINGLE);
  launch_recording(s, m, id, e, false);
  EXPECT_RC(cu.cuEventSynchronize(e), CUDA_SUCCESS);
  *(volatile int *)m = 1;
}
/* wrong: the kernel may still run: m is not the CPU's (AC201) */
static void completion_event_before_kernel(void) {
  event_of_kernel(CU_LAUNCH_ATTRIBUTE_LAUNCH_COMPLETION_EVENT);
}
static void programmatic_event_before_kernel(void) {
  event_of_kernel(CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_EVENT);
}
/* m single-attached to t and given to t's kernel, which s waits for before
 * the kernel whose event the host waits for. */
static void event_after_earlier_work(CUlaunchAttributeID id, bool overlap) {
  CUevent before = timingless_event(), e = timingless_event();
  attach_sync(t, m, CU_MEM_ATTACH_SINGLE);
  launch_use(t, m);
  EXPECT_RC(cu.cuEventRecord(before, t), CUDA_SUCCESS);
  EXPECT_RC(cu.cuStreamWaitEvent(s, before, 0), CUDA_SUCCESS);
  launch_recording(s, g, id, e, overlap);
  EXPECT_RC(cu.cuEventSynchronize(e), CUDA_SUCCESS);
  *(volatile int *)m = 1;
}
/* right: t's kernel is complete once the event fired: m is the CPU's */
static void completion_event_after_earlier(void) {
  event_after_earlier_work(CU_LAUNCH_ATTRIBUTE_LAUNCH_COMPLETION_EVENT, false);
}
static void programmatic_event_after_earlier(void) {
  event_after_earlier_work(CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_EVENT, false);
}
/* wrong: a launch that may overlap the work before it fires its event before
 * t's kernel is known complete (AC201) */
static void programmatic_event_overlapping(void) {
  event_after_earlier_work(CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_EVENT, true);
}

/* ---- green contexts: their streams are streams ---- */

static CUgreenCtx green_context(void) {
  CUdevResource sms;
  CUdevResourceDesc desc;
  CUgreenCtx green;
  EXPECT_RC(cuDeviceGetDevResource(dev, &sms, CU_DEV_RESOURCE_TYPE_SM), CUDA_SUCCESS);
  EXPECT_RC(cuDevResourceGenerateDesc(&desc, &sms, 1), CUDA_SUCCESS);
  EXPECT_RC(cuGreenCtxCreate(&green, desc, dev, CU_GREEN_CTX_DEFAULT_STREAM), CUDA_SUCCESS);
  return green;
}
static CUstream stream_of(CUgreenCtx green) {
  CUstream gs;
  EXPECT_RC(cuGreenCtxStreamCreate(&gs, green, CU_STREAM_NON_BLOCKING, 0), CUDA_SUCCESS);
  return gs;
}
static CUstream green_stream(void) {
  return stream_of(green_context());
}
/* right: memory single-attached to a green context's idle stream is the
 * CPU's while another stream works (an unknown stream would have left it
 * GLOBAL, and the touch AC202) */
static void green_stream_attach(void) {
  CUstream gs = green_stream();
  attach_sync(gs, m, CU_MEM_ATTACH_SINGLE);
  launch_use(t, g);
  *(volatile int *)m = 1;
}
/* wrong: ... and used from another stream (AC301) */
static void green_stream_foreign(void) {
  CUstream gs = green_stream();
  attach_sync(gs, m, CU_MEM_ATTACH_SINGLE);
  launch_use(t, m);
}

/* ---- green contexts' events: over each of their streams ----
 * Work on a green context's streams is a set of global memory (g): the
 * scenario's kernels belong to the primary context. */

static void set_g_on(CUstream stream) {
  EXPECT_RC(cuMemsetD32Async(g, 0, 16, stream), CUDA_SUCCESS);
}
/* Work on two streams of a green context, its event recorded, more work on
 * one of them if `after`, then the host waits for the event and touches g. */
static void green_record_then_touch(bool after) {
  CUgreenCtx green = green_context();
  CUstream a = stream_of(green), b = stream_of(green);
  CUevent e = timingless_event();
  set_g_on(a), set_g_on(b);
  EXPECT_RC(cuGreenCtxRecordEvent(green, e), CUDA_SUCCESS);
  if (after) set_g_on(b);
  EXPECT_RC(cu.cuEventSynchronize(e), CUDA_SUCCESS);
  *(volatile int *)g = 1;
}
/* right: the event covers both streams' work: nothing runs */
static void green_record_covers_streams(void) {
  green_record_then_touch(false);
}
/* wrong: work enqueued after the record still runs (AC202) */
static void green_record_not_later(void) {
  green_record_then_touch(true);
}
/* m, single-attached to s, used on s; a green context waits for an event
 * recorded after that use (or, with early, before it); then m is attached to
 * the green context's stream. */
static void green_wait_then_reattach(bool early) {
  CUgreenCtx green = green_context();
  CUstream gs = stream_of(green);
  CUevent e = timingless_event();
  attach_sync(s, m, CU_MEM_ATTACH_SINGLE);
  if (early) EXPECT_RC(cu.cuEventRecord(e, s), CUDA_SUCCESS);
  launch_use(s, m);
  if (!early) EXPECT_RC(cu.cuEventRecord(e, s), CUDA_SUCCESS);
  EXPECT_RC(cuGreenCtxWaitEvent(green, e), CUDA_SUCCESS);
  EXPECT_RC(cu.cuStreamAttachMemAsync(gs, m, 0, CU_MEM_ATTACH_SINGLE), CUDA_SUCCESS);
}
/* right: the green context's stream is ordered after s's kernel */
static void green_wait_orders_reattach(void) {
  green_wait_then_reattach(false);
}
/* wrong: ... the event was recorded before the kernel (AC401) */
static void green_wait_before_work(void) {
  green_wait_then_reattach(true);
}

/* ---- a context's events: over each of its streams ---- */

static CUcontext current(void) {
  CUcontext ctx = NULL;
  EXPECT_RC(cu.cuCtxGetCurrent(&ctx), CUDA_SUCCESS);
  return ctx;
}
/* Work on s and t (streams of the primary context), its event recorded, more
 * work on t if `after`, then the host waits for the event and touches g. */
static void ctx_record_then_touch(bool after) {
  CUevent e = timingless_event();
  set_g_on(s), set_g_on(t);
  EXPECT_RC(cuCtxRecordEvent(current(), e), CUDA_SUCCESS);
  if (after) set_g_on(t);
  EXPECT_RC(cu.cuEventSynchronize(e), CUDA_SUCCESS);
  *(volatile int *)g = 1;
}
/* right: the event covers both streams' work: nothing runs */
static void ctx_record_covers_streams(void) {
  ctx_record_then_touch(false);
}
/* wrong: work enqueued after the record still runs (AC202) */
static void ctx_record_not_later(void) {
  ctx_record_then_touch(true);
}
/* m, single-attached to s, used on s; the context waits for an event recorded
 * after that use (or, with early, before it); then m is attached to t. */
static void ctx_wait_then_reattach(bool early) {
  CUevent e = timingless_event();
  attach_sync(s, m, CU_MEM_ATTACH_SINGLE);
  if (early) EXPECT_RC(cu.cuEventRecord(e, s), CUDA_SUCCESS);
  launch_use(s, m);
  if (!early) EXPECT_RC(cu.cuEventRecord(e, s), CUDA_SUCCESS);
  EXPECT_RC(cuCtxWaitEvent(current(), e), CUDA_SUCCESS);
  EXPECT_RC(cu.cuStreamAttachMemAsync(t, m, 0, CU_MEM_ATTACH_SINGLE), CUDA_SUCCESS);
}
/* right: t is ordered after s's kernel */
static void ctx_wait_orders_reattach(void) {
  ctx_wait_then_reattach(false);
}
/* wrong: ... the event was recorded before the kernel (AC401) */
static void ctx_wait_before_work(void) {
  ctx_wait_then_reattach(true);
}
/* The documentation: the event must be of the context, and the context given. */
static void ctx_event_refused(void) {
  CUevent e = timingless_event();
  CUcontext primary = current(), other;
  EXPECT_RC(cuCtxCreate(&other, NULL, 0, dev), CUDA_SUCCESS);
  EXPECT_RC(cuCtxRecordEvent(other, e), CUDA_ERROR_INVALID_HANDLE);
  EXPECT_RC(cuCtxDestroy(other), CUDA_SUCCESS);
  EXPECT_RC(cu.cuCtxSetCurrent(primary), CUDA_SUCCESS);
}

static const struct scenario_case cases[] = {
    {"value_ops_managed_refused", value_ops_managed_refused},
    {"write_value_busy_touch", write_value_busy_touch},
    {"write_value_same_stream", write_value_same_stream},
    {"graph_upload_busy_touch", graph_upload_busy_touch},
    {"graph_upload_sync", graph_upload_sync},
    {"prefetch_batch_touch", prefetch_batch_touch},
    {"prefetch_batch_sync", prefetch_batch_sync},
    {"prefetch_host_then_write", prefetch_host_then_write},
    {"prefetch_refused", prefetch_refused},
    {"work_then_prefetch_touch", work_then_prefetch_touch},
    {"work_synced_prefetch_pending", work_synced_prefetch_pending},
    {"prefetch_orders_legacy", prefetch_orders_legacy},
    {"alloc_async_busy_touch", alloc_async_busy_touch},
    {"alloc_async_sync", alloc_async_sync},
    {"free_async_busy_touch", free_async_busy_touch},
    {"free_async_sync", free_async_sync},
    {"pool_alloc_busy_touch", pool_alloc_busy_touch},
    {"pool_alloc_sync", pool_alloc_sync},
    {"map_array_busy_touch", map_array_busy_touch},
    {"map_array_sync", map_array_sync},
    {"semaphore_signal_busy_touch", semaphore_signal_busy_touch},
    {"semaphore_wait_busy_touch", semaphore_wait_busy_touch},
    {"semaphore_wait_sync", semaphore_wait_sync},
    {"semaphores_refused_touch", semaphores_refused_touch},
    {"advised_busy_touch", advised_busy_touch},
    {"advised_sync", advised_sync},
    {"advice_alone_touch", advice_alone_touch},
    {"old_instantiate_foreign", old_instantiate_foreign},
    {"old_instantiate_same_stream", old_instantiate_same_stream},
    {"ctx_destroy_touch", ctx_destroy_touch},
    {"ctx_destroy_gone_stream", ctx_destroy_gone_stream},
    {"primary_reset_touch", primary_reset_touch},
    {"primary_reset_gone_stream", primary_reset_gone_stream},
    {"primary_release_touch", primary_release_touch},
    {"module_unload_stale_attach", module_unload_stale_attach},
    {"module_unload_address_reused", module_unload_address_reused},
    {"module_unload_other_foreign", module_unload_other_foreign},
    {"completion_event_before_kernel", completion_event_before_kernel},
    {"programmatic_event_before_kernel", programmatic_event_before_kernel},
    {"completion_event_after_earlier", completion_event_after_earlier},
    {"programmatic_event_after_earlier", programmatic_event_after_earlier},
    {"programmatic_event_overlapping", programmatic_event_overlapping},
    {"green_stream_attach", green_stream_attach},
    {"green_stream_foreign", green_stream_foreign},
    {"green_record_covers_streams", green_record_covers_streams},
    {"green_record_not_later", green_record_not_later},
    {"green_wait_orders_reattach", green_wait_orders_reattach},
    {"green_wait_before_work", green_wait_before_work},
    {"ctx_record_covers_streams", ctx_record_covers_streams},
    {"ctx_record_not_later", ctx_record_not_later},
    {"ctx_wait_orders_reattach", ctx_wait_orders_reattach},
    {"ctx_wait_before_work", ctx_wait_before_work},
    {"ctx_event_refused", ctx_event_refused},
    {"library_global_busy_touch", library_global_busy_touch},
    {"library_global_sync", library_global_sync},
    {"library_global_foreign", library_global_foreign},
    {"library_unload_stale_attach", library_unload_stale_attach},
};

/* Cases that make their own start (a context of their own, or its end). */
static bool starts_itself(void (*run)(void)) {
  return run == ctx_destroy_touch || run == ctx_destroy_gone_stream || run == primary_reset_touch ||
         run == primary_reset_gone_stream || run == primary_release_touch;
}

int main(int argc, char **argv) {
  const struct scenario_case *c = CASE_FROM_ARGS(cases, argc, argv);
  if (!c) return 2;
  if (!starts_itself(c->run)) start_primary();
  c->run();
  EXPECT_RC(cu.cuCtxSynchronize(), CUDA_SUCCESS);
  return finish();
}
