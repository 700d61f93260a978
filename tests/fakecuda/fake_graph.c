/* fake_graph.c - graphs: built node by node or captured from a stream,
 * instantiated, changed after instantiation and launched (nothing runs).
 *
 * A node keeps what it was given - a kernel's arguments copied by the
 * function's layout, a copy's or a set's parameters, a child graph cloned (as
 * cuGraphAddChildGraphNode clones it) - and the getters hand it back. A copy
 * or set captured from a stream is the node cuGraphAddMemcpyNode or
 * cuGraphAddMemsetNode would make: a 1D copy is one row of a 3D copy, each
 * side typed as the call named it (UNIFIED for cuMemcpyAsync's pointers).
 *
 * Nodes keep their dependencies (cuGraphGetEdges gives them back); a captured
 * node depends on the one captured before it in its stream, and on what the
 * events its stream waited for stood for. Event-record and event-wait nodes
 * keep their event; memory allocation nodes give device memory at once
 * (nothing runs at a launch here, so it is never freed).
 *
 * An executable graph remembers the nodes it was instantiated from, child
 * graphs' included, depth first, and their types: its node setters refuse a
 * node of another graph or of another type, and an update needs a graph of
 * the same nodes in the same order. Its parameters themselves are not kept:
 * nothing reads them back. As on the real driver, the executable outlives
 * its graph (launched after cuGraphDestroy, it runs), but the nodes do not:
 * once the graph it came from is destroyed, a node setter given one of them
 * fails with CUDA_ERROR_INVALID_VALUE (measured, docs/driver-facts.md). So
 * the executable keeps what a launch needs of its own, and the graph's
 * number, which says whether its nodes are still alive.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "fake.h"

#define GRAPH_NODES 32
#define NODE_PARAMS 16
#define EXEC_NODES 256

struct node {
  CUgraphNodeType type;
  CUfunction func;
  void *params[NODE_PARAMS];
  unsigned char storage[NODE_PARAMS][64];
  CUDA_MEMCPY3D copy;
  CUDA_MEMSET_NODE_PARAMS set;
  struct fake_graph *child;
  CUevent event;      /* an event-record or event-wait node's event */
  bool names_managed; /* a memory-operation node on managed memory: its launch fails */
  size_t dep_count;   /* the nodes of its graph it depends on, by index */
  size_t deps[GRAPH_NODES];
};

struct fake_graph {
  unsigned long serial; /* never reused: an executable's way to its graph */
  size_t count;
  struct node nodes[GRAPH_NODES];
};

/* The nodes of a graph, depth first; subtree: how many follow inside a child. */
struct flat {
  unsigned long graph; /* the serial of the graph it was instantiated from */
  bool names_managed;  /* a memory-operation node on managed memory: its launch fails */
  size_t count;
  const struct node *node[EXEC_NODES];
  CUgraphNodeType type[EXEC_NODES];
  size_t subtree[EXEC_NODES];
};

/* The serials of the graphs alive (children included), under live_lock. */
static pthread_mutex_t live_lock = PTHREAD_MUTEX_INITIALIZER;
static unsigned long next_serial = 1, *live;
static size_t live_count, live_cap;

static void live_add(unsigned long serial) {
  pthread_mutex_lock(&live_lock);
  if (live_count == live_cap) {
    size_t cap = live_cap ? 2 * live_cap : 64;
    unsigned long *grown = realloc(live, cap * sizeof *live);
    if (grown) live = grown, live_cap = cap;
  }
  if (live_count < live_cap) live[live_count++] = serial;
  pthread_mutex_unlock(&live_lock);
}

static void live_remove(unsigned long serial) {
  pthread_mutex_lock(&live_lock);
  for (size_t i = 0; i < live_count; i++)
    if (live[i] == serial) {
      live[i] = live[--live_count];
      break;
    }
  pthread_mutex_unlock(&live_lock);
}

static bool is_live(unsigned long serial) {
  bool found = false;
  pthread_mutex_lock(&live_lock);
  for (size_t i = 0; i < live_count && !found; i++)
    found = live[i] == serial;
  pthread_mutex_unlock(&live_lock);
  return found;
}

static unsigned long take_serial(void) {
  return __atomic_fetch_add(&next_serial, 1, __ATOMIC_RELAXED);
}

struct fake_graph *fake_graph_new(void) {
  struct fake_graph *g = calloc(1, sizeof(struct fake_graph));
  if (g) live_add(g->serial = take_serial());
  return g;
}

void fake_graph_free(struct fake_graph *g) {
  for (size_t i = 0; g && i < g->count; i++)
    fake_graph_free(g->nodes[i].child);
  if (g) live_remove(g->serial);
  free(g);
}

static struct fake_graph *clone(const struct fake_graph *g) {
  struct fake_graph *c = fake_graph_new();
  if (!c) return NULL;
  unsigned long serial = c->serial;
  *c = *g;
  c->serial = serial;
  for (size_t i = 0; i < c->count; i++) {
    struct node *n = &c->nodes[i];
    for (size_t p = 0; p < NODE_PARAMS; p++)
      if (n->params[p]) n->params[p] = n->storage[p];
    if (n->child && !(n->child = clone(n->child))) {
      c->count = i; /* free what was cloned so far */
      fake_graph_free(c);
      return NULL;
    }
  }
  return c;
}

static struct node *add_node(struct fake_graph *g, CUgraphNodeType type) {
  if (!g || g->count == GRAPH_NODES) return NULL;
  struct node *n = &g->nodes[g->count++];
  memset(n, 0, sizeof *n);
  n->type = type;
  return n;
}

static void keep_arguments(struct node *n, CUfunction f, void **params, size_t count,
                           const size_t *sizes) {
  n->func = f;
  for (size_t i = 0; params && i < count && i < NODE_PARAMS; i++) {
    memcpy(n->storage[i], params[i], sizes[i] < 64 ? sizes[i] : 64);
    n->params[i] = n->storage[i];
  }
}

/* ---- capture: work on a capturing stream is nodes ---- */

/* A new node of the graph h captures into, after the nodes the stream's next
 * node depends on (its last one; what an event it waited for stood for);
 * *capturing says whether it captures. */
static struct node *captured_node(CUstream h, bool pt, CUgraphNodeType type, bool *capturing) {
  struct fake_capture_tail *tail;
  pthread_mutex_lock(&fake_lock);
  struct fake_graph *g = fake_capture_graph_locked(h, pt, &tail);
  struct node *n = add_node(g, type);
  if (n) {
    n->dep_count = tail->count;
    memcpy(n->deps, tail->node, tail->count * sizeof tail->node[0]);
    tail->count = 1;
    tail->node[0] = g->count - 1;
  }
  pthread_mutex_unlock(&fake_lock);
  *capturing = g != NULL;
  return n;
}

bool fake_capture_kernel(CUstream h, bool pt, CUfunction f, void **params, size_t count,
                         const size_t *sizes) {
  bool capturing;
  struct node *n = captured_node(h, pt, CU_GRAPH_NODE_TYPE_KERNEL, &capturing);
  if (n) keep_arguments(n, f, params, count, sizes);
  return capturing;
}

bool fake_capture_copy(CUstream h, bool pt, const CUDA_MEMCPY3D *copy) {
  bool capturing;
  struct node *n = captured_node(h, pt, CU_GRAPH_NODE_TYPE_MEMCPY, &capturing);
  if (n) n->copy = *copy;
  return capturing;
}

bool fake_capture_set(CUstream h, bool pt, const CUDA_MEMSET_NODE_PARAMS *set) {
  bool capturing;
  struct node *n = captured_node(h, pt, CU_GRAPH_NODE_TYPE_MEMSET, &capturing);
  if (n) n->set = *set;
  return capturing;
}

/* An event recorded with CU_EVENT_RECORD_EXTERNAL while capturing: an
 * event-record node (a plain record there only orders the capture). */
bool fake_capture_event(CUstream h, bool pt, CUevent event) {
  bool capturing;
  struct node *n = captured_node(h, pt, CU_GRAPH_NODE_TYPE_EVENT_RECORD, &capturing);
  if (n) n->event = event;
  return capturing;
}

/* A wait with CU_EVENT_WAIT_EXTERNAL while capturing: an event-wait node. */
bool fake_capture_event_wait(CUstream h, bool pt, CUevent event) {
  bool capturing;
  struct node *n = captured_node(h, pt, CU_GRAPH_NODE_TYPE_WAIT_EVENT, &capturing);
  if (n) n->event = event;
  return capturing;
}

bool fake_capture_plain(CUstream h, bool pt, CUgraphNodeType type) {
  bool capturing;
  captured_node(h, pt, type, &capturing);
  return capturing;
}

/* Marks node i and every node before it. */
static void mark_before(const struct fake_graph *g, size_t i, bool *before) {
  if (before[i]) return;
  before[i] = true;
  for (size_t d = 0; d < g->nodes[i].dep_count; d++)
    mark_before(g, g->nodes[i].deps[d], before);
}

bool fake_graph_joined(const struct fake_graph *g, const struct fake_capture_tail *tail) {
  bool before[GRAPH_NODES] = {false};
  for (size_t i = 0; i < tail->count; i++)
    mark_before(g, tail->node[i], before);
  for (size_t i = 0; i < g->count; i++)
    if (!before[i]) return false;
  return true;
}

/* ---- building and reading ---- */

FAKE_EXPORT CUresult cuGraphCreate(CUgraph *graph, unsigned int flags) {
  if (!graph || flags) return CUDA_ERROR_INVALID_VALUE;
  *graph = (CUgraph)fake_graph_new();
  return *graph ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}

FAKE_EXPORT CUresult cuGraphDestroy(CUgraph g) {
  fake_graph_free((struct fake_graph *)g);
  return CUDA_SUCCESS;
}

/* Where node lies in g, or -1 when it is not one of g's. */
static long index_in(const struct fake_graph *g, CUgraphNode node) {
  for (size_t i = 0; g && i < g->count; i++)
    if ((CUgraphNode)&g->nodes[i] == node) return (long)i;
  return -1;
}

/* A node of type added to graph after its n dependencies, returned through
 * out; NULL when a dependency is not a node of graph (CUDA_ERROR_INVALID_VALUE). */
static struct node *added(CUgraphNode *out, CUgraph graph, CUgraphNodeType type,
                          const CUgraphNode *deps, size_t n) {
  struct fake_graph *g = (struct fake_graph *)graph;
  size_t index[GRAPH_NODES];
  if (!out || n > GRAPH_NODES || (n && !deps)) return NULL;
  for (size_t i = 0; i < n; i++) {
    long at = index_in(g, deps[i]);
    if (at < 0) return NULL;
    index[i] = (size_t)at;
  }
  struct node *node = add_node(g, type);
  if (!node) return NULL;
  node->dep_count = n;
  memcpy(node->deps, index, n * sizeof index[0]);
  *out = (CUgraphNode)node;
  return node;
}

static bool set_valid(const CUDA_MEMSET_NODE_PARAMS *p) {
  return p && p->dst && (p->elementSize == 1 || p->elementSize == 2 || p->elementSize == 4) &&
         p->width && p->height && (p->height == 1 || p->pitch >= p->width * p->elementSize);
}

#define ADD_KERNEL_NODE(Name, Params)                                                              \
  FAKE_EXPORT CUresult Name(CUgraphNode *out, CUgraph graph, const CUgraphNode *deps, size_t n,    \
                            const Params *p) {                                                     \
    size_t count;                                                                                  \
    const size_t *sizes;                                                                           \
    if (!p || !fake_function_layout(p->func, &count, &sizes)) return CUDA_ERROR_INVALID_VALUE;     \
    struct node *node = added(out, graph, CU_GRAPH_NODE_TYPE_KERNEL, deps, n);                     \
    if (!node) return CUDA_ERROR_INVALID_VALUE;                                                    \
    keep_arguments(node, p->func, p->kernelParams, count, sizes);                                  \
    return CUDA_SUCCESS;                                                                           \
  }
ADD_KERNEL_NODE(cuGraphAddKernelNode_v2, CUDA_KERNEL_NODE_PARAMS_v2)
ADD_KERNEL_NODE(cuGraphAddKernelNode, CUDA_KERNEL_NODE_PARAMS_v1)

/* A side the driver refuses in a copy node: managed memory typed UNIFIED on a
 * device without concurrent managed access (cuGraphAddMemcpyNode's documentation). */
static bool unified_managed(CUmemorytype type, CUdeviceptr p) {
  if (type != CU_MEMORYTYPE_UNIFIED ||
      fake_device_attribute(CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS, fake_current_device()))
    return false;
  pthread_mutex_lock(&fake_lock);
  struct fake_alloc *a = fake_find_alloc(p);
  bool managed = a && a->kind == FAKE_MANAGED;
  pthread_mutex_unlock(&fake_lock);
  return managed;
}

static bool copy_valid(const CUDA_MEMCPY3D *c) {
  return c && c->WidthInBytes && !unified_managed(c->srcMemoryType, c->srcDevice) &&
         !unified_managed(c->dstMemoryType, c->dstDevice);
}

FAKE_EXPORT CUresult cuGraphAddMemcpyNode(CUgraphNode *out, CUgraph graph, const CUgraphNode *deps,
                                          size_t n, const CUDA_MEMCPY3D *copy, CUcontext ctx) {
  (void)ctx;
  if (!copy_valid(copy)) return CUDA_ERROR_INVALID_VALUE;
  struct node *node = added(out, graph, CU_GRAPH_NODE_TYPE_MEMCPY, deps, n);
  if (!node) return CUDA_ERROR_INVALID_VALUE;
  node->copy = *copy;
  return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult cuGraphAddMemsetNode(CUgraphNode *out, CUgraph graph, const CUgraphNode *deps,
                                          size_t n, const CUDA_MEMSET_NODE_PARAMS *set,
                                          CUcontext ctx) {
  (void)ctx;
  if (!set_valid(set)) return CUDA_ERROR_INVALID_VALUE;
  struct node *node = added(out, graph, CU_GRAPH_NODE_TYPE_MEMSET, deps, n);
  if (!node) return CUDA_ERROR_INVALID_VALUE;
  node->set = *set;
  return CUDA_SUCCESS;
}

/* A memory-operation node; launched, it is work of the launch's stream like
 * any node. One naming managed memory is accepted and instantiated, and the
 * launch answers CUDA_ERROR_INVALID_VALUE, as the real driver does
 * (docs/driver-facts.md). */
FAKE_EXPORT CUresult cuGraphAddBatchMemOpNode(CUgraphNode *out, CUgraph graph,
                                              const CUgraphNode *deps, size_t n,
                                              const CUDA_BATCH_MEM_OP_NODE_PARAMS *p) {
  if (!p || !p->count || !p->paramArray) return CUDA_ERROR_INVALID_VALUE;
  struct node *node = added(out, graph, CU_GRAPH_NODE_TYPE_BATCH_MEM_OP, deps, n);
  if (!node) return CUDA_ERROR_INVALID_VALUE;
  node->names_managed = fake_mem_ops_name_managed(p->count, p->paramArray);
  return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult cuGraphAddChildGraphNode(CUgraphNode *out, CUgraph graph,
                                              const CUgraphNode *deps, size_t n, CUgraph child) {
  if (!child) return CUDA_ERROR_INVALID_VALUE;
  struct fake_graph *copy = clone((struct fake_graph *)child);
  struct node *node = copy ? added(out, graph, CU_GRAPH_NODE_TYPE_GRAPH, deps, n) : NULL;
  if (!node) {
    fake_graph_free(copy);
    return CUDA_ERROR_INVALID_VALUE;
  }
  node->child = copy;
  return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult cuGraphAddEmptyNode(CUgraphNode *out, CUgraph graph, const CUgraphNode *deps,
                                         size_t n) {
  return added(out, graph, CU_GRAPH_NODE_TYPE_EMPTY, deps, n) ? CUDA_SUCCESS
                                                              : CUDA_ERROR_INVALID_VALUE;
}

/* An event-record or event-wait node (type) of event. */
static CUresult event_node(CUgraphNode *out, CUgraph graph, const CUgraphNode *deps, size_t n,
                           CUevent event, CUgraphNodeType type) {
  if (!event) return CUDA_ERROR_INVALID_VALUE;
  struct node *node = added(out, graph, type, deps, n);
  if (!node) return CUDA_ERROR_INVALID_VALUE;
  node->event = event;
  return CUDA_SUCCESS;
}
FAKE_EXPORT CUresult cuGraphAddEventRecordNode(CUgraphNode *out, CUgraph graph,
                                               const CUgraphNode *deps, size_t n, CUevent event) {
  return event_node(out, graph, deps, n, event, CU_GRAPH_NODE_TYPE_EVENT_RECORD);
}
FAKE_EXPORT CUresult cuGraphAddEventWaitNode(CUgraphNode *out, CUgraph graph,
                                             const CUgraphNode *deps, size_t n, CUevent event) {
  return event_node(out, graph, deps, n, event, CU_GRAPH_NODE_TYPE_WAIT_EVENT);
}

/* A memory allocation node: device memory from a device's pool, its address
 * handed back in p->dptr when the node is made (cuda.h). */
FAKE_EXPORT CUresult cuGraphAddMemAllocNode(CUgraphNode *out, CUgraph graph,
                                            const CUgraphNode *deps, size_t n,
                                            CUDA_MEM_ALLOC_NODE_PARAMS *p) {
  if (!p || !p->bytesize || p->poolProps.allocType != CU_MEM_ALLOCATION_TYPE_PINNED ||
      p->poolProps.location.type != CU_MEM_LOCATION_TYPE_DEVICE)
    return CUDA_ERROR_INVALID_VALUE;
  CUdeviceptr dptr;
  if (fake_alloc_device(&dptr, p->bytesize) != CUDA_SUCCESS) return CUDA_ERROR_OUT_OF_MEMORY;
  if (!added(out, graph, CU_GRAPH_NODE_TYPE_MEM_ALLOC, deps, n)) return CUDA_ERROR_INVALID_VALUE;
  p->dptr = dptr;
  return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult cuGraphAddMemFreeNode(CUgraphNode *out, CUgraph graph, const CUgraphNode *deps,
                                           size_t n, CUdeviceptr dptr) {
  if (!dptr) return CUDA_ERROR_INVALID_VALUE;
  return added(out, graph, CU_GRAPH_NODE_TYPE_MEM_FREE, deps, n) ? CUDA_SUCCESS
                                                                 : CUDA_ERROR_INVALID_VALUE;
}

/* The event of an event-record or event-wait node (type). */
static CUresult node_event(CUgraphNode node, CUevent *event, CUgraphNodeType type) {
  const struct node *n = (const struct node *)node;
  if (!n || n->type != type || !event) return CUDA_ERROR_INVALID_VALUE;
  *event = n->event;
  return CUDA_SUCCESS;
}
FAKE_EXPORT CUresult cuGraphEventRecordNodeGetEvent(CUgraphNode node, CUevent *event) {
  return node_event(node, event, CU_GRAPH_NODE_TYPE_EVENT_RECORD);
}
FAKE_EXPORT CUresult cuGraphEventWaitNodeGetEvent(CUgraphNode node, CUevent *event) {
  return node_event(node, event, CU_GRAPH_NODE_TYPE_WAIT_EVENT);
}

FAKE_EXPORT CUresult cuGraphEventRecordNodeSetEvent(CUgraphNode node, CUevent event) {
  struct node *n = (struct node *)node;
  if (!n || n->type != CU_GRAPH_NODE_TYPE_EVENT_RECORD || !event) return CUDA_ERROR_INVALID_VALUE;
  n->event = event;
  return CUDA_SUCCESS;
}

/* The graph's dependencies as pairs, from before to; with both NULL, how
 * many (the edge data, where asked for, all default). */
FAKE_EXPORT CUresult cuGraphGetEdges_v2(CUgraph hg, CUgraphNode *from, CUgraphNode *to,
                                        CUgraphEdgeData *data, size_t *count) {
  struct fake_graph *g = (struct fake_graph *)hg;
  if (!g || !count || (!from != !to)) return CUDA_ERROR_INVALID_VALUE;
  size_t total = 0;
  for (size_t i = 0; i < g->count; i++)
    for (size_t d = 0; d < g->nodes[i].dep_count; d++, total++) {
      if (!from || total >= *count) continue;
      from[total] = (CUgraphNode)&g->nodes[g->nodes[i].deps[d]];
      to[total] = (CUgraphNode)&g->nodes[i];
      if (data) memset(&data[total], 0, sizeof data[total]);
    }
  if (from)
    for (size_t e = total; e < *count; e++)
      from[e] = to[e] = NULL;
  *count = total;
  return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult cuGraphGetNodes(CUgraph hg, CUgraphNode *nodes, size_t *n) {
  struct fake_graph *g = (struct fake_graph *)hg;
  if (!g || !n) return CUDA_ERROR_INVALID_VALUE;
  if (nodes)
    for (size_t i = 0; i < *n && i < g->count; i++)
      nodes[i] = (CUgraphNode)&g->nodes[i];
  *n = g->count;
  return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult cuGraphNodeGetType(CUgraphNode node, CUgraphNodeType *type) {
  if (!node || !type) return CUDA_ERROR_INVALID_VALUE;
  *type = ((struct node *)node)->type;
  return CUDA_SUCCESS;
}

/* The node if it is one of type, else NULL. */
static const struct node *of_type(CUgraphNode node, CUgraphNodeType type) {
  const struct node *n = (const struct node *)node;
  return n && n->type == type ? n : NULL;
}

/* A kernel node's function and arguments, into either ABI's struct (the
 * CUDA 10 one is what drivers before 12.0 offer alone). */
#define KERNEL_NODE_PARAMS(Name, Params)                                                           \
  FAKE_EXPORT CUresult Name(CUgraphNode node, Params *p) {                                         \
    const struct node *n = of_type(node, CU_GRAPH_NODE_TYPE_KERNEL);                               \
    if (!n || !p) return CUDA_ERROR_INVALID_VALUE;                                                 \
    memset(p, 0, sizeof *p);                                                                       \
    p->func = n->func;                                                                             \
    p->kernelParams = (void **)n->params;                                                          \
    return CUDA_SUCCESS;                                                                           \
  }
KERNEL_NODE_PARAMS(cuGraphKernelNodeGetParams_v2, CUDA_KERNEL_NODE_PARAMS_v2)
KERNEL_NODE_PARAMS(cuGraphKernelNodeGetParams, CUDA_KERNEL_NODE_PARAMS_v1)

FAKE_EXPORT CUresult cuGraphMemcpyNodeGetParams(CUgraphNode node, CUDA_MEMCPY3D *p) {
  const struct node *n = of_type(node, CU_GRAPH_NODE_TYPE_MEMCPY);
  if (!n || !p) return CUDA_ERROR_INVALID_VALUE;
  *p = n->copy;
  return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult cuGraphMemsetNodeGetParams(CUgraphNode node, CUDA_MEMSET_NODE_PARAMS *p) {
  const struct node *n = of_type(node, CU_GRAPH_NODE_TYPE_MEMSET);
  if (!n || !p) return CUDA_ERROR_INVALID_VALUE;
  *p = n->set;
  return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult cuGraphChildGraphNodeGetGraph(CUgraphNode node, CUgraph *child) {
  const struct node *n = of_type(node, CU_GRAPH_NODE_TYPE_GRAPH);
  if (!n || !child) return CUDA_ERROR_INVALID_VALUE;
  *child = (CUgraph)n->child;
  return CUDA_SUCCESS;
}

/* ---- executable graphs ---- */

/* Appends g's nodes to f, depth first; false if there are too many. */
static bool flatten(struct flat *f, const struct fake_graph *g) {
  for (size_t i = 0; i < g->count; i++) {
    if (f->count == EXEC_NODES) return false;
    size_t at = f->count++;
    f->node[at] = &g->nodes[i];
    f->type[at] = g->nodes[i].type;
    f->names_managed = f->names_managed || g->nodes[i].names_managed;
    if (g->nodes[i].child && !flatten(f, g->nodes[i].child)) return false;
    f->subtree[at] = f->count - at - 1;
  }
  return true;
}

/* The same nodes, in the same order, from `from` on (what an update needs). */
static bool same_shape(const struct flat *a, size_t from, size_t count, const struct flat *b) {
  if (b->count != count) return false;
  for (size_t i = 0; i < count; i++)
    if (a->type[from + i] != b->type[i] || a->subtree[from + i] != b->subtree[i]) return false;
  return true;
}

static CUresult instantiate(CUgraphExec *exec, CUgraph g) {
  if (!exec || !g) return CUDA_ERROR_INVALID_VALUE;
  struct flat *f = calloc(1, sizeof *f);
  if (!f) return CUDA_ERROR_OUT_OF_MEMORY;
  if (!flatten(f, (struct fake_graph *)g)) {
    free(f);
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  f->graph = ((struct fake_graph *)g)->serial;
  *exec = (CUgraphExec)f;
  return CUDA_SUCCESS;
}
FAKE_EXPORT CUresult cuGraphInstantiateWithFlags(CUgraphExec *exec, CUgraph g,
                                                 unsigned long long flags) {
  (void)flags;
  return instantiate(exec, g);
}

/* The instantiation ABIs of CUDA 10 and 11 (not through the exported
 * cuGraphInstantiateWithFlags: the real driver calls no export of its own). */
#define INSTANTIATE_OLD(Name)                                                                      \
  FAKE_EXPORT CUresult Name(CUgraphExec *exec, CUgraph g, CUgraphNode *error_node, char *log,      \
                            size_t log_size) {                                                     \
    if (error_node) *error_node = NULL;                                                            \
    if (log && log_size) log[0] = 0;                                                               \
    return instantiate(exec, g);                                                                   \
  }
INSTANTIATE_OLD(cuGraphInstantiate_v2)
INSTANTIATE_OLD(cuGraphInstantiate)

FAKE_EXPORT CUresult cuGraphExecDestroy(CUgraphExec exec) {
  if (!exec) return CUDA_ERROR_INVALID_VALUE;
  free(exec);
  return CUDA_SUCCESS;
}

/* Launching or uploading an executable graph is an operation of the stream. */
#define GRAPH_WORK(Name, PerThread, Launch)                                                        \
  FAKE_EXPORT CUresult Name(CUgraphExec exec, CUstream h) {                                        \
    if (!exec || (Launch && ((const struct flat *)exec)->names_managed))                           \
      return CUDA_ERROR_INVALID_VALUE;                                                             \
    return fake_enqueue_work(h, PerThread);                                                        \
  }
GRAPH_WORK(cuGraphLaunch, false, true)
GRAPH_WORK(cuGraphLaunch_ptsz, true, true)
GRAPH_WORK(cuGraphUpload, false, false)
GRAPH_WORK(cuGraphUpload_ptsz, true, false)

/* Where node is among exec's nodes if it is one of type, else -1. */
static long exec_node(CUgraphExec exec, CUgraphNode node, CUgraphNodeType type) {
  const struct flat *f = (const struct flat *)exec;
  if (!f || !is_live(f->graph)) return -1; /* its graph destroyed: the node is gone */
  for (size_t i = 0; node && i < f->count; i++)
    if (f->node[i] == (const struct node *)node) return f->type[i] == type ? (long)i : -1;
  return -1;
}

static CUresult kernel_set(CUgraphExec exec, CUgraphNode node, CUfunction func) {
  size_t count;
  const size_t *sizes;
  if (exec_node(exec, node, CU_GRAPH_NODE_TYPE_KERNEL) < 0 ||
      !fake_function_layout(func, &count, &sizes))
    return CUDA_ERROR_INVALID_VALUE;
  return CUDA_SUCCESS;
}

static CUresult copy_set(CUgraphExec exec, CUgraphNode node, const CUDA_MEMCPY3D *copy) {
  if (exec_node(exec, node, CU_GRAPH_NODE_TYPE_MEMCPY) < 0 || !copy_valid(copy))
    return CUDA_ERROR_INVALID_VALUE;
  return CUDA_SUCCESS;
}

static CUresult memset_set(CUgraphExec exec, CUgraphNode node, const CUDA_MEMSET_NODE_PARAMS *set) {
  if (exec_node(exec, node, CU_GRAPH_NODE_TYPE_MEMSET) < 0 || !set_valid(set))
    return CUDA_ERROR_INVALID_VALUE;
  return CUDA_SUCCESS;
}

/* A child graph node takes a graph of the same shape as the one it holds. */
static CUresult child_set(CUgraphExec exec, CUgraphNode node, CUgraph child) {
  const struct flat *f = (const struct flat *)exec;
  long at = exec_node(exec, node, CU_GRAPH_NODE_TYPE_GRAPH);
  struct flat *c = child ? calloc(1, sizeof *c) : NULL;
  bool ok = at >= 0 && c && flatten(c, (struct fake_graph *)child) &&
            same_shape(f, (size_t)at + 1, f->subtree[at], c);
  free(c);
  return ok ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

#define EXEC_KERNEL_SET(Name, Params)                                                              \
  FAKE_EXPORT CUresult Name(CUgraphExec exec, CUgraphNode node, const Params *p) {                 \
    return p ? kernel_set(exec, node, p->func) : CUDA_ERROR_INVALID_VALUE;                         \
  }
EXEC_KERNEL_SET(cuGraphExecKernelNodeSetParams_v2, CUDA_KERNEL_NODE_PARAMS_v2)
EXEC_KERNEL_SET(cuGraphExecKernelNodeSetParams, CUDA_KERNEL_NODE_PARAMS_v1)

FAKE_EXPORT CUresult cuGraphExecMemcpyNodeSetParams(CUgraphExec exec, CUgraphNode node,
                                                    const CUDA_MEMCPY3D *copy, CUcontext ctx) {
  (void)ctx;
  return copy_set(exec, node, copy);
}

FAKE_EXPORT CUresult cuGraphExecMemsetNodeSetParams(CUgraphExec exec, CUgraphNode node,
                                                    const CUDA_MEMSET_NODE_PARAMS *set,
                                                    CUcontext ctx) {
  (void)ctx;
  return memset_set(exec, node, set);
}

FAKE_EXPORT CUresult cuGraphExecChildGraphNodeSetParams(CUgraphExec exec, CUgraphNode node,
                                                        CUgraph child) {
  return child_set(exec, node, child);
}

FAKE_EXPORT CUresult cuGraphExecEventRecordNodeSetEvent(CUgraphExec exec, CUgraphNode node,
                                                        CUevent event) {
  if (!event || exec_node(exec, node, CU_GRAPH_NODE_TYPE_EVENT_RECORD) < 0)
    return CUDA_ERROR_INVALID_VALUE;
  return CUDA_SUCCESS;
}
FAKE_EXPORT CUresult cuGraphExecEventWaitNodeSetEvent(CUgraphExec exec, CUgraphNode node,
                                                      CUevent event) {
  if (!event || exec_node(exec, node, CU_GRAPH_NODE_TYPE_WAIT_EVENT) < 0)
    return CUDA_ERROR_INVALID_VALUE;
  return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult cuGraphExecNodeSetParams(CUgraphExec exec, CUgraphNode node,
                                              CUgraphNodeParams *p) {
  if (!p) return CUDA_ERROR_INVALID_VALUE;
  switch (p->type) {
  case CU_GRAPH_NODE_TYPE_KERNEL:
    return kernel_set(exec, node, p->kernel.func);
  case CU_GRAPH_NODE_TYPE_MEMCPY:
    return copy_set(exec, node, &p->memcpy.copyParams);
  case CU_GRAPH_NODE_TYPE_MEMSET: {
    const CUDA_MEMSET_NODE_PARAMS_v2 *s = &p->memset;
    CUDA_MEMSET_NODE_PARAMS set = {s->dst, s->pitch, s->value, s->elementSize, s->width, s->height};
    return memset_set(exec, node, &set);
  }
  case CU_GRAPH_NODE_TYPE_GRAPH:
    return child_set(exec, node, p->graph.graph);
  default:
    return exec_node(exec, node, p->type) < 0 ? CUDA_ERROR_INVALID_VALUE : CUDA_SUCCESS;
  }
}

/* An update needs the graph's nodes to pair with the executable's, one to one. */
static CUresult update(CUgraphExec exec, CUgraph graph, CUgraphExecUpdateResult *result) {
  const struct flat *f = (const struct flat *)exec;
  struct flat *g = graph ? calloc(1, sizeof *g) : NULL;
  bool ok = f && g && flatten(g, (struct fake_graph *)graph) && same_shape(f, 0, f->count, g);
  free(g);
  if (result)
    *result = ok ? CU_GRAPH_EXEC_UPDATE_SUCCESS : CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED;
  if (!exec || !graph) return CUDA_ERROR_INVALID_VALUE;
  return ok ? CUDA_SUCCESS : CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE;
}

FAKE_EXPORT CUresult cuGraphExecUpdate_v2(CUgraphExec exec, CUgraph graph,
                                          CUgraphExecUpdateResultInfo *info) {
  CUgraphExecUpdateResult result;
  CUresult r = update(exec, graph, &result);
  if (info) memset(info, 0, sizeof *info), info->result = result;
  return r;
}

FAKE_EXPORT CUresult cuGraphExecUpdate(CUgraphExec exec, CUgraph graph, CUgraphNode *error_node,
                                       CUgraphExecUpdateResult *result) {
  if (error_node) *error_node = NULL;
  return update(exec, graph, result);
}
