/* conformance.c - what the scenarios rely on the stand-in driver to do as the
 * real one does, beyond the attach table: kernel parameter layouts from PTX,
 * __managed__ variables, host functions in stream order, events, copies, stream
 * work that names no managed memory, and how cuGetProcAddress maps names to ABIs. Run over the
 * stand-in driver in CI and over the real driver in the GPU suite: both must pass. */
#include <cuda.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "sparse_tile.h"

static int passed, failed;

#define CHECK(cond)                                                                                \
  do {                                                                                             \
    if (cond)                                                                                      \
      passed++;                                                                                    \
    else {                                                                                         \
      failed++;                                                                                    \
      fprintf(stderr, "conformance: %s:%d: %s\n", __FILE__, __LINE__, #cond);                      \
    }                                                                                              \
  } while (0)

static const char ptx[] =
    ".version 8.0\n.target sm_90\n.address_size 64\n"
    ".visible .global .attribute(.managed) .align 8 .b8 counters[256];\n"
    ".visible .global .align 4 .u32 plain;\n"
    "// a comment with .entry in it\n"
    ".visible .entry three(.param .u64 p, .param .u32 n, .param .align 8 .b8 s[24], .param .u8 c, "
    ".param .f64 d)\n{\n  ret;\n}\n"
    ".visible .entry none()\n{\n  ret;\n}\n"
    ".visible .entry takes_map(.param .align 64 .b8 map[128])\n{\n  ret;\n}\n";

static void test_parameter_layouts(CUmodule mod) {
  CUfunction f, g;
  size_t off = 99, size = 99;
  CHECK(cuModuleGetFunction(&f, mod, "three") == CUDA_SUCCESS);
  static const size_t want_off[] = {0, 8, 16, 40, 48}, want_size[] = {8, 4, 24, 1, 8};
  for (size_t i = 0; i < 5; i++) {
    CHECK(cuFuncGetParamInfo(f, i, &off, &size) == CUDA_SUCCESS);
    CHECK(off == want_off[i] && size == want_size[i]);
  }
  CHECK(cuFuncGetParamInfo(f, 5, &off, &size) == CUDA_ERROR_INVALID_VALUE);
  CHECK(cuModuleGetFunction(&g, mod, "none") == CUDA_SUCCESS);
  CHECK(cuFuncGetParamInfo(g, 0, &off, &size) == CUDA_ERROR_INVALID_VALUE);
  CHECK(cuModuleGetFunction(&g, mod, "missing") == CUDA_ERROR_NOT_FOUND);
}

static void test_globals(CUmodule mod) {
  CUdeviceptr p;
  size_t bytes;
  unsigned managed = 7;
  CHECK(cuModuleGetGlobal(&p, &bytes, mod, "counters") == CUDA_SUCCESS && bytes == 256);
  CHECK(cuPointerGetAttribute(&managed, CU_POINTER_ATTRIBUTE_IS_MANAGED, p) == CUDA_SUCCESS);
  CHECK(managed == 1);
  CHECK(cuModuleGetGlobal(&p, &bytes, mod, "plain") == CUDA_SUCCESS && bytes == 4);
  CHECK(cuPointerGetAttribute(&managed, CU_POINTER_ATTRIBUTE_IS_MANAGED, p) == CUDA_SUCCESS);
  CHECK(managed == 0);
}

static pthread_mutex_t gate = PTHREAD_MUTEX_INITIALIZER;
static int order[4], ran;
/* The same code as a library: its variables (cuLibraryGetManaged finds only
 * the managed ones), its kernels - handles of their own, which a launch takes
 * and cuFuncGetParamInfo refuses - and its end, which ends its variables. */
static void test_library(void) {
  CUlibrary lib, back;
  CUdeviceptr p = 0, q = 0;
  size_t bytes = 0, off = 99, size = 99;
  unsigned managed = 7;
  CUkernel three, none, missing;
  CUfunction f;
  CHECK(cuLibraryLoadData(&lib, ptx, NULL, NULL, 0, NULL, NULL, 0) == CUDA_SUCCESS);
  CHECK(cuLibraryGetGlobal(&p, &bytes, lib, "counters") == CUDA_SUCCESS && bytes == 256);
  CHECK(cuLibraryGetManaged(&q, NULL, lib, "counters") == CUDA_SUCCESS && q == p);
  CHECK(cuPointerGetAttribute(&managed, CU_POINTER_ATTRIBUTE_IS_MANAGED, p) == CUDA_SUCCESS);
  CHECK(managed == 1);
  CHECK(cuLibraryGetGlobal(&q, &bytes, lib, "plain") == CUDA_SUCCESS && bytes == 4);
  CHECK(cuPointerGetAttribute(&managed, CU_POINTER_ATTRIBUTE_IS_MANAGED, q) == CUDA_SUCCESS);
  CHECK(managed == 0);
  CHECK(cuLibraryGetManaged(&q, &bytes, lib, "plain") == CUDA_ERROR_NOT_FOUND);
  CHECK(cuLibraryGetGlobal(&q, &bytes, lib, "missing") == CUDA_ERROR_NOT_FOUND);
  CHECK(cuLibraryGetGlobal(&q, &bytes, NULL, "counters") == CUDA_ERROR_INVALID_HANDLE);
  CHECK(cuLibraryGetGlobal(&q, &bytes, lib, NULL) == CUDA_ERROR_INVALID_VALUE);
  CHECK(cuLibraryGetKernel(&three, lib, "three") == CUDA_SUCCESS);
  CHECK(cuLibraryGetKernel(&missing, lib, "missing") == CUDA_ERROR_NOT_FOUND);
  CHECK(cuKernelGetParamInfo(three, 2, &off, &size) == CUDA_SUCCESS && off == 16 && size == 24);
  CHECK(cuKernelGetParamInfo(three, 5, &off, &size) == CUDA_ERROR_INVALID_VALUE);
  CHECK(cuFuncGetParamInfo((CUfunction)three, 0, &off, &size) == CUDA_ERROR_INVALID_HANDLE);
  CHECK(cuKernelGetFunction(&f, three) == CUDA_SUCCESS);
  CHECK(cuFuncGetParamInfo(f, 4, &off, &size) == CUDA_SUCCESS && off == 48 && size == 8);
  CHECK(cuKernelGetLibrary(&back, three) == CUDA_SUCCESS && back == lib);
  CHECK(cuLibraryGetKernel(&none, lib, "none") == CUDA_SUCCESS);
  CHECK(cuLaunchKernel((CUfunction)none, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL) == CUDA_SUCCESS);
  CHECK(cuCtxSynchronize() == CUDA_SUCCESS);
  CHECK(cuLibraryUnload(lib) == CUDA_SUCCESS);
  CHECK(cuPointerGetAttribute(&managed, CU_POINTER_ATTRIBUTE_IS_MANAGED, p) ==
        CUDA_ERROR_INVALID_VALUE);
}

/* A tensor map keeps its global address in its first eight bytes, whichever
 * encoder made it; a kernel takes one as a 128-byte parameter. */
static void test_tensor_maps(CUmodule mod) {
  CUdeviceptr m;
  CUtensorMap map;
  CUfunction f;
  uint64_t first;
  size_t off = 99, size = 99;
  cuuint64_t dims[2] = {256, 256}, strides[1] = {1024}, dims3[3] = {32, 16, 4},
             strides3[2] = {128, 2048};
  cuuint32_t box[2] = {32, 32}, es[3] = {1, 1, 1};
  int lower[1] = {0}, upper[1] = {0};
  CHECK(cuMemAllocManaged(&m, 1 << 20, CU_MEM_ATTACH_GLOBAL) == CUDA_SUCCESS);
  CHECK(cuTensorMapEncodeTiled(&map, CU_TENSOR_MAP_DATA_TYPE_FLOAT32, 2, (void *)(m + 4096), dims,
                               strides, box, es, CU_TENSOR_MAP_INTERLEAVE_NONE,
                               CU_TENSOR_MAP_SWIZZLE_NONE, CU_TENSOR_MAP_L2_PROMOTION_NONE,
                               CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) == CUDA_SUCCESS);
  memcpy(&first, &map, sizeof first);
  CHECK(first == m + 4096);
  CHECK(cuTensorMapReplaceAddress(&map, (void *)(m + 8192)) == CUDA_SUCCESS);
  memcpy(&first, &map, sizeof first);
  CHECK(first == m + 8192);
  CHECK(cuTensorMapReplaceAddress(&map, (void *)(m + 8)) == CUDA_ERROR_INVALID_VALUE);
  CHECK(cuTensorMapEncodeTiled(&map, CU_TENSOR_MAP_DATA_TYPE_FLOAT32, 2, (void *)(m + 4), dims,
                               strides, box, es, CU_TENSOR_MAP_INTERLEAVE_NONE,
                               CU_TENSOR_MAP_SWIZZLE_NONE, CU_TENSOR_MAP_L2_PROMOTION_NONE,
                               CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) == CUDA_ERROR_INVALID_VALUE);
  CHECK(cuTensorMapEncodeIm2col(
            &map, CU_TENSOR_MAP_DATA_TYPE_FLOAT32, 3, (void *)(m + 16384), dims3, strides3, lower,
            upper, 32, 16, es, CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_NONE,
            CU_TENSOR_MAP_L2_PROMOTION_NONE, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) == CUDA_SUCCESS);
  memcpy(&first, &map, sizeof first);
  CHECK(first == m + 16384);
  CHECK(cuModuleGetFunction(&f, mod, "takes_map") == CUDA_SUCCESS);
  /* not at 0: the bank the parameters are copied to is 64-aligned at byte 0x210 - 48 */
  CHECK(cuFuncGetParamInfo(f, 0, &off, &size) == CUDA_SUCCESS && off == 48 && size == 128);
  void *args[] = {&map};
  CHECK(cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, NULL, args, NULL) == CUDA_SUCCESS);
  CHECK(cuCtxSynchronize() == CUDA_SUCCESS);
  CHECK(cuMemFree(m) == CUDA_SUCCESS);
}

static void host_fn(void *arg) {
  pthread_mutex_lock(&gate);
  order[ran++] = (int)(long)arg;
  pthread_mutex_unlock(&gate);
}

static void test_host_functions_and_events(void) {
  CUstream s;
  CUevent before, after;
  CUfunction unused;
  (void)unused;
  CHECK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING) == CUDA_SUCCESS);
  CHECK(cuEventCreate(&before, CU_EVENT_DISABLE_TIMING) == CUDA_SUCCESS);
  CHECK(cuEventCreate(&after, CU_EVENT_DISABLE_TIMING) == CUDA_SUCCESS);
  pthread_mutex_lock(&gate); /* hold the first host function back */
  CHECK(cuEventRecord(before, s) == CUDA_SUCCESS);
  for (long i = 0; i < 3; i++)
    CHECK(cuLaunchHostFunc(s, host_fn, (void *)i) == CUDA_SUCCESS);
  CHECK(cuEventRecord(after, s) == CUDA_SUCCESS);
  usleep(20000);
  CHECK(cuStreamQuery(s) == CUDA_ERROR_NOT_READY);
  CHECK(cuEventQuery(before) == CUDA_SUCCESS);
  CHECK(cuEventQuery(after) == CUDA_ERROR_NOT_READY);
  pthread_mutex_unlock(&gate);
  CHECK(cuEventSynchronize(after) == CUDA_SUCCESS);
  CHECK(ran == 3 && order[0] == 0 && order[1] == 1 && order[2] == 2);
  CHECK(cuStreamQuery(s) == CUDA_SUCCESS);
  CHECK(cuEventDestroy(before) == CUDA_SUCCESS && cuEventDestroy(after) == CUDA_SUCCESS);
  CHECK(cuStreamDestroy(s) == CUDA_SUCCESS);
}

static void test_proc_address(void) {
  void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  void *p = NULL;
  CUdriverProcAddressQueryResult st;
  CHECK(h != NULL);
  if (!h) return;
  CHECK(cuGetProcAddress_v2("cuStreamDestroy", &p, 4000, 0, &st) == CUDA_SUCCESS);
  CHECK(p == dlsym(h, "cuStreamDestroy_v2") && st == CU_GET_PROC_ADDRESS_SUCCESS);
  CHECK(cuGetProcAddress_v2("cuMemFree", &p, 12000, 0, &st) == CUDA_SUCCESS);
  CHECK(p == dlsym(h, "cuMemFree_v2"));
  CHECK(cuGetProcAddress_v2("cuGetProcAddress", &p, 12000, 0, &st) == CUDA_SUCCESS);
  CHECK(p == dlsym(h, "cuGetProcAddress_v2"));
  CHECK(cuGetProcAddress_v2("cuGetProcAddress", &p, 11030, 0, &st) == CUDA_SUCCESS);
  CHECK(p == dlsym(h, "cuGetProcAddress"));
  CHECK(cuGetProcAddress_v2("cuStreamAttachMemAsync", &p, 12000,
                            CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM, &st) == CUDA_SUCCESS);
  CHECK(p == dlsym(h, "cuStreamAttachMemAsync_ptsz"));
  CHECK(cuGetProcAddress_v2("cuStreamAttachMemAsync", &p, 12000, 0, &st) == CUDA_SUCCESS);
  CHECK(p == dlsym(h, "cuStreamAttachMemAsync"));
  CHECK(cuGetProcAddress_v2("cuMemcpy2D", &p, 12000, 0, &st) == CUDA_SUCCESS);
  CHECK(p == dlsym(h, "cuMemcpy2D_v2"));
  CHECK(cuGetProcAddress_v2("cuMemcpy2DAsync", &p, 12000,
                            CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM, &st) == CUDA_SUCCESS);
  CHECK(p == dlsym(h, "cuMemcpy2DAsync_v2_ptsz"));
  /* Measured on the H100 (driver 580.159.04). */
  p = (void *)1;
  CHECK(cuGetProcAddress_v2("cuNoSuchFunction", &p, 12000, 0, &st) == CUDA_SUCCESS);
  CHECK(p == NULL && st == CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND);
  typedef CUresult (*resolver_v1)(const char *, void **, int, cuuint64_t);
  resolver_v1 gpa1 = (resolver_v1)dlsym(h, "cuGetProcAddress");
  p = (void *)1;
  CHECK(gpa1 && gpa1("cuNoSuchFunction", &p, 12000, 0) == CUDA_ERROR_NOT_FOUND);
  CHECK(p == (void *)1);
}

static void test_memory(void) {
  CUdeviceptr a, b, big, start = 0;
  size_t size = 0;
  unsigned managed = 0;
  CHECK(cuMemAllocManaged(&a, 100, CU_MEM_ATTACH_GLOBAL) == CUDA_SUCCESS);
  CHECK(cuMemAllocManaged(&b, 100, CU_MEM_ATTACH_GLOBAL) == CUDA_SUCCESS);
  CHECK(b - a == 512 || a - b == 512); /* small allocations share pages */
  CHECK(cuMemAllocManaged(&big, 4 << 20, CU_MEM_ATTACH_GLOBAL) == CUDA_SUCCESS);
  CHECK((big & ((2u << 20) - 1)) == 0);
  CHECK(cuPointerGetAttribute(&start, CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, big + 100) ==
        CUDA_SUCCESS);
  CHECK(cuPointerGetAttribute(&size, CU_POINTER_ATTRIBUTE_RANGE_SIZE, big + 100) == CUDA_SUCCESS);
  CHECK(start == big && size == 4u << 20);
  char host[64];
  CHECK(cuPointerGetAttribute(&managed, CU_POINTER_ATTRIBUTE_IS_MANAGED, (CUdeviceptr)host) ==
        CUDA_ERROR_INVALID_VALUE);
  CUpointer_attribute attr = CU_POINTER_ATTRIBUTE_IS_MANAGED;
  void *data[] = {&managed};
  managed = 7;
  CHECK(cuPointerGetAttributes(1, &attr, data, (CUdeviceptr)host) == CUDA_SUCCESS && managed == 0);
  /* Placement advice: taken for managed memory, refused for device memory. */
  CUmemLocation gpu = {CU_MEM_LOCATION_TYPE_DEVICE, 0};
  CUdeviceptr device;
  CHECK(cuMemAdvise(big, 4096, CU_MEM_ADVISE_SET_READ_MOSTLY, gpu) == CUDA_SUCCESS);
  CHECK(cuMemAdvise(big, 4096, CU_MEM_ADVISE_SET_PREFERRED_LOCATION, gpu) == CUDA_SUCCESS);
  CHECK(cuMemAlloc(&device, 4096) == CUDA_SUCCESS);
  CHECK(cuMemAdvise(device, 4096, CU_MEM_ADVISE_SET_READ_MOSTLY, gpu) == CUDA_ERROR_INVALID_VALUE);
  CHECK(cuMemAdvise(big, 4096, (CUmem_advise)99, gpu) == CUDA_ERROR_INVALID_VALUE);
  /* Prefetches: managed memory's taken and remembered as the range's last
   * prefetch location (none before: CU_DEVICE_INVALID); device memory's refused. */
  CUdeviceptr fresh;
  int where = 7;
  const CUmem_range_attribute last = CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION;
  CHECK(cuMemAllocManaged(&fresh, 4096, CU_MEM_ATTACH_GLOBAL) == CUDA_SUCCESS);
  CHECK(cuMemRangeGetAttribute(&where, sizeof where, last, fresh, 4096) == CUDA_SUCCESS);
  CHECK(where == CU_DEVICE_INVALID);
  CHECK(cuMemPrefetchAsync(fresh, 4096, gpu, 0, NULL) == CUDA_SUCCESS);
  CHECK(cuCtxSynchronize() == CUDA_SUCCESS);
  CHECK(cuMemRangeGetAttribute(&where, sizeof where, last, fresh, 4096) == CUDA_SUCCESS);
  CHECK(where == 0);
  CHECK(cuMemPrefetchAsync(device, 4096, gpu, 0, NULL) == CUDA_ERROR_INVALID_VALUE);
  CHECK(cuMemFree(fresh) == CUDA_SUCCESS);
  CHECK(cuMemFree(device) == CUDA_SUCCESS);
  CHECK(cuMemFree(a) == CUDA_SUCCESS && cuMemFree(b) == CUDA_SUCCESS);
  CHECK(cuMemFree(big) == CUDA_SUCCESS);
}

/* Stream work that names no managed memory: stream-ordered allocations, a
 * sparse array's tile mapped, external semaphores (refused without one: no
 * graphics API on the GPU machine exports one), batch decompression (refused
 * on an H100, which has no engine for it). */
static void test_stream_resources(CUdevice dev) {
  CUstream s;
  CUdeviceptr d, p;
  CUmemoryPool pool;
  CHECK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING) == CUDA_SUCCESS);
  CHECK(cuMemAllocAsync(&d, 4096, s) == CUDA_SUCCESS && cuMemFreeAsync(d, s) == CUDA_SUCCESS);
  CHECK(cuDeviceGetDefaultMemPool(&pool, dev) == CUDA_SUCCESS);
  CHECK(cuMemAllocFromPoolAsync(&p, 4096, pool, s) == CUDA_SUCCESS);
  CHECK(cuMemFreeAsync(p, s) == CUDA_SUCCESS);
  CHECK(cuSignalExternalSemaphoresAsync(NULL, NULL, 0, s) == CUDA_ERROR_INVALID_VALUE);
  CHECK(cuWaitExternalSemaphoresAsync(NULL, NULL, 0, s) == CUDA_ERROR_INVALID_VALUE);
  CUexternalSemaphore sem;
  CUDA_EXTERNAL_SEMAPHORE_HANDLE_DESC none = {.type = CU_EXTERNAL_SEMAPHORE_HANDLE_TYPE_OPAQUE_FD,
                                              .handle.fd = -1};
  CHECK(cuImportExternalSemaphore(&sem, &none) == CUDA_ERROR_UNKNOWN);
  CUarray array;
  CUmemGenericAllocationHandle tiles;
  CUDA_ARRAY_SPARSE_PROPERTIES props;
  CHECK(sparse_tile_map(s, &array, &tiles) == CUDA_SUCCESS);
  CHECK(cuArrayGetSparseProperties(&props, array) == CUDA_SUCCESS);
  CHECK(props.tileExtent.width == 128 && props.tileExtent.height == 128);
  CHECK(cuMemMapArrayAsync(NULL, 0, s) == CUDA_ERROR_INVALID_VALUE);
  CUarrayMapInfo map = sparse_tile_info(array, tiles);
  map.memOperationType = CU_MEM_OPERATION_TYPE_UNMAP;
  map.memHandle.memHandle = 0;
  CHECK(cuMemMapArrayAsync(&map, 1, s) == CUDA_SUCCESS);
  CUmemDecompressParams unpack = {0};
  size_t fail = 0;
  CHECK(cuMemBatchDecompressAsync(&unpack, 1, 0, &fail, s) == CUDA_ERROR_NOT_SUPPORTED);
  CHECK(cuStreamSynchronize(s) == CUDA_SUCCESS);
  CHECK(cuMemRelease(tiles) == CUDA_SUCCESS && cuArrayDestroy(array) == CUDA_SUCCESS);
  CHECK(cuStreamDestroy(s) == CUDA_SUCCESS);
}

/* A pitched 2D copy between host-typed sides moves the bytes, a managed
 * source included; a batch refuses the legacy NULL stream (documented). */
static void test_copies(void) {
  CUdeviceptr m;
  unsigned char out[3][16];
  CHECK(cuMemAllocManaged(&m, 4096, CU_MEM_ATTACH_GLOBAL) == CUDA_SUCCESS);
  unsigned char *src = (unsigned char *)(uintptr_t)m;
  for (int i = 0; i < 3 * 64; i++)
    src[i] = (unsigned char)(i + 1);
  CUDA_MEMCPY2D c;
  memset(&c, 0, sizeof c);
  c.srcMemoryType = c.dstMemoryType = CU_MEMORYTYPE_HOST;
  c.srcHost = src + 4;
  c.srcPitch = 64;
  c.dstHost = out;
  c.dstPitch = sizeof out[0];
  c.WidthInBytes = sizeof out[0];
  c.Height = 3;
  CHECK(cuMemcpy2D(&c) == CUDA_SUCCESS);
  CHECK(out[0][0] == 5 && out[1][0] == 69 && out[2][15] == (unsigned char)(128 + 20));
  CHECK(cuMemcpy2D(NULL) == CUDA_ERROR_INVALID_VALUE);
  CUstream s;
  CHECK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING) == CUDA_SUCCESS);
  CUdeviceptr dst = m + 1024, from = m;
  size_t size = 64, first = 0;
  CUmemcpyAttributes attr;
  memset(&attr, 0, sizeof attr);
  attr.srcAccessOrder = CU_MEMCPY_SRC_ACCESS_ORDER_STREAM;
  CHECK(cuMemcpyBatchAsync(&dst, &from, &size, 1, &attr, &first, 1, CU_STREAM_LEGACY) ==
        CUDA_ERROR_INVALID_VALUE);
  CHECK(cuMemcpyBatchAsync(&dst, &from, &size, 1, &attr, &first, 1, s) == CUDA_SUCCESS);
  CHECK(cuStreamSynchronize(s) == CUDA_SUCCESS && cuStreamDestroy(s) == CUDA_SUCCESS);
  CHECK(cuMemFree(m) == CUDA_SUCCESS);
}

/* The first byte one side of a graph's copy node touches, by its memory type
 * (as the shim reads it). */
static uintptr_t node_side(CUmemorytype type, const void *host, CUdeviceptr device, size_t x) {
  if (type == CU_MEMORYTYPE_HOST) return (uintptr_t)host + x;
  if (type == CU_MEMORYTYPE_DEVICE || type == CU_MEMORYTYPE_UNIFIED) return device + x;
  return 0;
}

/* A copy and a set captured from a stream are memcpy and memset nodes whose
 * parameters name the memory the calls named; a child graph node hands back
 * its graph; an executable's copy and set nodes take new parameters, a node of
 * another type does not, and an update needs a graph of the same shape. */
static void test_graphs(CUfunction kernel) {
  CUdeviceptr m, d;
  CUstream s;
  CUgraph captured, outer, other;
  CUgraphNode nodes[4], child_node, set_node;
  CUgraphNodeType type;
  CUgraphExec exec;
  size_t n = 4;
  CHECK(cuMemAllocManaged(&m, 1 << 20, CU_MEM_ATTACH_GLOBAL) == CUDA_SUCCESS);
  CHECK(cuMemAlloc(&d, 1 << 20) == CUDA_SUCCESS);
  CHECK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING) == CUDA_SUCCESS);
  CHECK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL) == CUDA_SUCCESS);
  CHECK(cuMemcpyAsync(m + 64, d, 256, s) == CUDA_SUCCESS);
  CHECK(cuMemsetD32Async(m + 4096, 7, 16, s) == CUDA_SUCCESS);
  CHECK(cuStreamEndCapture(s, &captured) == CUDA_SUCCESS);
  CHECK(cuGraphGetNodes(captured, nodes, &n) == CUDA_SUCCESS && n == 2);
  CUDA_MEMCPY3D copy;
  CUDA_MEMSET_NODE_PARAMS set;
  CHECK(cuGraphNodeGetType(nodes[0], &type) == CUDA_SUCCESS && type == CU_GRAPH_NODE_TYPE_MEMCPY);
  CHECK(cuGraphMemcpyNodeGetParams(nodes[0], &copy) == CUDA_SUCCESS);
  CHECK(node_side(copy.dstMemoryType, copy.dstHost, copy.dstDevice, copy.dstXInBytes) == m + 64);
  CHECK(node_side(copy.srcMemoryType, copy.srcHost, copy.srcDevice, copy.srcXInBytes) == d);
  CHECK(cuGraphNodeGetType(nodes[1], &type) == CUDA_SUCCESS && type == CU_GRAPH_NODE_TYPE_MEMSET);
  CHECK(cuGraphMemsetNodeGetParams(nodes[1], &set) == CUDA_SUCCESS);
  CHECK(set.dst == m + 4096 && set.elementSize == 4 && set.width == 16);

  CHECK(cuGraphCreate(&outer, 0) == CUDA_SUCCESS);
  CHECK(cuGraphAddChildGraphNode(&child_node, outer, NULL, 0, captured) == CUDA_SUCCESS);
  set = (CUDA_MEMSET_NODE_PARAMS){m, 0, 1, 1, 64, 1};
  CHECK(cuGraphAddMemsetNode(&set_node, outer, NULL, 0, &set, NULL) == CUDA_SUCCESS);
  CUgraph child;
  n = 4;
  CHECK(cuGraphChildGraphNodeGetGraph(child_node, &child) == CUDA_SUCCESS);
  CHECK(cuGraphGetNodes(child, nodes, &n) == CUDA_SUCCESS && n == 2);
  CHECK(cuGraphNodeGetType(nodes[1], &type) == CUDA_SUCCESS && type == CU_GRAPH_NODE_TYPE_MEMSET);

  CHECK(cuGraphInstantiateWithFlags(&exec, outer, 0) == CUDA_SUCCESS);
  set.dst = d;
  CHECK(cuGraphExecMemsetNodeSetParams(exec, set_node, &set, NULL) == CUDA_SUCCESS);
  CHECK(cuGraphExecMemcpyNodeSetParams(exec, set_node, &copy, NULL) == CUDA_ERROR_INVALID_VALUE);
  CHECK(cuGraphExecChildGraphNodeSetParams(exec, child_node, captured) == CUDA_SUCCESS);
  CUgraphNodeParams params;
  memset(&params, 0, sizeof params);
  params.type = CU_GRAPH_NODE_TYPE_MEMSET;
  params.memset = (CUDA_MEMSET_NODE_PARAMS_v2){m, 0, 2, 1, 64, 1, NULL};
  CHECK(cuGraphExecNodeSetParams(exec, set_node, &params) == CUDA_SUCCESS);
  CUDA_KERNEL_NODE_PARAMS kp;
  memset(&kp, 0, sizeof kp);
  kp.func = kernel;
  kp.gridDimX = kp.gridDimY = kp.gridDimZ = kp.blockDimX = kp.blockDimY = kp.blockDimZ = 1;
  CHECK(cuGraphExecKernelNodeSetParams(exec, set_node, &kp) == CUDA_ERROR_INVALID_VALUE);
  CHECK(cuGraphLaunch(exec, s) == CUDA_SUCCESS && cuStreamSynchronize(s) == CUDA_SUCCESS);

  CUgraphExecUpdateResultInfo info;
  CHECK(cuGraphCreate(&other, 0) == CUDA_SUCCESS);
  CHECK(cuGraphAddChildGraphNode(&child_node, other, NULL, 0, captured) == CUDA_SUCCESS);
  CHECK(cuGraphAddMemsetNode(&set_node, other, NULL, 0, &set, NULL) == CUDA_SUCCESS);
  CHECK(cuGraphExecUpdate(exec, other, &info) == CUDA_SUCCESS);
  CHECK(info.result == CU_GRAPH_EXEC_UPDATE_SUCCESS);
  CHECK(cuGraphExecUpdate(exec, captured, &info) == CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE);
  CHECK(info.result != CU_GRAPH_EXEC_UPDATE_SUCCESS);

  CHECK(cuGraphExecDestroy(exec) == CUDA_SUCCESS);
  CHECK(cuGraphDestroy(other) == CUDA_SUCCESS && cuGraphDestroy(outer) == CUDA_SUCCESS);
  CHECK(cuGraphDestroy(captured) == CUDA_SUCCESS);
  CHECK(cuStreamDestroy(s) == CUDA_SUCCESS);
  CHECK(cuMemFree(m) == CUDA_SUCCESS && cuMemFree(d) == CUDA_SUCCESS);
}

/* Dependencies read back, event-record nodes, and an executable's record
 * node given another event (what graph_args.c reads). */
static void test_graph_events(CUfunction kernel) {
  CUstream s;
  CUgraph graph;
  CUgraphNode k, record, empty, from[4], to[4];
  CUgraphExec exec;
  CUevent e, f, got = NULL;
  CUDA_KERNEL_NODE_PARAMS kp;
  memset(&kp, 0, sizeof kp);
  kp.func = kernel;
  kp.gridDimX = kp.gridDimY = kp.gridDimZ = kp.blockDimX = kp.blockDimY = kp.blockDimZ = 1;
  CHECK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING) == CUDA_SUCCESS);
  CHECK(cuEventCreate(&e, CU_EVENT_DEFAULT) == CUDA_SUCCESS);
  CHECK(cuEventCreate(&f, CU_EVENT_DEFAULT) == CUDA_SUCCESS);
  CHECK(cuGraphCreate(&graph, 0) == CUDA_SUCCESS);
  CHECK(cuGraphAddKernelNode(&k, graph, NULL, 0, &kp) == CUDA_SUCCESS);
  CHECK(cuGraphAddEventRecordNode(&record, graph, &k, 1, e) == CUDA_SUCCESS);
  CHECK(cuGraphAddEmptyNode(&empty, graph, NULL, 0) == CUDA_SUCCESS);
  CHECK(cuGraphEventRecordNodeGetEvent(record, &got) == CUDA_SUCCESS && got == e);
  size_t n = 0;
  CHECK(cuGraphGetEdges(graph, NULL, NULL, NULL, &n) == CUDA_SUCCESS && n == 1);
  n = 4;
  CHECK(cuGraphGetEdges(graph, from, to, NULL, &n) == CUDA_SUCCESS && n == 1);
  CHECK(from[0] == k && to[0] == record);
  CHECK(cuGraphInstantiateWithFlags(&exec, graph, 0) == CUDA_SUCCESS);
  CHECK(cuGraphExecEventRecordNodeSetEvent(exec, record, f) == CUDA_SUCCESS);
  CHECK(cuGraphExecEventRecordNodeSetEvent(exec, k, f) == CUDA_ERROR_INVALID_VALUE);
  CHECK(cuGraphLaunch(exec, s) == CUDA_SUCCESS);
  CHECK(cuEventSynchronize(f) == CUDA_SUCCESS && cuEventQuery(f) == CUDA_SUCCESS);
  CHECK(cuStreamSynchronize(s) == CUDA_SUCCESS);

  CUgraph captured;
  CUdeviceptr d;
  CHECK(cuMemAlloc(&d, 4096) == CUDA_SUCCESS);
  CHECK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL) == CUDA_SUCCESS);
  CHECK(cuMemsetD32Async(d, 1, 16, s) == CUDA_SUCCESS);
  CHECK(cuMemsetD32Async(d, 2, 16, s) == CUDA_SUCCESS);
  CHECK(cuEventRecordWithFlags(e, s, CU_EVENT_RECORD_EXTERNAL) == CUDA_SUCCESS);
  CHECK(cuStreamEndCapture(s, &captured) == CUDA_SUCCESS);
  CUgraphNode nodes[4];
  CUgraphNodeType type;
  size_t count = 4;
  n = 4;
  CHECK(cuGraphGetNodes(captured, nodes, &count) == CUDA_SUCCESS && count == 3);
  CHECK(cuGraphGetEdges(captured, from, to, NULL, &n) == CUDA_SUCCESS && n == 2);
  /* a stream's work is a chain, the external record a node of it */
  CHECK(from[0] == nodes[0] && to[0] == nodes[1] && from[1] == nodes[1] && to[1] == nodes[2]);
  CHECK(cuGraphNodeGetType(nodes[2], &type) == CUDA_SUCCESS &&
        type == CU_GRAPH_NODE_TYPE_EVENT_RECORD);
  CHECK(cuGraphEventRecordNodeGetEvent(nodes[2], &got) == CUDA_SUCCESS && got == e);

  /* The executable outlives its graph, the nodes do not: a setter given a
   * node of the destroyed graph fails, and the executable still runs. */
  CHECK(cuGraphDestroy(graph) == CUDA_SUCCESS);
  CHECK(cuGraphExecEventRecordNodeSetEvent(exec, record, e) == CUDA_ERROR_INVALID_VALUE);
  CHECK(cuGraphLaunch(exec, s) == CUDA_SUCCESS && cuStreamSynchronize(s) == CUDA_SUCCESS);
  CHECK(cuGraphExecDestroy(exec) == CUDA_SUCCESS);
  CHECK(cuGraphDestroy(captured) == CUDA_SUCCESS);
  CHECK(cuEventDestroy(e) == CUDA_SUCCESS && cuEventDestroy(f) == CUDA_SUCCESS);
  CHECK(cuStreamDestroy(s) == CUDA_SUCCESS && cuMemFree(d) == CUDA_SUCCESS);
}

/* Whether graph g has the edge from -> to. */
static bool has_edge(CUgraph g, CUgraphNode from, CUgraphNode to) {
  CUgraphNode f[16], t[16];
  size_t n = 16;
  if (cuGraphGetEdges(g, f, t, NULL, &n) != CUDA_SUCCESS) return false;
  for (size_t i = 0; i < n && i < 16; i++)
    if (f[i] == from && t[i] == to) return true;
  return false;
}

/* A stream that waits for an event recorded in a capture joins it: its work
 * is nodes of the capture's graph after the event's, and the origin ends the
 * capture once it waited for the stream's last work (cuda.h: otherwise
 * CUDA_ERROR_STREAM_CAPTURE_UNJOINED, and the stream leaves the capture all
 * the same). Stream-ordered allocations and frees captured are memory nodes;
 * graphs take such nodes and event-wait nodes built by hand too. */
static void test_capture_fork_join(void) {
  CUstream s, t;
  CUevent a, c;
  CUgraph graph = NULL;
  CUgraphNode nodes[8];
  CUgraphNodeType type;
  CUdeviceptr d, p;
  size_t n = 8;
  CHECK(cuMemAlloc(&d, 4096) == CUDA_SUCCESS);
  CHECK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING) == CUDA_SUCCESS);
  CHECK(cuStreamCreate(&t, CU_STREAM_NON_BLOCKING) == CUDA_SUCCESS);
  CHECK(cuEventCreate(&a, CU_EVENT_DEFAULT) == CUDA_SUCCESS);
  CHECK(cuEventCreate(&c, CU_EVENT_DEFAULT) == CUDA_SUCCESS);
  CHECK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL) == CUDA_SUCCESS);
  CHECK(cuMemsetD32Async(d, 1, 16, s) == CUDA_SUCCESS);
  CHECK(cuEventRecord(a, s) == CUDA_SUCCESS);
  CHECK(cuStreamWaitEvent(t, a, 0) == CUDA_SUCCESS);
  CHECK(cuMemsetD32Async(d, 2, 16, t) == CUDA_SUCCESS);
  CHECK(cuEventRecord(c, t) == CUDA_SUCCESS);
  CHECK(cuStreamWaitEvent(s, c, 0) == CUDA_SUCCESS);
  CHECK(cuMemsetD32Async(d, 3, 16, s) == CUDA_SUCCESS);
  CHECK(cuStreamEndCapture(s, &graph) == CUDA_SUCCESS && graph);
  CHECK(cuGraphGetNodes(graph, nodes, &n) == CUDA_SUCCESS && n == 3);
  CHECK(has_edge(graph, nodes[0], nodes[1]) && has_edge(graph, nodes[1], nodes[2]));
  CHECK(cuGraphDestroy(graph) == CUDA_SUCCESS);
  CHECK(cuStreamSynchronize(t) == CUDA_SUCCESS); /* no longer capturing */

  CHECK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL) == CUDA_SUCCESS);
  CHECK(cuMemAllocAsync(&p, 4096, s) == CUDA_SUCCESS && p);
  CHECK(cuEventRecord(a, s) == CUDA_SUCCESS);
  CHECK(cuStreamWaitEvent(t, a, 0) == CUDA_SUCCESS);
  CHECK(cuMemFreeAsync(p, t) == CUDA_SUCCESS); /* never joined back */
  CHECK(cuStreamEndCapture(s, &graph) == CUDA_ERROR_STREAM_CAPTURE_UNJOINED && !graph);
  CHECK(cuStreamSynchronize(t) == CUDA_SUCCESS && cuStreamSynchronize(s) == CUDA_SUCCESS);

  CHECK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL) == CUDA_SUCCESS);
  CHECK(cuMemAllocAsync(&p, 4096, s) == CUDA_SUCCESS && p);
  CHECK(cuMemFreeAsync(p, s) == CUDA_SUCCESS);
  CHECK(cuStreamEndCapture(s, &graph) == CUDA_SUCCESS);
  n = 8;
  CHECK(cuGraphGetNodes(graph, nodes, &n) == CUDA_SUCCESS && n == 2);
  CHECK(cuGraphNodeGetType(nodes[0], &type) == CUDA_SUCCESS &&
        type == CU_GRAPH_NODE_TYPE_MEM_ALLOC);
  CHECK(cuGraphNodeGetType(nodes[1], &type) == CUDA_SUCCESS && type == CU_GRAPH_NODE_TYPE_MEM_FREE);
  CHECK(cuGraphDestroy(graph) == CUDA_SUCCESS);

  CUDA_MEM_ALLOC_NODE_PARAMS mp;
  CUgraphNode alloc, free_node, wait;
  CUgraphExec exec;
  CUevent got = NULL;
  memset(&mp, 0, sizeof mp);
  mp.bytesize = 4096;
  mp.poolProps.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
  mp.poolProps.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  CHECK(cuGraphCreate(&graph, 0) == CUDA_SUCCESS);
  CHECK(cuGraphAddEventWaitNode(&wait, graph, NULL, 0, c) == CUDA_SUCCESS);
  CHECK(cuGraphEventWaitNodeGetEvent(wait, &got) == CUDA_SUCCESS && got == c);
  CHECK(cuGraphAddMemAllocNode(&alloc, graph, &wait, 1, &mp) == CUDA_SUCCESS && mp.dptr);
  CHECK(cuGraphAddMemFreeNode(&free_node, graph, &alloc, 1, mp.dptr) == CUDA_SUCCESS);
  CHECK(cuEventRecord(c, t) == CUDA_SUCCESS);
  CHECK(cuGraphInstantiateWithFlags(&exec, graph, 0) == CUDA_SUCCESS);
  CHECK(cuGraphLaunch(exec, s) == CUDA_SUCCESS && cuStreamSynchronize(s) == CUDA_SUCCESS);
  CHECK(cuGraphExecDestroy(exec) == CUDA_SUCCESS && cuGraphDestroy(graph) == CUDA_SUCCESS);

  CHECK(cuEventDestroy(a) == CUDA_SUCCESS && cuEventDestroy(c) == CUDA_SUCCESS);
  CHECK(cuStreamDestroy(t) == CUDA_SUCCESS && cuStreamDestroy(s) == CUDA_SUCCESS);
  CHECK(cuMemFree(d) == CUDA_SUCCESS);
}

int main(void) {
  CUdevice dev;
  CUcontext ctx;
  CUmodule mod;
  if (cuInit(0) != CUDA_SUCCESS || cuDeviceGet(&dev, 0) != CUDA_SUCCESS ||
      cuDevicePrimaryCtxRetain(&ctx, dev) != CUDA_SUCCESS || cuCtxSetCurrent(ctx) != CUDA_SUCCESS) {
    fprintf(stderr, "conformance: no device\n");
    return 1;
  }
  CHECK(cuModuleLoadData(&mod, ptx) == CUDA_SUCCESS);
  test_parameter_layouts(mod);
  test_globals(mod);
  test_library();
  test_tensor_maps(mod);
  test_host_functions_and_events();
  test_proc_address();
  test_memory();
  test_copies();
  test_stream_resources(dev);
  CUfunction none;
  CHECK(cuModuleGetFunction(&none, mod, "none") == CUDA_SUCCESS);
  test_graphs(none);
  test_graph_events(none);
  test_capture_fork_join();
  printf("conformance: %d passed, %d failed\n", passed, failed);
  return failed != 0;
}
