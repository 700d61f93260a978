/* ordering.c - the orderings the driver guarantees, each followed by the
 * model transitively: a CPU read of a globally attached flag is legal exactly
 * when every stream's work is known complete (strict semantics), so each
 * right case reads it after a synchronisation that covers all the work - by
 * the rule under test - and each wrong case reads it where some work is not
 * covered. docs/design.md, "The ordering rules", names the reference line
 * each rests on.
 *
 * The sample cases reproduce a fork/join of a correct NVIDIA sample: stream 1
 * works and records A; stream 2 waits for A, copies to the host, waits for B
 * (recorded on stream 1), frees a stream-ordered allocation and records C;
 * stream 1 waits for C; stream 2 and the events are destroyed with that work
 * queued; the host synchronises stream 1 and reads the flag. The same work
 * runs directly, captured into a graph (stream 2 joins the capture by waiting
 * for A) and as a graph built node by node, each launched on stream 1.
 *
 *   ordering CASE
 */
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

#include "scenario.h"

static const char ptx[] = ".version 8.0\n.target sm_90\n.address_size 64\n"
                          ".visible .entry square(.param .u64 in, .param .u64 out)\n{\n  ret;\n}\n"
                          ".visible .entry negate(.param .u64 in, .param .u64 out)\n{\n  ret;\n}\n"
                          ".visible .entry work()\n{\n  ret;\n}\n";

enum { BYTES = 1 << 16 };

static CUfunction square, negate, work;
static CUstream s1;        /* the sample's stream 1, the one synchronised */
static CUdeviceptr flag;   /* managed, CU_MEM_ATTACH_GLOBAL */
static CUdeviceptr device; /* cuMemAlloc: the value operations' word */
static unsigned char host_in[BYTES], host_sq[BYTES], host_neg[BYTES];
static volatile int sink;

static void read_flag(void) {
  sink = *(volatile int *)(uintptr_t)flag;
}

static void launch2(CUfunction f, CUstream on, CUdeviceptr a, CUdeviceptr b) {
  void *args[] = {&a, &b};
  EXPECT_RC(cu.cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, on, args, NULL), CUDA_SUCCESS);
}
static void launch0(CUstream on) {
  EXPECT_RC(cu.cuLaunchKernel(work, 1, 1, 1, 32, 1, 1, 0, on, NULL, NULL), CUDA_SUCCESS);
}

static CUevent event(void) {
  CUevent e;
  EXPECT_RC(cu.cuEventCreate(&e, CU_EVENT_DEFAULT), CUDA_SUCCESS);
  return e;
}
static CUstream stream(void) {
  CUstream s;
  EXPECT_RC(cu.cuStreamCreate(&s, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
  return s;
}
static void record(CUevent e, CUstream on) {
  EXPECT_RC(cu.cuEventRecord(e, on), CUDA_SUCCESS);
}
static void wait_event(CUstream on, CUevent e) {
  EXPECT_RC(cu.cuStreamWaitEvent(on, e, 0), CUDA_SUCCESS);
}
static void sync1(void) {
  EXPECT_RC(cu.cuStreamSynchronize(s1), CUDA_SUCCESS);
}

/* ---- the sample's fork/join ---- */

/* The fork/join enqueued on `on` (directly, or into a capture begun there);
 * joined: stream 1 waits for C. */
static void fork_join(CUstream on, bool joined) {
  CUstream s2 = stream();
  CUevent a = event(), b = event(), c = event();
  CUdeviceptr in, sq, neg;
  EXPECT_RC(cuMemAllocAsync(&in, BYTES, on), CUDA_SUCCESS);
  EXPECT_RC(cuMemAllocAsync(&sq, BYTES, on), CUDA_SUCCESS);
  EXPECT_RC(cuMemcpyHtoDAsync(in, host_in, BYTES, on), CUDA_SUCCESS);
  launch2(square, on, in, sq);
  record(a, on);
  wait_event(s2, a);
  EXPECT_RC(cuMemcpyDtoHAsync(host_sq, sq, BYTES, s2), CUDA_SUCCESS);
  EXPECT_RC(cuMemFreeAsync(in, on), CUDA_SUCCESS);
  EXPECT_RC(cuMemAllocAsync(&neg, BYTES, on), CUDA_SUCCESS);
  launch2(negate, on, sq, neg);
  record(b, on);
  EXPECT_RC(cuMemcpyDtoHAsync(host_neg, neg, BYTES, on), CUDA_SUCCESS);
  EXPECT_RC(cuMemFreeAsync(neg, on), CUDA_SUCCESS);
  wait_event(s2, b);
  EXPECT_RC(cuMemFreeAsync(sq, s2), CUDA_SUCCESS);
  record(c, s2);
  if (joined) wait_event(on, c);
  EXPECT_RC(cu.cuStreamDestroy(s2), CUDA_SUCCESS); /* its work still queued */
  EXPECT_RC(cu.cuEventDestroy(a), CUDA_SUCCESS);   /* the waits were enqueued */
  EXPECT_RC(cu.cuEventDestroy(b), CUDA_SUCCESS);
  EXPECT_RC(cu.cuEventDestroy(c), CUDA_SUCCESS);
}

/* The same captured on a stream of its own, instantiated. */
static CUgraphExec captured_fork_join(void) {
  CUstream on = stream();
  CUgraph graph = NULL;
  CUgraphExec exec = NULL;
  EXPECT_RC(cu.cuStreamBeginCapture(on, CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_SUCCESS);
  fork_join(on, true);
  EXPECT_RC(cu.cuStreamEndCapture(on, &graph), CUDA_SUCCESS);
  EXPECT_RC(cuGraphInstantiate(&exec, graph, 0), CUDA_SUCCESS);
  EXPECT_RC(cu.cuStreamDestroy(on), CUDA_SUCCESS);
  EXPECT_RC(cuGraphDestroy(graph), CUDA_SUCCESS);
  return exec;
}

/* Node builders of the explicit form. */
static CUgraphNode alloc_node(CUgraph g, CUgraphNode *dep, CUdeviceptr *out) {
  CUDA_MEM_ALLOC_NODE_PARAMS p;
  CUgraphNode n = NULL;
  memset(&p, 0, sizeof p);
  p.bytesize = BYTES;
  p.poolProps.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
  p.poolProps.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  p.poolProps.location.id = 0;
  EXPECT_RC(cuGraphAddMemAllocNode(&n, g, dep, dep ? 1 : 0, &p), CUDA_SUCCESS);
  *out = p.dptr;
  return n;
}
static CUgraphNode copy_node(CUgraph g, CUgraphNode dep, bool to_device, CUdeviceptr d,
                             void *host) {
  CUDA_MEMCPY3D c;
  CUgraphNode n = NULL;
  CUcontext ctx = NULL;
  memset(&c, 0, sizeof c);
  c.srcMemoryType = to_device ? CU_MEMORYTYPE_HOST : CU_MEMORYTYPE_DEVICE;
  c.srcHost = to_device ? host : NULL;
  c.srcDevice = to_device ? 0 : d;
  c.dstMemoryType = to_device ? CU_MEMORYTYPE_DEVICE : CU_MEMORYTYPE_HOST;
  c.dstHost = to_device ? NULL : host;
  c.dstDevice = to_device ? d : 0;
  c.WidthInBytes = BYTES;
  c.Height = c.Depth = 1;
  EXPECT_RC(cu.cuCtxGetCurrent(&ctx), CUDA_SUCCESS);
  EXPECT_RC(cuGraphAddMemcpyNode(&n, g, &dep, 1, &c, ctx), CUDA_SUCCESS);
  return n;
}
static CUgraphNode kernel_node(CUgraph g, CUgraphNode dep, CUfunction f, CUdeviceptr *a,
                               CUdeviceptr *b) {
  CUgraphNode n = NULL;
  void *args[] = {a, b};
  CUDA_KERNEL_NODE_PARAMS k = one_block_node(f, args);
  EXPECT_RC(cuGraphAddKernelNode(&n, g, &dep, 1, &k), CUDA_SUCCESS);
  return n;
}
static CUgraphNode free_node(CUgraph g, const CUgraphNode *deps, size_t n, CUdeviceptr d) {
  CUgraphNode node = NULL;
  EXPECT_RC(cuGraphAddMemFreeNode(&node, g, deps, n, d), CUDA_SUCCESS);
  return node;
}

/* The same built node by node, as the sample does, instantiated. */
static CUgraphExec explicit_fork_join(void) {
  CUgraph g;
  CUgraphExec exec = NULL;
  CUdeviceptr in, sq, neg;
  EXPECT_RC(cuGraphCreate(&g, 0), CUDA_SUCCESS);
  CUgraphNode alloc_in = alloc_node(g, NULL, &in);
  CUgraphNode alloc_sq = alloc_node(g, &alloc_in, &sq);
  CUgraphNode copy_in = copy_node(g, alloc_sq, true, in, host_in);
  CUgraphNode sq_kernel = kernel_node(g, copy_in, square, &in, &sq);
  CUgraphNode copy_sq = copy_node(g, sq_kernel, false, sq, host_sq);
  CUgraphNode free_in = free_node(g, &sq_kernel, 1, in);
  CUgraphNode alloc_neg = alloc_node(g, &free_in, &neg);
  CUgraphNode neg_kernel = kernel_node(g, alloc_neg, negate, &sq, &neg);
  CUgraphNode before_free_sq[] = {copy_sq, neg_kernel};
  free_node(g, before_free_sq, 2, sq);
  CUgraphNode copy_neg = copy_node(g, neg_kernel, false, neg, host_neg);
  free_node(g, &copy_neg, 1, neg);
  EXPECT_RC(cuGraphInstantiate(&exec, g, 0), CUDA_SUCCESS);
  EXPECT_RC(cuGraphDestroy(g), CUDA_SUCCESS);
  return exec;
}

static void launch_graph(CUgraphExec exec, CUstream on) {
  EXPECT_RC(cuGraphLaunch(exec, on), CUDA_SUCCESS);
}

/* right: each form, then stream 1 synchronised, then the read */
static void sample_direct(void) {
  fork_join(s1, true);
  sync1();
  read_flag();
}
static void sample_captured(void) {
  CUgraphExec exec = captured_fork_join();
  launch_graph(exec, s1);
  sync1();
  read_flag();
  EXPECT_RC(cuGraphExecDestroy(exec), CUDA_SUCCESS);
}
static void sample_explicit(void) {
  CUgraphExec exec = explicit_fork_join();
  launch_graph(exec, s1);
  sync1();
  read_flag();
  EXPECT_RC(cuGraphExecDestroy(exec), CUDA_SUCCESS);
}
/* right: the three in a row, as the sample runs them */
static void sample_all(void) {
  sample_direct();
  sample_captured();
  sample_explicit();
}
/* wrong: the read before the synchronise (AC202) */
static void sample_direct_read_early(void) {
  fork_join(s1, true);
  read_flag();
  sync1();
}
static void sample_captured_read_early(void) {
  CUgraphExec exec = captured_fork_join();
  launch_graph(exec, s1);
  read_flag();
  sync1();
}
static void sample_explicit_read_early(void) {
  CUgraphExec exec = explicit_fork_join();
  launch_graph(exec, s1);
  read_flag();
  sync1();
}
/* wrong: stream 2 is not joined back: its work, queued on a stream destroyed
 * since, is not covered by stream 1's synchronisation (AC202 naming it) */
static void sample_direct_unjoined(void) {
  fork_join(s1, false);
  sync1();
  read_flag();
  EXPECT_RC(cu.cuCtxSynchronize(), CUDA_SUCCESS);
}
/* right: captured without the join, the capture is refused - its work never
 * runs, and stream 2, which joined the capture, never did any */
static void sample_captured_unjoined(void) {
  CUstream on = stream();
  CUgraph graph = NULL;
  EXPECT_RC(cu.cuStreamBeginCapture(on, CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_SUCCESS);
  fork_join(on, false);
  EXPECT_RC(cu.cuStreamEndCapture(on, &graph), CUDA_ERROR_STREAM_CAPTURE_UNJOINED);
  read_flag();
  EXPECT_RC(cu.cuStreamDestroy(on), CUDA_SUCCESS);
}

/* ---- events destroyed after the wait ---- */

/* right: the wait takes what the event covers then; its destruction after
 * the wait changes nothing */
static void event_destroyed_after_wait(void) {
  CUstream t = stream();
  CUevent e = event();
  launch0(t);
  record(e, t);
  wait_event(s1, e);
  EXPECT_RC(cu.cuEventDestroy(e), CUDA_SUCCESS);
  sync1();
  read_flag();
}
/* wrong: a record after the wait covers more, but the wait took the earlier
 * one: t's second kernel is not covered (AC202) */
static void event_rerecorded_after_wait(void) {
  CUstream t = stream();
  CUevent e = event();
  launch0(t);
  record(e, t);
  wait_event(s1, e);
  launch0(t);
  record(e, t);
  EXPECT_RC(cu.cuEventDestroy(e), CUDA_SUCCESS);
  sync1();
  read_flag();
  EXPECT_RC(cu.cuCtxSynchronize(), CUDA_SUCCESS);
}

/* ---- streams destroyed with work queued ---- */

/* right: the destroyed stream's work still completes, and still orders what
 * waits for an event recorded after it */
static void destroyed_stream_joined(void) {
  CUstream t = stream();
  CUevent e = event();
  launch0(t);
  record(e, t);
  EXPECT_RC(cu.cuStreamDestroy(t), CUDA_SUCCESS);
  wait_event(s1, e);
  sync1();
  read_flag();
  EXPECT_RC(cu.cuEventDestroy(e), CUDA_SUCCESS);
}
/* wrong: nothing waits for it; its work is still queued (AC202 naming it) */
static void destroyed_stream_unjoined(void) {
  CUstream t = stream();
  launch0(t);
  EXPECT_RC(cu.cuStreamDestroy(t), CUDA_SUCCESS);
  launch0(s1);
  sync1();
  read_flag();
  EXPECT_RC(cu.cuCtxSynchronize(), CUDA_SUCCESS);
}

/* ---- captures that span streams ---- */

/* A capture on `on` that forks onto t and joins back, ended. */
static void capture_fork(CUstream on, CUstream t) {
  CUevent a = event(), c = event();
  CUgraph graph = NULL;
  EXPECT_RC(cu.cuStreamBeginCapture(on, CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_SUCCESS);
  launch0(on);
  record(a, on);
  wait_event(t, a);
  launch0(t);
  record(c, t);
  wait_event(on, c);
  EXPECT_RC(cu.cuStreamEndCapture(on, &graph), CUDA_SUCCESS);
  EXPECT_RC(cuGraphDestroy(graph), CUDA_SUCCESS);
  EXPECT_RC(cu.cuEventDestroy(a), CUDA_SUCCESS);
  EXPECT_RC(cu.cuEventDestroy(c), CUDA_SUCCESS);
}
/* right: captured work - the joined stream's too - does not run */
static void capture_fork_not_run(void) {
  capture_fork(stream(), stream());
  read_flag();
}
/* wrong: once the capture ended, the joined stream's work runs again (AC202) */
static void capture_fork_then_work(void) {
  CUstream t = stream();
  capture_fork(stream(), t);
  launch0(t);
  read_flag();
  EXPECT_RC(cu.cuStreamSynchronize(t), CUDA_SUCCESS);
}

/* ---- graph launches ---- */

/* An executable of one kernel, or of a wait for e then a kernel (*wait: that node). */
/* An executable of [wait for e ->] one kernel. Its graph is destroyed at
 * once, unless the caller keeps it (*kept) to change the wait node later: on
 * the real driver a node of a destroyed graph is no longer one to set. */
static CUgraphExec graph_of(CUevent e, CUgraphNode *wait, CUgraph *kept) {
  CUgraph g;
  CUgraphNode first = NULL, k = NULL;
  CUgraphExec exec = NULL;
  CUDA_KERNEL_NODE_PARAMS kp = one_block_node(work, NULL);
  EXPECT_RC(cuGraphCreate(&g, 0), CUDA_SUCCESS);
  if (e) EXPECT_RC(cuGraphAddEventWaitNode(&first, g, NULL, 0, e), CUDA_SUCCESS);
  EXPECT_RC(cuGraphAddKernelNode(&k, g, first ? &first : NULL, first ? 1 : 0, &kp), CUDA_SUCCESS);
  EXPECT_RC(cuGraphInstantiate(&exec, g, 0), CUDA_SUCCESS);
  if (kept)
    *kept = g;
  else
    EXPECT_RC(cuGraphDestroy(g), CUDA_SUCCESS);
  if (wait) *wait = first;
  return exec;
}
/* right: a launch is ordered after the executable's previous launch, on
 * whichever stream */
static void graph_launch_after_launch(void) {
  CUgraphExec exec = graph_of(NULL, NULL, NULL);
  launch_graph(exec, stream());
  launch_graph(exec, s1);
  sync1();
  read_flag();
}
/* wrong: another executable's launch orders nothing (AC202) */
static void graph_other_executable(void) {
  CUgraphExec one = graph_of(NULL, NULL, NULL), two = graph_of(NULL, NULL, NULL);
  launch_graph(one, stream());
  launch_graph(two, s1);
  sync1();
  read_flag();
  EXPECT_RC(cu.cuCtxSynchronize(), CUDA_SUCCESS);
}
/* right: a launch completes after its event-wait node's event */
static void graph_wait_node(void) {
  CUstream t = stream();
  CUevent e = event();
  CUgraphExec exec = graph_of(e, NULL, NULL);
  launch0(t);
  record(e, t);
  launch_graph(exec, s1);
  sync1();
  read_flag();
}
/* wrong: the event was recorded before t's work (AC202) */
static void graph_wait_node_early(void) {
  CUstream t = stream();
  CUevent e = event();
  CUgraphExec exec = graph_of(e, NULL, NULL);
  record(e, t);
  launch0(t);
  launch_graph(exec, s1);
  sync1();
  read_flag();
  EXPECT_RC(cu.cuCtxSynchronize(), CUDA_SUCCESS);
}
/* The executable waits for `early` (recorded before t's work), then its wait
 * node is given `late` (recorded after it) or not. */
static void exec_wait_set(bool to_late) {
  CUstream t = stream();
  CUevent early = event(), late = event();
  CUgraphNode wait = NULL;
  CUgraph g = NULL;
  CUgraphExec exec = graph_of(late, &wait, &g);
  record(early, t);
  launch0(t);
  record(late, t);
  CUevent now = to_late ? late : early;
  EXPECT_RC(cuGraphExecEventWaitNodeSetEvent(exec, wait, now), CUDA_SUCCESS);
  EXPECT_RC(cuGraphDestroy(g), CUDA_SUCCESS);
  launch_graph(exec, s1);
  sync1();
  read_flag();
  EXPECT_RC(cu.cuCtxSynchronize(), CUDA_SUCCESS);
}
/* right: given an event recorded after t's work */
static void exec_wait_set_late(void) {
  exec_wait_set(true);
}
/* wrong: given one recorded before it (AC202) */
static void exec_wait_set_early(void) {
  exec_wait_set(false);
}

/* ---- stream-ordered allocation and free ---- */

/* t allocates and frees; s1 waits for t (joined) or not */
static void alloc_free_on_other(bool joined) {
  CUstream t = stream();
  CUevent e = event();
  CUdeviceptr p;
  EXPECT_RC(cuMemAllocAsync(&p, BYTES, t), CUDA_SUCCESS);
  EXPECT_RC(cuMemFreeAsync(p, t), CUDA_SUCCESS);
  record(e, t);
  if (joined) wait_event(s1, e);
  sync1();
  read_flag();
  EXPECT_RC(cu.cuCtxSynchronize(), CUDA_SUCCESS);
}
/* right: work of its stream, ordered like any other */
static void alloc_free_joined(void) {
  alloc_free_on_other(true);
}
/* wrong: the allocator's own dependencies are not the program's (AC202) */
static void alloc_free_unjoined(void) {
  alloc_free_on_other(false);
}
/* right: captured, they are graph nodes and do not run */
static void alloc_free_captured(void) {
  CUstream on = stream();
  CUgraph graph = NULL;
  CUdeviceptr p;
  EXPECT_RC(cu.cuStreamBeginCapture(on, CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_SUCCESS);
  EXPECT_RC(cuMemAllocAsync(&p, BYTES, on), CUDA_SUCCESS);
  EXPECT_RC(cuMemFreeAsync(p, on), CUDA_SUCCESS);
  EXPECT_RC(cu.cuStreamEndCapture(on, &graph), CUDA_SUCCESS);
  read_flag();
  EXPECT_RC(cuGraphDestroy(graph), CUDA_SUCCESS);
}

/* ---- host functions ---- */

/* The host function reads the flag once the program has enqueued what the
 * case enqueues after it (a host function may wait for the host, not for
 * work the driver orders after it). */
static int enqueued;
static void read_once_enqueued(void *arg) {
  (void)arg;
  for (int i = 0; i < 10000 && !__atomic_load_n(&enqueued, __ATOMIC_ACQUIRE); i++)
    usleep(1000);
  read_flag();
}
/* A host function on s1, and work on t that is ordered behind it or not. */
static void host_fn_and_work(bool gated) {
  CUstream t = stream();
  CUevent e = event();
  EXPECT_RC(cu.cuLaunchHostFunc(s1, read_once_enqueued, NULL), CUDA_SUCCESS);
  record(e, s1);
  if (gated) wait_event(t, e);
  launch0(t);
  __atomic_store_n(&enqueued, 1, __ATOMIC_RELEASE);
  sync1();
  EXPECT_RC(cu.cuStreamSynchronize(t), CUDA_SUCCESS);
}
/* right: work ordered behind a host function does not make its stream active
 * before the function ran */
static void host_fn_gates_work(void) {
  host_fn_and_work(true);
}
/* wrong: t's work may run meanwhile (AC202) */
static void host_fn_beside_work(void) {
  host_fn_and_work(false);
}
static void read_now(void *arg) {
  (void)arg;
  read_flag();
}
/* A host function on s1 after s1 waited for t's first kernel (and t's second
 * one, second: after the record). */
static void host_fn_after_join(bool second) {
  CUstream t = stream();
  CUevent e = event();
  launch0(t);
  record(e, t);
  if (second) launch0(t);
  wait_event(s1, e);
  EXPECT_RC(cu.cuLaunchHostFunc(s1, read_now, NULL), CUDA_SUCCESS);
  sync1();
  EXPECT_RC(cu.cuStreamSynchronize(t), CUDA_SUCCESS);
}
/* right: its start synchronises the streams joined before it */
static void host_fn_start_joins(void) {
  host_fn_after_join(false);
}
/* wrong: t's work after the record is not joined (AC202) */
static void host_fn_start_partial(void) {
  host_fn_after_join(true);
}

/* ---- stream memory operations ---- */

/* t writes the word, s1 waits for it (and for an event of t, evented). */
static void value_wait(bool evented) {
  CUstream t = stream();
  CUevent e = event();
  EXPECT_RC(cuMemsetD32(device, 0, 1), CUDA_SUCCESS);
  launch0(t);
  EXPECT_RC(cuStreamWriteValue32(t, device, 1, CU_STREAM_WRITE_VALUE_DEFAULT), CUDA_SUCCESS);
  record(e, t);
  EXPECT_RC(cuStreamWaitValue32(s1, device, 1, CU_STREAM_WAIT_VALUE_EQ), CUDA_SUCCESS);
  if (evented) wait_event(s1, e);
  sync1();
  read_flag();
  EXPECT_RC(cu.cuCtxSynchronize(), CUDA_SUCCESS);
}
/* right: the order is expressed with an event too, as the driver requires */
static void value_wait_and_event(void) {
  value_wait(true);
}
/* wrong: an order the driver does not see (AC202) */
static void value_wait_alone(void) {
  value_wait(false);
}

/* Another thread frees the memory while its attach is in the driver
 * (FAKECUDA_ATTACH_US holds it there), then makes a host-attached allocation
 * the model may keep in the freed one's record: the attach, recorded when the
 * driver returns, must not land on that one, which the CPU may touch while
 * the stream works. */
static CUcontext raced_ctx;
static CUdeviceptr raced, raced_after;
static void *free_while_attaching(void *arg) {
  (void)arg;
  EXPECT_RC(cu.cuCtxSetCurrent(raced_ctx), CUDA_SUCCESS);
  usleep(100000); /* the attach is in the driver */
  EXPECT_RC(cu.cuMemFree(raced), CUDA_SUCCESS);
  EXPECT_RC(cu.cuMemAllocManaged(&raced_after, 4096, CU_MEM_ATTACH_HOST), CUDA_SUCCESS);
  return NULL;
}
static void attach_raced_by_free(void) {
  pthread_t other;
  EXPECT_RC(cu.cuCtxGetCurrent(&raced_ctx), CUDA_SUCCESS);
  EXPECT_RC(cu.cuMemAllocManaged(&raced, 256, CU_MEM_ATTACH_GLOBAL), CUDA_SUCCESS);
  pthread_create(&other, NULL, free_while_attaching, NULL);
  EXPECT_RC(cu.cuStreamAttachMemAsync(s1, raced, 0, CU_MEM_ATTACH_SINGLE), CUDA_SUCCESS);
  pthread_join(other, NULL);
  launch0(s1);
  *(volatile int *)raced_after = 1;
  EXPECT_RC(cu.cuStreamSynchronize(s1), CUDA_SUCCESS);
  EXPECT_RC(cu.cuMemFree(raced_after), CUDA_SUCCESS);
}

/* An attach the driver refuses although no rule foresees it (the stand-in's
 * FAKECUDA_ATTACH_REFUSE=N refuses the Nth, as a driver out of resources
 * may any call) leaves the model as it was. Refused, the flag stays GLOBAL
 * and the read while another stream works is AC202; taken, it is attached
 * to idle s1 and the read is right. */
static CUresult attach_answer(int nth) {
  const char *e = getenv("FAKECUDA_ATTACH_REFUSE");
  return e && atoi(e) == nth ? CUDA_ERROR_OUT_OF_MEMORY : CUDA_SUCCESS;
}
static void attach_refused(void) {
  CUstream other = stream();
  EXPECT_RC(cu.cuStreamAttachMemAsync(s1, flag, 0, CU_MEM_ATTACH_SINGLE), attach_answer(1));
  sync1();
  launch0(other);
  read_flag();
  EXPECT_RC(cu.cuStreamSynchronize(other), CUDA_SUCCESS);
}
/* The refused attach (the second) would replace one not yet seen complete:
 * that one stays, and the synchronisation after settles it. Refused:
 * attached to idle s1, right; taken: GLOBAL again, AC202. */
static void attach_refused_keeps_earlier(void) {
  CUstream other = stream();
  EXPECT_RC(cu.cuStreamAttachMemAsync(s1, flag, 0, CU_MEM_ATTACH_SINGLE), attach_answer(1));
  EXPECT_RC(cu.cuStreamAttachMemAsync(s1, flag, 0, CU_MEM_ATTACH_GLOBAL), attach_answer(2));
  sync1();
  launch0(other);
  read_flag();
  EXPECT_RC(cu.cuStreamSynchronize(other), CUDA_SUCCESS);
}

static const struct scenario_case cases[] = {
    {"sample_direct", sample_direct},
    {"sample_captured", sample_captured},
    {"sample_explicit", sample_explicit},
    {"sample_all", sample_all},
    {"sample_direct_read_early", sample_direct_read_early},
    {"sample_captured_read_early", sample_captured_read_early},
    {"sample_explicit_read_early", sample_explicit_read_early},
    {"sample_direct_unjoined", sample_direct_unjoined},
    {"sample_captured_unjoined", sample_captured_unjoined},
    {"event_destroyed_after_wait", event_destroyed_after_wait},
    {"event_rerecorded_after_wait", event_rerecorded_after_wait},
    {"destroyed_stream_joined", destroyed_stream_joined},
    {"destroyed_stream_unjoined", destroyed_stream_unjoined},
    {"capture_fork_not_run", capture_fork_not_run},
    {"capture_fork_then_work", capture_fork_then_work},
    {"graph_launch_after_launch", graph_launch_after_launch},
    {"graph_other_executable", graph_other_executable},
    {"graph_wait_node", graph_wait_node},
    {"graph_wait_node_early", graph_wait_node_early},
    {"exec_wait_set_late", exec_wait_set_late},
    {"exec_wait_set_early", exec_wait_set_early},
    {"alloc_free_joined", alloc_free_joined},
    {"alloc_free_unjoined", alloc_free_unjoined},
    {"alloc_free_captured", alloc_free_captured},
    {"host_fn_gates_work", host_fn_gates_work},
    {"host_fn_beside_work", host_fn_beside_work},
    {"host_fn_start_joins", host_fn_start_joins},
    {"host_fn_start_partial", host_fn_start_partial},
    {"value_wait_and_event", value_wait_and_event},
    {"value_wait_alone", value_wait_alone},
    {"attach_raced_by_free", attach_raced_by_free},
    {"attach_refused", attach_refused},
    {"attach_refused_keeps_earlier", attach_refused_keeps_earlier},
};

int main(int argc, char **argv) {
  const struct scenario_case *c = CASE_FROM_ARGS(cases, argc, argv);
  if (!c) return 2;
  CUmodule mod;
  start_cuda("link");
  EXPECT_RC(cu.cuModuleLoadData(&mod, ptx), CUDA_SUCCESS);
  EXPECT_RC(cu.cuModuleGetFunction(&square, mod, "square"), CUDA_SUCCESS);
  EXPECT_RC(cu.cuModuleGetFunction(&negate, mod, "negate"), CUDA_SUCCESS);
  EXPECT_RC(cu.cuModuleGetFunction(&work, mod, "work"), CUDA_SUCCESS);
  EXPECT_RC(cu.cuMemAllocManaged(&flag, 4096, CU_MEM_ATTACH_GLOBAL), CUDA_SUCCESS);
  EXPECT_RC(cu.cuMemAlloc(&device, 4096), CUDA_SUCCESS);
  s1 = stream();
  if (failures) return finish();
  c->run();
  return finish();
}
