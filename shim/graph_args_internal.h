/* graph_args_internal.h - what graph_args.c (the executables, judged at each
 * launch) and graph_read.c (reading a graph's nodes into one) share.
 * Private to shim/. */
#ifndef AC_GRAPH_ARGS_INTERNAL_H
#define AC_GRAPH_ARGS_INTERNAL_H

#include "gpu_work.h"

struct exec_node {
  uintptr_t key;   /* the node of the graph the executable was made from */
  uintptr_t alias; /* its pair in the graph of the last update, or 0 */
  size_t within;   /* 1 + the index of the child graph node it lies in; 0 at the top */
  CUgraphNodeType type;
  uintptr_t event; /* an event-record or event-wait node's event */
  bool covers_all; /* ... which every working node of the top-level graph precedes */
};

struct graph_use {
  size_t node; /* index into nodes */
  uintptr_t addr;
  int param; /* -1: a __managed__ variable, or a copy's or set's operand */
  size_t offset;
  enum ac_work_operation operation; /* a copy's or set's operand: the driver moves HOST-attached
                                       memory itself */
  enum ac_work_via via;
  uintptr_t dst, src; /* a copy's or set's operands */
  char kernel[96];
};

struct graph_exec {
  uintptr_t handle;
  struct ac_clock last_launch; /* what its last launch comes after, itself included */
  struct exec_node *nodes;
  size_t node_count, node_cap;
  struct graph_use *uses;
  size_t count, cap;
  UT_hash_handle hh;
};

/* A kernel node's function and arguments, whichever ABI gave them. */
struct kernel_args {
  CUfunction func;
  void **params, **extra;
};

void ac_graph_exec_free(struct graph_exec *g);
/* Appends a node; its index, or SIZE_MAX when memory ran out. */
size_t ac_graph_add_node(struct graph_exec *g, uintptr_t key, size_t within, CUgraphNodeType type);
/* The managed memory a kernel node is given: its argument words, and its
 * module's __managed__ variables. */
void ac_graph_note_kernel(struct graph_exec *g, size_t node, const struct kernel_args *k);
/* The managed memory a copy or set node writes (dst) and reads (src, 0: none). */
void ac_graph_note_copy(struct graph_exec *g, size_t node, enum ac_work_operation operation,
                        uintptr_t dst, uintptr_t src);
void ac_graph_note_copy_3d(struct graph_exec *g, size_t node, const CUDA_MEMCPY3D *c);
/* A kernel node's parameters, through whichever ABI the driver offers. */
bool ac_graph_kernel_node(CUgraphNode node, struct kernel_args *k);
/* graph's nodes, depth first, lying within `within` (1 + a child graph
 * node's index), into g. */
void ac_graph_read(struct graph_exec *g, CUgraph graph, size_t within, int depth);

#endif
