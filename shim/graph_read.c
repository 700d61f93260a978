/* graph_read.c - an executable graph's nodes read, when it is instantiated
 * or changed: each node's type and what it gives the GPU (a kernel node's
 * managed argument words and __managed__ variables, a copy's or set's
 * operands, an event node's event), child graphs' nodes depth first, and
 * whether an event-record node covers the whole launch (its edges followed
 * back). Into an executable no other thread sees yet; graph_args.c keeps
 * and judges them. */
#include <stdio.h>
#include <stdlib.h>

#include "graph_args_internal.h"
#include "grow.h"

/* ---- reading: into an executable no other thread sees yet ---- */

/* Appends a node; its index, or SIZE_MAX when memory ran out. */
size_t ac_graph_add_node(struct graph_exec *g, uintptr_t key, size_t within, CUgraphNodeType type) {
  if (!AC_GROW(g->nodes, g->node_count, g->node_cap, 8)) return SIZE_MAX;
  g->nodes[g->node_count] = (struct exec_node){key, 0, within, type, 0, false};
  return g->node_count++;
}

/* Model lock held: node's use of addr, if addr is managed memory now. */
static void add_use(struct graph_exec *g, size_t node, uintptr_t addr, int param, size_t offset,
                    enum ac_work_operation operation, enum ac_work_via via, const char *kernel) {
  struct ac_alloc *a = addr ? ac_model_find_alloc(ac_model, addr) : NULL;
  if (!a || !ac_alloc_is_managed(a)) return;
  for (size_t i = g->count; i > 0 && g->uses[i - 1].node == node; i--)
    if (g->uses[i - 1].addr == addr && g->uses[i - 1].param == param) return;
  if (!AC_GROW(g->uses, g->count, g->cap, 8)) return;
  struct graph_use *u = &g->uses[g->count++];
  *u = (struct graph_use){node, addr, param, offset, operation, via, 0, 0, ""};
  if (kernel) snprintf(u->kernel, sizeof u->kernel, "%s", kernel);
}

/* The managed memory a kernel node is given: its argument words, and its
 * module's __managed__ variables. */
void ac_graph_note_kernel(struct graph_exec *g, size_t node, const struct kernel_args *k) {
  const struct ac_layout *lay = k->func ? ac_layout_of(k->func) : NULL;
  if (!lay || !lay->known) return;
  size_t buffer_size = 0;
  const unsigned char *buffer = k->params ? NULL : ac_extra_buffer(k->extra, &buffer_size);
  ac_model_enter();
  for (int i = 0; i < lay->count; i++) {
    const unsigned char *p = k->params ? k->params[i] : NULL;
    if (buffer && (size_t)lay->offset[i] + lay->size[i] <= buffer_size) p = buffer + lay->offset[i];
    for (size_t off = 0; p && off + sizeof(uintptr_t) <= lay->size[i]; off += sizeof(uintptr_t)) {
      uintptr_t word;
      memcpy(&word, p + off, sizeof word);
      add_use(g, node, word, i, off, AC_WORK_KERNEL, AC_VIA_ARGUMENT, lay->name);
    }
  }
  const uintptr_t *base;
  size_t n = ac_module_variables(lay->module, &base);
  for (size_t i = 0; i < n; i++)
    add_use(g, node, base[i], -1, 0, AC_WORK_KERNEL, AC_VIA_MANAGED_VARIABLE, lay->name);
  ac_model_leave();
}

/* Model lock held: a copy's or set's operand, which names both operands. */
static void add_operand(struct graph_exec *g, size_t node, uintptr_t addr,
                        enum ac_work_operation operation, enum ac_work_via via, uintptr_t dst,
                        uintptr_t src) {
  size_t before = g->count;
  add_use(g, node, addr, -1, 0, operation, via, NULL);
  if (g->count == before) return;
  g->uses[before].dst = dst;
  g->uses[before].src = src;
}

/* The managed memory a copy or set node writes (dst) and reads (src, 0: none). */
void ac_graph_note_copy(struct graph_exec *g, size_t node, enum ac_work_operation operation,
                        uintptr_t dst, uintptr_t src) {
  ac_model_enter();
  add_operand(g, node, dst, operation, AC_VIA_DESTINATION, dst, src);
  add_operand(g, node, src, operation, AC_VIA_SOURCE, dst, src);
  ac_model_leave();
}

void ac_graph_note_copy_3d(struct graph_exec *g, size_t node, const CUDA_MEMCPY3D *c) {
  ac_graph_note_copy(g, node, AC_WORK_COPY, AC_SIDE_3D(c, dst), AC_SIDE_3D(c, src));
}

/* A kernel node's parameters: through the 12.0 ABI, else the CUDA 10 one that
 * older drivers offer alone. */
bool ac_graph_kernel_node(CUgraphNode node, struct kernel_args *k) {
  if (ac_real.cuGraphKernelNodeGetParams_v2) {
    CUDA_KERNEL_NODE_PARAMS_v2 kp;
    if (ac_real.cuGraphKernelNodeGetParams_v2(node, &kp) != CUDA_SUCCESS) return false;
    *k = (struct kernel_args){kp.func ? kp.func : (CUfunction)kp.kern, kp.kernelParams, kp.extra};
    return true;
  }
  CUDA_KERNEL_NODE_PARAMS_v1 kp;
  if (!ac_real.cuGraphKernelNodeGetParams ||
      ac_real.cuGraphKernelNodeGetParams(node, &kp) != CUDA_SUCCESS)
    return false;
  *k = (struct kernel_args){kp.func, kp.kernelParams, kp.extra};
  return true;
}

/* The event of an event-record or event-wait node, or 0. */
static uintptr_t node_event(CUgraphNode node, CUgraphNodeType type) {
  __typeof__(&cuGraphEventRecordNodeGetEvent) get = type == CU_GRAPH_NODE_TYPE_EVENT_RECORD
                                                        ? ac_real.cuGraphEventRecordNodeGetEvent
                                                        : ac_real.cuGraphEventWaitNodeGetEvent;
  CUevent event = NULL;
  return get && get(node, &event) == CUDA_SUCCESS ? (uintptr_t)event : 0;
}

/* One node's parameters, asked of the driver (outside the model lock). */
static void read_node(struct graph_exec *g, size_t index, CUgraphNode node, CUgraphNodeType type) {
  struct kernel_args k;
  CUDA_MEMCPY3D copy;
  CUDA_MEMSET_NODE_PARAMS set;
  if (type == CU_GRAPH_NODE_TYPE_KERNEL && ac_graph_kernel_node(node, &k))
    ac_graph_note_kernel(g, index, &k);
  else if (type == CU_GRAPH_NODE_TYPE_MEMCPY && ac_real.cuGraphMemcpyNodeGetParams &&
           ac_real.cuGraphMemcpyNodeGetParams(node, &copy) == CUDA_SUCCESS)
    ac_graph_note_copy_3d(g, index, &copy);
  else if (type == CU_GRAPH_NODE_TYPE_MEMSET && ac_real.cuGraphMemsetNodeGetParams &&
           ac_real.cuGraphMemsetNodeGetParams(node, &set) == CUDA_SUCCESS)
    ac_graph_note_copy(g, index, AC_WORK_SET, set.dst, 0);
  else if (type == CU_GRAPH_NODE_TYPE_EVENT_RECORD || type == CU_GRAPH_NODE_TYPE_WAIT_EVENT)
    g->nodes[index].event = node_event(node, type);
}

/* Nodes that do no work of their own: a record need not follow them. */
static bool does_no_work(CUgraphNodeType type) {
  return type == CU_GRAPH_NODE_TYPE_EMPTY || type == CU_GRAPH_NODE_TYPE_EVENT_RECORD ||
         type == CU_GRAPH_NODE_TYPE_WAIT_EVENT;
}

/* Whether every working node among nodes[0, n) comes before nodes[r] in the
 * graph's edges (from[e] before to[e]): followed back from r. */
static bool precedes_all(const CUgraphNode *nodes, const CUgraphNodeType *types, size_t n, size_t r,
                         const CUgraphNode *from, const CUgraphNode *to, size_t edges) {
  bool *before = calloc(n, sizeof *before);
  size_t *stack = calloc(n, sizeof *stack), top = 0;
  bool all = before && stack;
  if (all) stack[top++] = r;
  while (all && top) {
    CUgraphNode at = nodes[stack[--top]];
    for (size_t e = 0; e < edges; e++) {
      if (to[e] != at) continue;
      for (size_t i = 0; i < n; i++)
        if (nodes[i] == from[e] && !before[i]) before[i] = true, stack[top++] = i;
    }
  }
  for (size_t i = 0; all && i < n; i++)
    if (i != r && !before[i] && !does_no_work(types[i])) all = false;
  free(before), free(stack);
  return all;
}

/* For each event-record node of the executable's own graph (nodes[i], of
 * types[i], kept at g->nodes[at[i]]): whether its record covers the whole
 * launch. */
static void mark_covering_records(struct graph_exec *g, const size_t *at, CUgraph graph,
                                  const CUgraphNode *nodes, const CUgraphNodeType *types,
                                  size_t n) {
  size_t edges = 0;
  if (!ac_real.cuGraphGetEdges_v2 ||
      ac_real.cuGraphGetEdges_v2(graph, NULL, NULL, NULL, &edges) != CUDA_SUCCESS)
    return;
  CUgraphNode *from = calloc(edges + 1, sizeof *from), *to = calloc(edges + 1, sizeof *to);
  if (from && to && ac_real.cuGraphGetEdges_v2(graph, from, to, NULL, &edges) == CUDA_SUCCESS)
    for (size_t i = 0; i < n; i++)
      if (types[i] == CU_GRAPH_NODE_TYPE_EVENT_RECORD)
        g->nodes[at[i]].covers_all = precedes_all(nodes, types, n, i, from, to, edges);
  free(from), free(to);
}

/* graph's nodes, depth first, lying within `within` (1 + a child graph node's index). */
void ac_graph_read(struct graph_exec *g, CUgraph graph, size_t within, int depth) {
  size_t n = 0;
  if (depth > 8 || !ac_real.cuGraphGetNodes || ac_real.cuGraphGetNodes(graph, NULL, &n) != 0 || !n)
    return;
  CUgraphNode *nodes = calloc(n, sizeof *nodes);
  CUgraphNodeType *types = calloc(n, sizeof *types);
  size_t *at = calloc(n, sizeof *at), records = 0;
  if (!nodes || !types || !at || ac_real.cuGraphGetNodes(graph, nodes, &n) != CUDA_SUCCESS) n = 0;
  bool whole = true; /* every node of graph kept, nodes[i] at g->nodes[at[i]] */
  for (size_t i = 0; i < n; i++) {
    CUgraph child;
    if (ac_real.cuGraphNodeGetType(nodes[i], &types[i]) != CUDA_SUCCESS) {
      whole = false;
      continue;
    }
    size_t index = ac_graph_add_node(g, (uintptr_t)nodes[i], within, types[i]);
    if (index == SIZE_MAX) {
      whole = false;
      break;
    }
    at[i] = index;
    records += types[i] == CU_GRAPH_NODE_TYPE_EVENT_RECORD;
    if (types[i] == CU_GRAPH_NODE_TYPE_GRAPH && ac_real.cuGraphChildGraphNodeGetGraph &&
        ac_real.cuGraphChildGraphNodeGetGraph(nodes[i], &child) == CUDA_SUCCESS)
      ac_graph_read(g, child, index + 1, depth + 1);
    else
      read_node(g, index, nodes[i], types[i]);
  }
  if (records && whole && depth == 0) mark_covering_records(g, at, graph, nodes, types, n);
  free(nodes), free(types), free(at);
}
