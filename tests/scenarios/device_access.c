/* device_access.c - memory given to work on a stream: AC301 (single-attached
 * to another stream) and AC302 (attached to the host), through every way a
 * launch or a copy names memory, and `device` semantics.
 *
 *   device_access CASE
 */
#include <stdint.h>

#include "scenario.h"

static const char ptx[] = ".version 8.0\n.target sm_90\n.address_size 64\n"
                          ".visible .global .attribute(.managed) .align 4 .b8 table[4096];\n"
                          ".visible .entry use(.param .u64 p)\n{\n  ret;\n}\n"
                          ".visible .entry use_struct(.param .align 8 .b8 s[16])\n{\n  ret;\n}\n"
                          ".visible .entry uses_table()\n{\n  ret;\n}\n"
                          ".visible .entry use_map(.param .align 64 .b8 map[128])\n{\n  ret;\n}\n";

static CUmodule mod;
static CUfunction use, use_struct, uses_table, use_map;
static CUstream s, t;
static CUdeviceptr m, g;
static volatile int sink;

static void launch(CUfunction f, CUstream stream, void **args) {
  EXPECT_RC(cu.cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, stream, args, NULL), CUDA_SUCCESS);
}
static void launch_use(CUstream stream, CUdeviceptr p) {
  launch_with_pointer(use, stream, p);
}

/* ---- wrong ---- */
static void plain_arg_foreign(void) {
  attach_sync(s, m, CU_MEM_ATTACH_SINGLE);
  launch_use(t, m); /* AC301: m belongs to s */
}
/* The kernel on t is given s's memory while s still works on it, then only t
 * is synchronised: s's kernel is not seen complete, so the CPU may not touch
 * s's memory (AC301, AC201). Under --on-error repair the launch waits for
 * s's work (an event), so t's synchronisation covers it (AC301 alone). */
static void foreign_then_sync_launcher(void) {
  attach_sync(s, m, CU_MEM_ATTACH_SINGLE);
  launch_use(s, m);
  launch_use(t, m); /* AC301: m belongs to s */
  EXPECT_RC(cu.cuStreamSynchronize(t), CUDA_SUCCESS);
  sink = *(volatile int *)m; /* AC201 unless t's launch was ordered after s's */
}
static void struct_arg_foreign(void) {
  struct {
    int n;
    CUdeviceptr p;
  } arg = {16, m + 64};
  attach_sync(s, m, CU_MEM_ATTACH_SINGLE);
  void *args[] = {&arg};
  launch(use_struct, t, args); /* AC301: the pointer inside the struct */
}
static void offset_inside(void) {
  attach_sync(s, m, CU_MEM_ATTACH_SINGLE);
  launch_use(t, m + 4096); /* AC301 */
}
static void extra_buffer(void) {
  attach_sync(s, m, CU_MEM_ATTACH_SINGLE);
  CUdeviceptr p = m;
  size_t size = sizeof p;
  void *extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, &p, CU_LAUNCH_PARAM_BUFFER_SIZE, &size,
                   CU_LAUNCH_PARAM_END};
  EXPECT_RC(cu.cuLaunchKernel(use, 1, 1, 1, 32, 1, 1, 0, t, NULL, extra), CUDA_SUCCESS);
}
static void launch_ex(void) {
  attach_sync(s, m, CU_MEM_ATTACH_SINGLE);
  CUlaunchConfig config = one_block_on(t);
  void *args[] = {&m};
  EXPECT_RC(cu.cuLaunchKernelEx(&config, use, args, NULL), CUDA_SUCCESS); /* AC301 */
}
static void managed_variable(void) {
  CUdeviceptr table;
  size_t bytes;
  EXPECT_RC(cu.cuModuleGetGlobal(&table, &bytes, mod, "table"), CUDA_SUCCESS);
  attach_sync(s, table, CU_MEM_ATTACH_SINGLE);
  launch(uses_table, t, NULL); /* AC301: the kernel's module owns table */
}
static void async_copy(void) {
  attach_sync(s, m, CU_MEM_ATTACH_SINGLE);
  /* g + 64: never where m ends, wherever the driver places the two */
  EXPECT_RC(cu.cuMemcpyAsync(m, g + 64, 64, t), CUDA_SUCCESS); /* AC301: the destination */
}
/* The same pattern as foreign_then_sync_launcher, by a copy into s's memory. */
static void copy_foreign_then_sync(void) {
  attach_sync(s, m, CU_MEM_ATTACH_SINGLE);
  launch_use(s, m);
  EXPECT_RC(cu.cuMemcpyAsync(m, g + 64, 64, t), CUDA_SUCCESS); /* AC301 */
  EXPECT_RC(cu.cuStreamSynchronize(t), CUDA_SUCCESS);
  sink = *(volatile int *)m; /* AC201 unless t's copy was ordered after s's kernel */
}
/* A 2D copy naming m as host memory: the source is m all the same. */
static void async_copy_2d(void) {
  CUDA_MEMCPY2D c;
  memset(&c, 0, sizeof c);
  c.srcMemoryType = CU_MEMORYTYPE_HOST;
  c.srcHost = (const void *)(uintptr_t)m;
  c.srcPitch = 256;
  c.dstMemoryType = CU_MEMORYTYPE_DEVICE;
  c.dstDevice = g;
  c.dstPitch = 256;
  c.WidthInBytes = 64;
  c.Height = 4;
  attach_sync(s, m, CU_MEM_ATTACH_SINGLE);
  EXPECT_RC(cuMemcpy2DAsync(&c, t), CUDA_SUCCESS); /* AC301: the source */
}
static void async_copy_peer(void) {
  CUcontext ctx;
  EXPECT_RC(cu.cuCtxGetCurrent(&ctx), CUDA_SUCCESS);
  attach_sync(s, m, CU_MEM_ATTACH_SINGLE);
  EXPECT_RC(cuMemcpyPeerAsync(m, ctx, g, ctx, 64, t), CUDA_SUCCESS); /* AC301: the destination */
}
static void async_copy_host_pointer(void) {
  attach_sync(s, m, CU_MEM_ATTACH_SINGLE);
  EXPECT_RC(cuMemcpyHtoDAsync(g, (const void *)(uintptr_t)m, 64, t), CUDA_SUCCESS); /* AC301 */
}
/* A batch of two copies on stream; the second writes p. */
static CUresult batch_into(CUdeviceptr p, CUstream stream) {
  CUdeviceptr dsts[] = {g, p}, srcs[] = {g + 4096, g + 8192};
  size_t sizes[] = {64, 64}, first[] = {0};
  CUmemcpyAttributes attr;
  memset(&attr, 0, sizeof attr);
  attr.srcAccessOrder = CU_MEMCPY_SRC_ACCESS_ORDER_STREAM;
  return cuMemcpyBatchAsync(dsts, srcs, sizes, 2, &attr, first, 1, stream);
}
static void batch_foreign(void) {
  attach_sync(s, m, CU_MEM_ATTACH_SINGLE);
  EXPECT_RC(batch_into(m, t), CUDA_SUCCESS); /* AC301: the second copy's destination */
}
static void host_attached(void) {
  attach_sync(s, m, CU_MEM_ATTACH_HOST);
  launch_use(s, m); /* AC302 under strict semantics */
}

/* A kernel captured into a graph, the graph launched on another stream than
 * the memory's: found from the graph's kernel node at instantiation. */
static CUgraphExec captured_graph(CUstream capture_on, CUdeviceptr p) {
  CUgraph graph = NULL;
  CUgraphExec exec = NULL;
  EXPECT_RC(cu.cuStreamBeginCapture(capture_on, CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_SUCCESS);
  launch_use(capture_on, p);
  EXPECT_RC(cu.cuStreamEndCapture(capture_on, &graph), CUDA_SUCCESS);
  EXPECT_RC(cuGraphInstantiate(&exec, graph, 0), CUDA_SUCCESS);
  return exec;
}
static void graph_foreign(void) {
  attach_sync(s, m, CU_MEM_ATTACH_SINGLE);
  CUgraphExec exec = captured_graph(t, m);
  EXPECT_RC(cuGraphLaunch(exec, t), CUDA_SUCCESS); /* AC301 */
  EXPECT_RC(cu.cuStreamSynchronize(t), CUDA_SUCCESS);
  EXPECT_RC(cuGraphExecDestroy(exec), CUDA_SUCCESS);
}

/* The same pattern as foreign_then_sync_launcher, by a graph launch. */
static void graph_foreign_then_sync(void) {
  attach_sync(s, m, CU_MEM_ATTACH_SINGLE);
  CUgraphExec exec = captured_graph(t, m);
  launch_use(s, m);
  EXPECT_RC(cuGraphLaunch(exec, t), CUDA_SUCCESS); /* AC301 */
  EXPECT_RC(cu.cuStreamSynchronize(t), CUDA_SUCCESS);
  sink = *(volatile int *)m; /* AC201 unless the graph launch was ordered after s's kernel */
  EXPECT_RC(cuGraphExecDestroy(exec), CUDA_SUCCESS);
}
/* A batch of copies into s's memory, the same pattern. */
static void batch_foreign_then_sync(void) {
  attach_sync(s, m, CU_MEM_ATTACH_SINGLE);
  launch_use(s, m);
  EXPECT_RC(batch_into(m, t), CUDA_SUCCESS); /* AC301 */
  EXPECT_RC(cu.cuStreamSynchronize(t), CUDA_SUCCESS);
  sink = *(volatile int *)m; /* AC201 unless the batch was ordered after s's kernel */
}

/* A handle the driver gives again after an unload names another kernel: its
 * layout is learned anew, so the second pointer (the foreign one) is seen. */
static const char ptx_one[] = ".version 8.0\n.target sm_90\n.address_size 64\n"
                              ".visible .entry first(.param .u64 p)\n{\n  ret;\n}\n";
static const char ptx_two[] =
    ".version 8.0\n.target sm_90\n.address_size 64\n"
    ".visible .entry second(.param .u64 a, .param .u64 b)\n{\n  ret;\n}\n";
static void reloaded_module(void) {
  CUmodule one, two;
  CUfunction first, second;
  EXPECT_RC(cu.cuModuleLoadData(&one, ptx_one), CUDA_SUCCESS);
  EXPECT_RC(cu.cuModuleGetFunction(&first, one, "first"), CUDA_SUCCESS);
  launch_with_pointer(first, t, g); /* its layout learned: one pointer */
  EXPECT_RC(cuModuleUnload(one), CUDA_SUCCESS);
  EXPECT_RC(cu.cuModuleLoadData(&two, ptx_two), CUDA_SUCCESS);
  EXPECT_RC(cu.cuModuleGetFunction(&second, two, "second"), CUDA_SUCCESS);
  attach_sync(s, m, CU_MEM_ATTACH_SINGLE);
  CUdeviceptr a = g, b = m;
  void *args[] = {&a, &b};
  launch(second, t, args); /* AC301: b belongs to s */
  EXPECT_RC(cuModuleUnload(two), CUDA_SUCCESS);
}

/* A tensor map over p (a 256 x 256 float matrix), as a kernel takes it: by
 * value, a 128-byte parameter with the address in its first word. */
static CUtensorMap tensor_map_over(CUdeviceptr p) {
  CUtensorMap map;
  cuuint64_t dims[2] = {256, 256}, strides[1] = {256 * sizeof(float)};
  cuuint32_t box[2] = {32, 32}, element_strides[2] = {1, 1};
  EXPECT_RC(cuTensorMapEncodeTiled(&map, CU_TENSOR_MAP_DATA_TYPE_FLOAT32, 2, (void *)p, dims,
                                   strides, box, element_strides, CU_TENSOR_MAP_INTERLEAVE_NONE,
                                   CU_TENSOR_MAP_SWIZZLE_NONE, CU_TENSOR_MAP_L2_PROMOTION_NONE,
                                   CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE),
            CUDA_SUCCESS);
  return map;
}
static void launch_map(CUstream stream, CUtensorMap *map) {
  void *args[] = {map};
  launch(use_map, stream, args);
}
/* wrong: a tensor map over m, single-attached to s, given to a kernel on t (AC301) */
static void tensor_map_foreign(void) {
  attach_sync(s, m, CU_MEM_ATTACH_SINGLE);
  CUtensorMap map = tensor_map_over(m);
  launch_map(t, &map);
}
/* wrong: a map made over GLOBAL memory, then pointed at m (AC301) */
static void tensor_map_replaced_foreign(void) {
  attach_sync(s, m, CU_MEM_ATTACH_SINGLE);
  CUtensorMap map = tensor_map_over(g);
  EXPECT_RC(cuTensorMapReplaceAddress(&map, (void *)(m + 4096)), CUDA_SUCCESS);
  launch_map(t, &map);
}

/* ---- right ---- */
/* ... the map given to a kernel on s */
static void tensor_map_same_stream(void) {
  attach_sync(s, m, CU_MEM_ATTACH_SINGLE);
  CUtensorMap map = tensor_map_over(m);
  launch_map(s, &map);
}
static void graph_same_stream(void) {
  attach_sync(s, m, CU_MEM_ATTACH_SINGLE);
  CUgraphExec exec = captured_graph(s, m);
  EXPECT_RC(cuGraphLaunch(exec, s), CUDA_SUCCESS);
  EXPECT_RC(cu.cuStreamSynchronize(s), CUDA_SUCCESS);
  EXPECT_RC(cuGraphExecDestroy(exec), CUDA_SUCCESS);
}
static void batch_same_stream(void) {
  attach_sync(s, m, CU_MEM_ATTACH_SINGLE);
  EXPECT_RC(batch_into(m, s), CUDA_SUCCESS);
}
static void same_stream(void) {
  attach_sync(s, m, CU_MEM_ATTACH_SINGLE);
  launch_use(s, m);
}
static void global_memory(void) {
  launch_use(t, g);
}
static void reattach_ordered(void) {
  CUevent e;
  attach_sync(s, m, CU_MEM_ATTACH_SINGLE);
  launch_use(s, m);
  EXPECT_RC(cu.cuEventCreate(&e, CU_EVENT_DISABLE_TIMING), CUDA_SUCCESS);
  EXPECT_RC(cu.cuEventRecord(e, s), CUDA_SUCCESS);
  EXPECT_RC(cu.cuStreamWaitEvent(t, e, 0), CUDA_SUCCESS);
  EXPECT_RC(cu.cuStreamAttachMemAsync(t, m, 0, CU_MEM_ATTACH_SINGLE), CUDA_SUCCESS);
  launch_use(t, m); /* after the attach in t's own order */
}
/* CPU touch of GLOBAL memory that the running kernel was not given: AC202
 * under strict semantics, nothing under device semantics. */
static void touch_unreached_global(void) {
  launch_use(s, m);
  sink = *(volatile int *)g;
}
/* ... and of GLOBAL memory the running kernel was given: AC202 either way. */
static void touch_reached_global(void) {
  launch_use(s, g);
  sink = *(volatile int *)g;
}

static const struct scenario_case cases[] = {
    {"plain_arg_foreign", plain_arg_foreign},
    {"foreign_then_sync_launcher", foreign_then_sync_launcher},
    {"copy_foreign_then_sync", copy_foreign_then_sync},
    {"graph_foreign_then_sync", graph_foreign_then_sync},
    {"batch_foreign_then_sync", batch_foreign_then_sync},
    {"struct_arg_foreign", struct_arg_foreign},
    {"offset_inside", offset_inside},
    {"extra_buffer", extra_buffer},
    {"launch_ex", launch_ex},
    {"managed_variable", managed_variable},
    {"async_copy", async_copy},
    {"async_copy_2d", async_copy_2d},
    {"async_copy_peer", async_copy_peer},
    {"async_copy_host_pointer", async_copy_host_pointer},
    {"batch_foreign", batch_foreign},
    {"batch_same_stream", batch_same_stream},
    {"host_attached", host_attached},
    {"graph_foreign", graph_foreign},
    {"reloaded_module", reloaded_module},
    {"graph_same_stream", graph_same_stream},
    {"same_stream", same_stream},
    {"global_memory", global_memory},
    {"reattach_ordered", reattach_ordered},
    {"touch_unreached_global", touch_unreached_global},
    {"touch_reached_global", touch_reached_global},
    {"tensor_map_foreign", tensor_map_foreign},
    {"tensor_map_replaced_foreign", tensor_map_replaced_foreign},
    {"tensor_map_same_stream", tensor_map_same_stream},
};

int main(int argc, char **argv) {
  if (argc != 2 && argc != 3) {
    fprintf(stderr, "usage: %s CASE [DOOR]\n", argv[0]);
    return 2;
  }
  const struct scenario_case *c =
      find_case(cases, sizeof cases / sizeof cases[0], argv[0], argv[1]);
  if (!c) return 2;
  start_cuda(argc == 3 ? argv[2] : "link"); /* the door: scenario.h */
  EXPECT_RC(cu.cuModuleLoadData(&mod, ptx), CUDA_SUCCESS);
  EXPECT_RC(cu.cuModuleGetFunction(&use, mod, "use"), CUDA_SUCCESS);
  EXPECT_RC(cu.cuModuleGetFunction(&use_struct, mod, "use_struct"), CUDA_SUCCESS);
  EXPECT_RC(cu.cuModuleGetFunction(&uses_table, mod, "uses_table"), CUDA_SUCCESS);
  EXPECT_RC(cu.cuModuleGetFunction(&use_map, mod, "use_map"), CUDA_SUCCESS);
  EXPECT_RC(cu.cuStreamCreate(&s, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
  EXPECT_RC(cu.cuStreamCreate(&t, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
  EXPECT_RC(cu.cuMemAllocManaged(&m, 1 << 20, CU_MEM_ATTACH_GLOBAL), CUDA_SUCCESS);
  EXPECT_RC(cu.cuMemAllocManaged(&g, 1 << 20, CU_MEM_ATTACH_GLOBAL), CUDA_SUCCESS);
  c->run();
  EXPECT_RC(cu.cuCtxSynchronize(), CUDA_SUCCESS);
  return finish();
}
