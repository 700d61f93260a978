/* graphs.c - what a graph gives the GPU beyond its kernels' arguments: memcpy
 * and memset nodes (captured from a stream or added by hand, in child graphs
 * too), and executables whose parameters change after instantiation (a
 * node's parameters, a child graph node's graph, an update). Each is judged
 * at cuGraphLaunch against the launch stream: m is single-attached to s, so a
 * graph launched on t that touches it is AC301; g is global memory and d
 * device memory, which break no rule. An event-record node records its event
 * at each launch: waiting for it is waiting for the graph where the record
 * follows all of it.
 *
 *   graphs CASE
 */
#include <stdbool.h>
#include <stdint.h>

#include "scenario.h"

static const char ptx[] = ".version 8.0\n.target sm_90\n.address_size 64\n"
                          ".visible .entry use(.param .u64 p)\n{\n  ret;\n}\n";

static CUfunction use;
static CUstream s, t;
static CUdeviceptr m, g, d;

/* ---- graphs ---- */

/* The one node of a graph. */
static CUgraphNode only_node(CUgraph graph) {
  CUgraphNode node = NULL;
  size_t n = 1;
  EXPECT_RC(cuGraphGetNodes(graph, &node, &n), CUDA_SUCCESS);
  if (n != 1) fprintf(stderr, "scenario: %zu nodes, expected 1\n", n), failures++;
  return node;
}

static void begin(CUstream on) {
  EXPECT_RC(cu.cuStreamBeginCapture(on, CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_SUCCESS);
}
static CUgraph end(CUstream on) {
  CUgraph graph = NULL;
  EXPECT_RC(cu.cuStreamEndCapture(on, &graph), CUDA_SUCCESS);
  return graph;
}
/* A graph of one kernel on p, one copy into p or one set of p, captured on `on`. */
static CUgraph kernel_graph(CUstream on, CUdeviceptr p) {
  begin(on);
  launch_with_pointer(use, on, p);
  return end(on);
}
static CUgraph copy_graph(CUstream on, CUdeviceptr p) {
  begin(on);
  EXPECT_RC(cu.cuMemcpyAsync(p, d, 256, on), CUDA_SUCCESS);
  return end(on);
}
static CUgraph set_graph(CUstream on, CUdeviceptr p) {
  begin(on);
  EXPECT_RC(cuMemsetD32Async(p, 0, 64, on), CUDA_SUCCESS);
  return end(on);
}
/* A graph whose one node is a child graph holding `inner`. */
static CUgraph around(CUgraph inner) {
  CUgraph outer;
  CUgraphNode node;
  EXPECT_RC(cuGraphCreate(&outer, 0), CUDA_SUCCESS);
  EXPECT_RC(cuGraphAddChildGraphNode(&node, outer, NULL, 0, inner), CUDA_SUCCESS);
  return outer;
}

static CUgraphExec instantiate(CUgraph graph) {
  CUgraphExec exec = NULL;
  EXPECT_RC(cuGraphInstantiate(&exec, graph, 0), CUDA_SUCCESS);
  return exec;
}
static void launch_graph(CUgraphExec exec, CUstream on) {
  EXPECT_RC(cuGraphLaunch(exec, on), CUDA_SUCCESS);
  EXPECT_RC(cu.cuStreamSynchronize(on), CUDA_SUCCESS);
}
static void run(CUgraph graph, CUstream on) {
  CUgraphExec exec = instantiate(graph);
  launch_graph(exec, on);
  EXPECT_RC(cuGraphExecDestroy(exec), CUDA_SUCCESS);
}

/* ---- memcpy and memset nodes ---- */

/* wrong: a copy into m captured on t, launched on t (AC301) */
static void captured_copy_foreign(void) {
  run(copy_graph(t, m), t);
}
/* right: ... captured and launched on s */
static void captured_copy_same_stream(void) {
  run(copy_graph(s, m), s);
}
/* wrong: a set of m (AC301) */
static void captured_set_foreign(void) {
  run(set_graph(t, m), t);
}
/* right: a set of global memory */
static void captured_set_global(void) {
  run(set_graph(t, g), t);
}
/* wrong: a copy node added by hand reading m (AC301: the source) */
static void added_copy_foreign(void) {
  CUgraph graph;
  CUgraphNode node;
  CUDA_MEMCPY3D c;
  memset(&c, 0, sizeof c);
  c.srcMemoryType = CU_MEMORYTYPE_UNIFIED;
  c.srcDevice = m;
  c.dstMemoryType = CU_MEMORYTYPE_DEVICE;
  c.dstDevice = d;
  c.WidthInBytes = 256;
  c.Height = c.Depth = 1;
  EXPECT_RC(cuGraphCreate(&graph, 0), CUDA_SUCCESS);
  EXPECT_RC(cuGraphAddMemcpyNode(&node, graph, NULL, 0, &c, NULL), CUDA_SUCCESS);
  run(graph, t);
}
/* wrong: a set of m inside a child graph (AC301) */
static void child_set_foreign(void) {
  run(around(set_graph(t, m)), t);
}
/* right: ... launched on s */
static void child_set_same_stream(void) {
  run(around(set_graph(s, m)), s);
}
/* right: a copy may write memory attached to the host (the driver moves it);
 * a kernel node given it would be AC302 */
static void copy_host_attached(void) {
  attach_sync(s, m, CU_MEM_ATTACH_HOST);
  run(copy_graph(t, m), t);
}

/* ---- executables changed after instantiation ---- */

static CUDA_KERNEL_NODE_PARAMS kernel_on(CUdeviceptr *p, void **args) {
  args[0] = p;
  return one_block_node(use, args);
}
/* A kernel graph on `from`, instantiated, its node then given `to`, launched on t. */
static void kernel_node_moved(CUdeviceptr from, CUdeviceptr to) {
  CUgraph graph = kernel_graph(t, from);
  CUgraphExec exec = instantiate(graph);
  void *args[1];
  CUDA_KERNEL_NODE_PARAMS k = kernel_on(&to, args);
  EXPECT_RC(cuGraphExecKernelNodeSetParams(exec, only_node(graph), &k), CUDA_SUCCESS);
  launch_graph(exec, t);
}
/* wrong: the kernel node is given m after instantiation (AC301) */
static void exec_kernel_set_foreign(void) {
  kernel_node_moved(g, m);
}
/* right: ... it is given g instead of m */
static void exec_kernel_set_away(void) {
  kernel_node_moved(m, g);
}

/* The CUDA 10 ABI of the setter, which cuda.h names cuGraphExecKernelNodeSetParams_v2. */
CUresult CUDAAPI
exec_kernel_set_v1(CUgraphExec exec, CUgraphNode node,
                   const CUDA_KERNEL_NODE_PARAMS_v1 *p) __asm__("cuGraphExecKernelNodeSetParams");
/* wrong: the same through the CUDA 10 ABI (drivers before 12.0 have no other) */
static void exec_kernel_set_v1_foreign(void) {
  CUgraph graph = kernel_graph(t, g);
  CUgraphExec exec = instantiate(graph);
  void *args[] = {&m};
  CUDA_KERNEL_NODE_PARAMS_v1 k;
  memset(&k, 0, sizeof k);
  k.func = use;
  k.gridDimX = k.gridDimY = k.gridDimZ = k.blockDimY = k.blockDimZ = 1;
  k.blockDimX = 32;
  k.kernelParams = args;
  EXPECT_RC(exec_kernel_set_v1(exec, only_node(graph), &k), CUDA_SUCCESS);
  launch_graph(exec, t);
}

/* wrong: the copy node writes m after instantiation (AC301) */
static void exec_copy_set_foreign(void) {
  CUgraph graph = copy_graph(t, g);
  CUgraphExec exec = instantiate(graph);
  CUgraphNode node = only_node(graph);
  CUDA_MEMCPY3D c;
  EXPECT_RC(cuGraphMemcpyNodeGetParams(node, &c), CUDA_SUCCESS);
  c.dstDevice = m, c.dstHost = (void *)(uintptr_t)m, c.dstXInBytes = 0;
  EXPECT_RC(cuGraphExecMemcpyNodeSetParams(exec, node, &c, NULL), CUDA_SUCCESS);
  launch_graph(exec, t);
}
/* right: the set node no longer writes m */
static void exec_set_set_away(void) {
  CUgraph graph = set_graph(t, m);
  CUgraphExec exec = instantiate(graph);
  CUgraphNode node = only_node(graph);
  CUDA_MEMSET_NODE_PARAMS p;
  EXPECT_RC(cuGraphMemsetNodeGetParams(node, &p), CUDA_SUCCESS);
  p.dst = g;
  EXPECT_RC(cuGraphExecMemsetNodeSetParams(exec, node, &p, NULL), CUDA_SUCCESS);
  launch_graph(exec, t);
}
/* wrong: cuGraphExecNodeSetParams gives the kernel node m (AC301) */
static void exec_node_params_foreign(void) {
  CUgraph graph = kernel_graph(t, g);
  CUgraphExec exec = instantiate(graph);
  void *args[1];
  CUdeviceptr p = m;
  CUDA_KERNEL_NODE_PARAMS k = kernel_on(&p, args);
  CUgraphNodeParams params;
  memset(&params, 0, sizeof params);
  params.type = CU_GRAPH_NODE_TYPE_KERNEL;
  memcpy(&params.kernel, &k, sizeof k); /* the v3 struct begins as the v2 one */
  EXPECT_RC(cuGraphExecNodeSetParams(exec, only_node(graph), &params), CUDA_SUCCESS);
  launch_graph(exec, t);
}
/* right: ... and the memset node given global memory through it */
static void exec_node_params_away(void) {
  CUgraph graph = set_graph(t, m);
  CUgraphExec exec = instantiate(graph);
  CUgraphNodeParams params;
  memset(&params, 0, sizeof params);
  params.type = CU_GRAPH_NODE_TYPE_MEMSET;
  params.memset = (CUDA_MEMSET_NODE_PARAMS_v2){g, 0, 0, 4, 64, 1, NULL};
  EXPECT_RC(cuGraphExecNodeSetParams(exec, only_node(graph), &params), CUDA_SUCCESS);
  launch_graph(exec, t);
}

/* A child graph node holding a set of `from`, given a set of `to`. */
static void child_moved(CUdeviceptr from, CUdeviceptr to) {
  CUgraph outer = around(set_graph(t, from));
  CUgraphExec exec = instantiate(outer);
  EXPECT_RC(cuGraphExecChildGraphNodeSetParams(exec, only_node(outer), set_graph(t, to)),
            CUDA_SUCCESS);
  launch_graph(exec, t);
}
/* wrong: the child graph node's new graph sets m (AC301) */
static void exec_child_set_foreign(void) {
  child_moved(g, m);
}
/* right: ... its new graph no longer does */
static void exec_child_set_away(void) {
  child_moved(m, g);
}

/* wrong: the executable updated from a graph whose kernel is given m (AC301) */
static void exec_update_foreign(void) {
  CUgraphExec exec = instantiate(kernel_graph(t, g));
  CUgraphExecUpdateResultInfo info;
  EXPECT_RC(cuGraphExecUpdate(exec, kernel_graph(t, m), &info), CUDA_SUCCESS);
  launch_graph(exec, t);
}
/* right: updated to m, then its node - named by the graph it was instantiated
 * from - given g again */
static void exec_update_then_set(void) {
  CUgraph graph = kernel_graph(t, g);
  CUgraphExec exec = instantiate(graph);
  CUgraphExecUpdateResultInfo info;
  EXPECT_RC(cuGraphExecUpdate(exec, kernel_graph(t, m), &info), CUDA_SUCCESS);
  void *args[1];
  CUDA_KERNEL_NODE_PARAMS k = kernel_on(&g, args);
  EXPECT_RC(cuGraphExecKernelNodeSetParams(exec, only_node(graph), &k), CUDA_SUCCESS);
  launch_graph(exec, t);
}

/* ---- memory-operation nodes: work of the launch's stream, never on managed memory ---- */

/* A graph of one memory-operation node writing `at`; the driver's answer. */
static CUresult add_write_node(CUgraph *graph, CUdeviceptr at) {
  CUstreamBatchMemOpParams op;
  CUDA_BATCH_MEM_OP_NODE_PARAMS p;
  CUgraphNode node;
  CUcontext ctx = NULL;
  memset(&op, 0, sizeof op);
  op.writeValue.operation = CU_STREAM_MEM_OP_WRITE_VALUE_32;
  op.writeValue.address = at;
  op.writeValue.value = 7;
  EXPECT_RC(cu.cuCtxGetCurrent(&ctx), CUDA_SUCCESS);
  p = (CUDA_BATCH_MEM_OP_NODE_PARAMS){.ctx = ctx, .count = 1, .paramArray = &op, .flags = 0};
  EXPECT_RC(cuGraphCreate(graph, 0), CUDA_SUCCESS);
  return cuGraphAddBatchMemOpNode(&node, *graph, NULL, 0, &p);
}
/* The driver takes a managed address in the node and instantiates it, and
 * refuses the launch, as it refuses stream memory operations there
 * (docs/driver-facts.md): no work, nothing to judge */
static void batch_node_managed_refused(void) {
  CUgraph graph;
  EXPECT_RC(add_write_node(&graph, m), CUDA_SUCCESS);
  CUgraphExec exec = instantiate(graph);
  EXPECT_RC(cuGraphLaunch(exec, s), CUDA_ERROR_INVALID_VALUE);
  *(volatile int *)m = 1; /* the stream never turned busy */
}
/* A graph writing device memory launched on s; the CPU touches m
 * (single-attached to s) after the host waited for s, or, wrong, before (AC201) */
static void batch_node_then_touch(bool wait) {
  CUgraph graph;
  EXPECT_RC(add_write_node(&graph, d), CUDA_SUCCESS);
  CUgraphExec exec = instantiate(graph);
  EXPECT_RC(cuGraphLaunch(exec, s), CUDA_SUCCESS);
  if (wait) EXPECT_RC(cu.cuStreamSynchronize(s), CUDA_SUCCESS);
  *(volatile int *)m = 1;
}
static void batch_node_busy_touch(void) {
  batch_node_then_touch(false);
}
static void batch_node_after_sync(void) {
  batch_node_then_touch(true);
}

/* ---- event-record nodes ---- */

/* A graph of a kernel on m and a record of `event`, after the kernel
 * (ordered) or beside it; *record is the record node. */
static CUgraph kernel_and_record(CUevent event, bool ordered, CUgraphNode *record) {
  CUgraph graph;
  CUgraphNode kernel;
  void *args[1];
  CUDA_KERNEL_NODE_PARAMS k = kernel_on(&m, args);
  EXPECT_RC(cuGraphCreate(&graph, 0), CUDA_SUCCESS);
  EXPECT_RC(cuGraphAddKernelNode(&kernel, graph, NULL, 0, &k), CUDA_SUCCESS);
  EXPECT_RC(cuGraphAddEventRecordNode(record, graph, ordered ? &kernel : NULL, ordered, event),
            CUDA_SUCCESS);
  return graph;
}
static CUevent new_event(void) {
  CUevent e = NULL;
  EXPECT_RC(cu.cuEventCreate(&e, CU_EVENT_DEFAULT), CUDA_SUCCESS);
  return e;
}
/* The graph launched on s (m is attached to it); the host waits for `waited`
 * alone, then touches m. With `set`, the executable's record node is given
 * `set` before the launch. */
static void record_then_touch(bool ordered, CUevent recorded, CUevent set, CUevent waited) {
  CUgraphNode record;
  CUgraphExec exec = instantiate(kernel_and_record(recorded, ordered, &record));
  if (set) EXPECT_RC(cuGraphExecEventRecordNodeSetEvent(exec, record, set), CUDA_SUCCESS);
  EXPECT_RC(cuGraphLaunch(exec, s), CUDA_SUCCESS);
  EXPECT_RC(cu.cuEventSynchronize(waited), CUDA_SUCCESS);
  *(volatile int *)m = 1;
}
/* right: the record follows the graph's one kernel; its event waited for */
static void event_record_after_work(void) {
  CUevent e = new_event();
  record_then_touch(true, e, NULL, e);
}
/* wrong: the record depends on nothing, so it may fire before the kernel
 * runs (AC201) */
static void event_record_beside_work(void) {
  CUevent e = new_event();
  record_then_touch(false, e, NULL, e);
}
/* right: the executable's node given another event, which is waited for */
static void exec_event_set_waited(void) {
  CUevent e = new_event(), f = new_event();
  record_then_touch(true, e, f, f);
}
/* wrong: ... the node's first event waited for: never recorded (AC201) */
static void exec_event_set_old_waited(void) {
  CUevent e = new_event(), f = new_event();
  record_then_touch(true, e, f, e);
}

/* right: captured on s, a kernel on m then an external record of e; the
 * launch waited for through e */
static void captured_record_waited(void) {
  CUevent e = new_event();
  begin(s);
  launch_with_pointer(use, s, m);
  EXPECT_RC(cuEventRecordWithFlags(e, s, CU_EVENT_RECORD_EXTERNAL), CUDA_SUCCESS);
  CUgraphExec exec = instantiate(end(s));
  EXPECT_RC(cuGraphLaunch(exec, s), CUDA_SUCCESS);
  EXPECT_RC(cu.cuEventSynchronize(e), CUDA_SUCCESS);
  *(volatile int *)m = 1;
}

static const struct scenario_case cases[] = {
    {"captured_copy_foreign", captured_copy_foreign},
    {"captured_copy_same_stream", captured_copy_same_stream},
    {"captured_set_foreign", captured_set_foreign},
    {"captured_set_global", captured_set_global},
    {"added_copy_foreign", added_copy_foreign},
    {"child_set_foreign", child_set_foreign},
    {"child_set_same_stream", child_set_same_stream},
    {"copy_host_attached", copy_host_attached},
    {"exec_kernel_set_foreign", exec_kernel_set_foreign},
    {"exec_kernel_set_away", exec_kernel_set_away},
    {"exec_kernel_set_v1_foreign", exec_kernel_set_v1_foreign},
    {"exec_copy_set_foreign", exec_copy_set_foreign},
    {"exec_set_set_away", exec_set_set_away},
    {"exec_node_params_foreign", exec_node_params_foreign},
    {"exec_node_params_away", exec_node_params_away},
    {"exec_child_set_foreign", exec_child_set_foreign},
    {"exec_child_set_away", exec_child_set_away},
    {"exec_update_foreign", exec_update_foreign},
    {"exec_update_then_set", exec_update_then_set},
    {"batch_node_managed_refused", batch_node_managed_refused},
    {"batch_node_busy_touch", batch_node_busy_touch},
    {"batch_node_after_sync", batch_node_after_sync},
    {"event_record_after_work", event_record_after_work},
    {"event_record_beside_work", event_record_beside_work},
    {"exec_event_set_waited", exec_event_set_waited},
    {"exec_event_set_old_waited", exec_event_set_old_waited},
    {"captured_record_waited", captured_record_waited},
};

int main(int argc, char **argv) {
  const struct scenario_case *c = CASE_FROM_ARGS(cases, argc, argv);
  if (!c) return 2;
  CUmodule mod;
  start_cuda("link");
  EXPECT_RC(cu.cuModuleLoadData(&mod, ptx), CUDA_SUCCESS);
  EXPECT_RC(cu.cuModuleGetFunction(&use, mod, "use"), CUDA_SUCCESS);
  EXPECT_RC(cu.cuStreamCreate(&s, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
  EXPECT_RC(cu.cuStreamCreate(&t, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
  EXPECT_RC(cu.cuMemAllocManaged(&m, 1 << 20, CU_MEM_ATTACH_GLOBAL), CUDA_SUCCESS);
  EXPECT_RC(cu.cuMemAllocManaged(&g, 1 << 20, CU_MEM_ATTACH_GLOBAL), CUDA_SUCCESS);
  EXPECT_RC(cu.cuMemAlloc(&d, 1 << 20), CUDA_SUCCESS);
  attach_sync(s, m, CU_MEM_ATTACH_SINGLE);
  c->run();
  EXPECT_RC(cu.cuCtxSynchronize(), CUDA_SUCCESS);
  return finish();
}
