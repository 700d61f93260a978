/* graph_args.c - what an executable graph gives the GPU, judged at each launch.
 *
 * When a graph is instantiated its nodes are read (graph_read.c), child
 * graphs' too: every
 * argument word of a kernel node that is managed memory then, the kernel's
 * module's __managed__ variables, and the operands of memcpy and memset
 * nodes. They are kept with the executable, node by node, and judged against
 * the stream of each cuGraphLaunch as a launch's arguments and a copy's
 * operands are (AC301, AC302). Memory allocated after instantiation and given
 * only through a node's parameters is thereby missed.
 *
 * An executable's parameters change after instantiation through
 * cuGraphExec*NodeSetParams, cuGraphExecNodeSetParams and cuGraphExecUpdate,
 * and what is kept changes with them: a node's uses are replaced by what its
 * new parameters give, a child graph node's subtree by its new graph's, and an
 * update's whole executable by the new graph's.
 *
 * Nodes are kept depth first, each child graph node followed by its graph's
 * nodes, and named by the node of the graph the executable was instantiated
 * from. An update pairs the new graph's nodes with the executable's in that
 * order when the two have the same shape (the driver takes only topologically
 * identical graphs), so a node of either graph names the same node after it;
 * where the shapes differ the new graph's nodes name them. A node the shim
 * never read gets its new uses added, never replaced.
 *
 * An event-record node records its event at each launch. The model orders a
 * launch as one operation of its stream, so the record covers the launch
 * only when every node of the top-level graph that does work comes before
 * the record node (its dependencies, followed back: cuGraphGetEdges, 12.3
 * on); any other record - in the middle of the graph, in a child graph, or
 * where the edges cannot be read - covers nothing, and synchronising on its
 * event tells the host nothing: a finding may be made up there, none hidden.
 * What the driver answers here: docs/driver-facts.md, "Graph edges and
 * event-record nodes".
 *
 * A launch is ordered after the executable's previous launch, whichever
 * stream that was on, and completes after the events its event-wait nodes
 * wait for, child graphs' included (cuda.h: cuGraphLaunch, cuGraphAddEventWaitNode):
 * the stream's later work waits for both - after the launch's own records,
 * which a wait node need not precede, so they are told as covering less.
 * A wait node waits for what its event covers when the graph is launched.
 */
#include <stdio.h>
#include <stdlib.h>

#include "graph_args_internal.h"
#include "grow.h"

static struct graph_exec *execs; /* under ac_model_lock */

void ac_graph_exec_free(struct graph_exec *g) {
  if (!g) return;
  ac_clock_free(&g->last_launch);
  free(g->nodes);
  free(g->uses);
  free(g);
}

/* ---- the executables: model lock held ---- */

static struct graph_exec *find_exec(uintptr_t handle) {
  struct graph_exec *g;
  HASH_FIND(hh, execs, &handle, sizeof handle, g);
  return g;
}

/* g stands for its handle from now on; an update keeps its launches' order. */
static void replace_exec(struct graph_exec *g) {
  struct graph_exec *old = find_exec(g->handle);
  if (old) {
    HASH_DEL(execs, old);
    struct ac_clock kept = g->last_launch;
    g->last_launch = old->last_launch;
    old->last_launch = kept;
  }
  ac_graph_exec_free(old);
  HASH_ADD(hh, execs, handle, sizeof g->handle, g);
}

/* The index of the node `node` names, or SIZE_MAX. */
static size_t node_index(const struct graph_exec *g, uintptr_t node) {
  for (size_t i = 0; node && i < g->node_count; i++)
    if (g->nodes[i].key == node || g->nodes[i].alias == node) return i;
  return SIZE_MAX;
}

static bool lies_within(const struct graph_exec *g, size_t j, size_t i) {
  for (size_t w = g->nodes[j].within; w; w = g->nodes[w - 1].within)
    if (w - 1 == i) return true;
  return false;
}

/* How many nodes follow node i inside it (a child graph node's graph). */
static size_t subtree(const struct graph_exec *g, size_t i) {
  size_t end = i + 1;
  while (end < g->node_count && lies_within(g, end, i))
    end++;
  return end - i - 1;
}

static bool push_node(struct graph_exec *g, struct exec_node n) {
  if (!AC_GROW(g->nodes, g->node_count, g->node_cap, 8)) return false;
  g->nodes[g->node_count++] = n;
  return true;
}

static bool push_use(struct graph_exec *g, const struct graph_use *u, size_t node) {
  if (!AC_GROW(g->uses, g->count, g->cap, 8)) return false;
  g->uses[g->count] = *u;
  g->uses[g->count++].node = node;
  return true;
}

/* g's nodes [from, from + removed) and their uses replaced by part's, whose
 * top nodes lie within `within`; false (g as it was) when memory ran out. */
static bool splice(struct graph_exec *g, size_t from, size_t removed, const struct graph_exec *part,
                   size_t within) {
  struct graph_exec out = {0};
  size_t added = part->node_count, end = from + removed;
  bool ok = true;
  for (size_t i = 0; ok && i < g->node_count + added - removed; i++) {
    struct exec_node n;
    if (i < from) {
      n = g->nodes[i];
    } else if (i < from + added) {
      n = part->nodes[i - from];
      n.within = n.within ? n.within + from : within;
    } else {
      n = g->nodes[i - added + removed];
      if (n.within > end) n.within = n.within - removed + added;
    }
    ok = push_node(&out, n);
  }
  for (size_t i = 0; ok && i < g->count; i++) {
    size_t node = g->uses[i].node;
    if (node < from)
      ok = push_use(&out, &g->uses[i], node);
    else if (node >= end)
      ok = push_use(&out, &g->uses[i], node - removed + added);
  }
  for (size_t i = 0; ok && i < part->count; i++)
    ok = push_use(&out, &part->uses[i], part->uses[i].node + from);
  if (ok) {
    free(g->nodes), free(g->uses);
    g->nodes = out.nodes, g->node_count = out.node_count, g->node_cap = out.node_cap;
    g->uses = out.uses, g->count = out.count, g->cap = out.cap;
  } else {
    free(out.nodes), free(out.uses);
  }
  return ok;
}

/* The node `node` of exec now has the parameters part was read from: one
 * node's, or (child) a child graph node's graph. */
static void node_changed(CUgraphExec exec, CUgraphNode node, struct graph_exec *part, bool child) {
  ac_model_enter();
  struct graph_exec *g = find_exec((uintptr_t)exec);
  size_t i = g ? node_index(g, (uintptr_t)node) : SIZE_MAX;
  if (i == SIZE_MAX) {
    if (g) splice(g, g->node_count, 0, part, 0); /* never read: added, not replaced */
  } else if (child) {
    splice(g, i + 1, subtree(g, i), part, i + 1);
  } else {
    struct exec_node same = g->nodes[i]; /* the same node, named as before */
    part->nodes[0] =
        (struct exec_node){same.key, same.alias, 0, same.type, same.event, same.covers_all};
    splice(g, i, 1, part, same.within);
  }
  ac_model_leave();
  ac_graph_exec_free(part);
}

/* A part holding one node of type, read by the caller. */
static struct graph_exec *one_node(CUgraphNode node, CUgraphNodeType type) {
  struct graph_exec *part = calloc(1, sizeof *part);
  if (part && ac_graph_add_node(part, (uintptr_t)node, 0, type) == SIZE_MAX)
    ac_graph_exec_free(part), part = NULL;
  return part;
}

/* ---- what the wrappers tell ---- */

static struct graph_exec *read_executable(CUgraphExec exec, CUgraph graph) {
  struct graph_exec *g = calloc(1, sizeof *g);
  if (!g) return NULL;
  g->handle = (uintptr_t)exec;
  ac_graph_read(g, graph, 0, 0);
  return g;
}

void ac_on_graph_instantiated(CUgraphExec exec, CUgraph graph) {
  struct graph_exec *g = read_executable(exec, graph);
  if (!g) return;
  ac_model_enter();
  replace_exec(g);
  ac_model_leave();
}

/* Whether two executables have the same nodes in the same order (what the
 * driver's update pairs). */
static bool same_shape(const struct graph_exec *a, const struct graph_exec *b) {
  if (a->node_count != b->node_count) return false;
  for (size_t i = 0; i < a->node_count; i++)
    if (a->nodes[i].type != b->nodes[i].type || a->nodes[i].within != b->nodes[i].within)
      return false;
  return true;
}

void ac_on_graph_updated(CUgraphExec exec, CUgraph graph) {
  struct graph_exec *g = read_executable(exec, graph);
  if (!g) return;
  ac_model_enter();
  struct graph_exec *old = find_exec(g->handle);
  bool paired = old && same_shape(old, g);
  for (size_t i = 0; paired && i < g->node_count; i++) {
    g->nodes[i].alias = g->nodes[i].key;
    g->nodes[i].key = old->nodes[i].key;
  }
  replace_exec(g);
  ac_model_leave();
}

void ac_on_graph_kernel_node_set(CUgraphExec exec, CUgraphNode node, CUfunction func, void **params,
                                 void **extra) {
  struct graph_exec *part = one_node(node, CU_GRAPH_NODE_TYPE_KERNEL);
  if (!part) return;
  struct kernel_args k = {func, params, extra};
  ac_graph_note_kernel(part, 0, &k);
  node_changed(exec, node, part, false);
}

void ac_on_graph_copy_node_set(CUgraphExec exec, CUgraphNode node, const CUDA_MEMCPY3D *copy) {
  struct graph_exec *part = one_node(node, CU_GRAPH_NODE_TYPE_MEMCPY);
  if (!part) return;
  if (copy) ac_graph_note_copy_3d(part, 0, copy);
  node_changed(exec, node, part, false);
}

void ac_on_graph_memset_node_set(CUgraphExec exec, CUgraphNode node, CUdeviceptr dst) {
  struct graph_exec *part = one_node(node, CU_GRAPH_NODE_TYPE_MEMSET);
  if (!part) return;
  ac_graph_note_copy(part, 0, AC_WORK_SET, dst, 0);
  node_changed(exec, node, part, false);
}

void ac_on_graph_child_node_set(CUgraphExec exec, CUgraphNode node, CUgraph child) {
  struct graph_exec *part = calloc(1, sizeof *part);
  if (!part) return;
  ac_graph_read(part, child, 0, 1);
  node_changed(exec, node, part, true);
}

/* An event-record or event-wait node of exec records or waits for `event`
 * from now on; where it lies in the graph, and so what a record covers,
 * stays. */
void ac_on_graph_event_node_set(CUgraphExec exec, CUgraphNode node, CUevent event) {
  ac_model_enter();
  struct graph_exec *g = find_exec((uintptr_t)exec);
  size_t i = g ? node_index(g, (uintptr_t)node) : SIZE_MAX;
  if (i != SIZE_MAX && (g->nodes[i].type == CU_GRAPH_NODE_TYPE_EVENT_RECORD ||
                        g->nodes[i].type == CU_GRAPH_NODE_TYPE_WAIT_EVENT))
    g->nodes[i].event = (uintptr_t)event;
  ac_model_leave();
}

void ac_on_graph_node_params_set(CUgraphExec exec, CUgraphNode node, const CUgraphNodeParams *p) {
  switch (p ? p->type : CU_GRAPH_NODE_TYPE_EMPTY) {
  case CU_GRAPH_NODE_TYPE_KERNEL: {
    const CUDA_KERNEL_NODE_PARAMS_v3 *k = &p->kernel;
    ac_on_graph_kernel_node_set(exec, node, k->func ? k->func : (CUfunction)k->kern,
                                k->kernelParams, k->extra);
    break;
  }
  case CU_GRAPH_NODE_TYPE_MEMCPY:
    ac_on_graph_copy_node_set(exec, node, &p->memcpy.copyParams);
    break;
  case CU_GRAPH_NODE_TYPE_MEMSET:
    ac_on_graph_memset_node_set(exec, node, p->memset.dst);
    break;
  case CU_GRAPH_NODE_TYPE_GRAPH:
    ac_on_graph_child_node_set(exec, node, p->graph.graph);
    break;
  case CU_GRAPH_NODE_TYPE_EVENT_RECORD:
    ac_on_graph_event_node_set(exec, node, p->eventRecord.event);
    break;
  case CU_GRAPH_NODE_TYPE_WAIT_EVENT:
    ac_on_graph_event_node_set(exec, node, p->eventWait.event);
    break;
  default: /* a node that gives the GPU no memory the shim follows */
    break;
  }
}

void ac_on_graph_exec_destroyed(CUgraphExec exec) {
  ac_model_enter();
  struct graph_exec *g = find_exec((uintptr_t)exec);
  if (g) HASH_DEL(execs, g);
  ac_model_leave();
  ac_graph_exec_free(g);
}

/* Model lock held, the launch enqueued on s: each event-record node's event
 * recorded, over the launch where it follows the whole graph, else over
 * nothing. */
static void record_graph_events(const struct graph_exec *g, struct ac_stream *s) {
  AC_ASSERT_MODEL_HELD();
  for (size_t i = 0; g && s && !s->capturing && i < g->node_count; i++)
    if (g->nodes[i].type == CU_GRAPH_NODE_TYPE_EVENT_RECORD && g->nodes[i].event)
      ac_event_recorded_over_locked((CUevent)g->nodes[i].event, &s, g->nodes[i].covers_all);
}

/* Model lock held, the launch enqueued on s as operation seq: s's later work
 * waits for the executable's previous launch and its wait nodes' events, and
 * the next launch waits for this one. */
static void order_launch(struct graph_exec *g, struct ac_stream *s, uint64_t seq) {
  AC_ASSERT_MODEL_HELD();
  if (!g || !s || s->capturing) return;
  ac_order_stream_waits_clock(ac_model, s, &g->last_launch);
  for (size_t i = 0; i < g->node_count; i++)
    if (g->nodes[i].type == CU_GRAPH_NODE_TYPE_WAIT_EVENT && g->nodes[i].event)
      ac_order_stream_waits_recorded(ac_model, s, g->nodes[i].event);
  ac_order_snapshot_before(ac_model, s, seq + 1, &g->last_launch);
}

/* Kernels' uses first: a kernel may not be given HOST-attached memory that a
 * copy may (AC302), and each allocation is judged once per launch. */
/* Every use of g's nodes, kernels first, judged as work of l's stream. */
static void judge_uses(struct ac_gpu_work *l, const struct graph_exec *g, bool kernels_host_legal) {
  for (int copies = 0; g && copies < 2; copies++)
    for (size_t i = 0; i < g->count; i++) {
      const struct graph_use *u = &g->uses[i];
      bool copy = u->operation != AC_WORK_KERNEL;
      if (copy != (copies == 1)) continue;
      l->host_is_legal = copy || kernels_host_legal;
      l->operation = u->operation;
      l->dst = u->dst;
      l->src = u->src;
      ac_work_judge_address(l, u->addr, u->kernel[0] ? u->kernel : NULL, u->param, u->offset,
                            u->via);
    }
}

void ac_on_graph_launch(const char *api, CUgraphExec exec, CUstream stream, bool per_thread) {
  struct ac_gpu_work l;
  struct ac_op_origin_slot slot;
  bool kernels_host_legal = ac_concurrent_semantics();
  l.layout = NULL;
  memset(&l.dims, 0, sizeof l.dims);
  bool judged = ac_work_begin(&l, api, stream, per_thread, kernels_host_legal, &slot);
  l.graph = true;
  struct graph_exec *g = find_exec((uintptr_t)exec);
  record_graph_events(g, l.stream);
  order_launch(g, l.stream, slot.seq);
  if (judged) judge_uses(&l, g, kernels_host_legal);
  ac_work_finish(&l, &slot);
}

void ac_graph_launch_ahead(CUgraphExec exec, CUstream stream, bool per_thread) {
  if (!ac_guard_ahead_armed()) return;
  struct ac_guard_ahead b = {0};
  const struct graph_exec *g =
      ac_ahead_begin(stream, per_thread) ? find_exec((uintptr_t)exec) : NULL;
  for (size_t i = 0; g && i < g->count; i++) {
    const struct graph_use *u = &g->uses[i];
    bool written = u->operation == AC_WORK_KERNEL || u->addr == u->dst; /* not a copy's source */
    struct ac_alloc *a = written && ac_guard_ahead_maybe(u->addr, u->addr + 1)
                             ? ac_model_find_alloc(ac_model, u->addr)
                             : NULL;
    if (a) ac_guard_ahead_note_locked(&b, a, 0, 0);
  }
  ac_ahead_end(&b, stream, per_thread);
}

bool ac_graph_launch_probe(struct ac_gpu_work *l, CUgraphExec exec, CUstream stream,
                           bool per_thread) {
  bool kernels_host_legal = ac_concurrent_semantics();
  l->layout = NULL;
  memset(&l->dims, 0, sizeof l->dims);
  if (ac_work_probe_begin(l, stream, per_thread)) {
    l->graph = true;
    judge_uses(l, find_exec((uintptr_t)exec), kernels_host_legal);
  }
  return ac_work_probe_end(l);
}
