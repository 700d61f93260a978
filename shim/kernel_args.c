/* kernel_args.c - what memory a launch or an asynchronous copy gives the GPU,
 * judged against the attach rules (AC301, AC302) and recorded as the stream's
 * reach for `device` semantics.
 *
 * A kernel's parameter layout is learned once per handle and cached. The
 * runtime launches CUkernels (cast to CUfunction) for which cuFuncGetParamInfo
 * answers CUDA_ERROR_INVALID_HANDLE; only then is cuKernelGetParamInfo asked,
 * so the kernel API is never handed a plain CUfunction. Every pointer-sized,
 * aligned word of every parameter is looked up in the allocation map, so
 * pointers inside structs count; the module's __managed__ variables count as
 * given to each of its kernels. Without the parameter-info API (drivers
 * before 12.4) the layout is the one read from the module image the program
 * loaded (module_images.c: PTX or cubin); without either, that is said once
 * and the analysis skipped - never guessed.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <uthash.h>

#include "grow.h"
#include "kernel_image.h"
#include "rules_device.h"
#include "shim.h"

#define MAX_PARAMS 128

struct layout {
  uintptr_t handle;
  bool known;
  int count;
  uint32_t offset[MAX_PARAMS], size[MAX_PARAMS];
  uintptr_t module; /* CUmodule or CUlibrary, 0 if unknown */
  char name[96];
  UT_hash_handle hh;
};

struct module_vars {
  uintptr_t module;
  size_t count, cap;
  uintptr_t *base;
  UT_hash_handle hh;
};

static pthread_mutex_t layout_lock = PTHREAD_MUTEX_INITIALIZER;

/* What judging launches cost, for --verbose (under ac_model_lock). */
static struct {
  unsigned long launches, words;
  double seconds;
} stats;

static double now_seconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

void ac_kernel_args_print_stats(void) {
  if (ac_opts.verbose && stats.launches)
    ac_log("kernel arguments: %lu launches judged, %lu words looked up, %.3f ms (%.0f ns each)",
           stats.launches, stats.words, stats.seconds * 1e3,
           stats.seconds * 1e9 / (double)stats.launches);
}
static struct layout *layouts;
static struct module_vars *modules; /* under ac_model_lock */

static bool ask_layout(struct layout *l, bool as_kernel) {
  for (l->count = 0; l->count < MAX_PARAMS; l->count++) {
    size_t off = 0, size = 0;
    CUresult r =
        as_kernel
            ? ac_real.cuKernelGetParamInfo((CUkernel)l->handle, (size_t)l->count, &off, &size)
            : ac_real.cuFuncGetParamInfo((CUfunction)l->handle, (size_t)l->count, &off, &size);
    if (r == CUDA_ERROR_INVALID_VALUE) return true; /* past the last parameter */
    if (r != CUDA_SUCCESS) return false;
    l->offset[l->count] = (uint32_t)off;
    l->size[l->count] = (uint32_t)size;
  }
  return true;
}

/* A driver before 12.4: the layout the loaded image gave (module_images.c). */
static bool learn_from_image(struct layout *l) {
  struct ac_image_kernel k;
  uintptr_t module;
  if (!ac_image_layout(l->handle, &k, &module)) return false;
  l->known = true;
  l->count = k.count < MAX_PARAMS ? k.count : MAX_PARAMS;
  memcpy(l->offset, k.offset, sizeof l->offset[0] * (size_t)l->count);
  memcpy(l->size, k.size, sizeof l->size[0] * (size_t)l->count);
  l->module = module;
  snprintf(l->name, sizeof l->name, "%s", k.name);
  return true;
}

static void learn(struct layout *l) {
  const char *name = NULL;
  CUmodule mod = NULL;
  CUlibrary lib = NULL;
  if (ac_real.cuFuncGetParamInfo && ask_layout(l, false)) {
    l->known = true;
    if (ac_real.cuFuncGetName) ac_real.cuFuncGetName(&name, (CUfunction)l->handle);
    if (ac_real.cuFuncGetModule && ac_real.cuFuncGetModule(&mod, (CUfunction)l->handle) == 0)
      l->module = (uintptr_t)mod;
  } else if (ac_real.cuKernelGetParamInfo && ask_layout(l, true)) {
    l->known = true;
    if (ac_real.cuKernelGetName) ac_real.cuKernelGetName(&name, (CUkernel)l->handle);
    if (ac_real.cuKernelGetLibrary && ac_real.cuKernelGetLibrary(&lib, (CUkernel)l->handle) == 0)
      l->module = (uintptr_t)lib;
  } else if (learn_from_image(l)) {
    return;
  } else {
    static int told;
    if (!__atomic_exchange_n(&told, 1, __ATOMIC_RELAXED))
      ac_log("the driver does not tell kernel parameter layouts (cuFuncGetParamInfo, driver 12.4+) "
             "and the module image did not: kernel arguments are not checked (AC301, AC302)");
  }
  if (name) snprintf(l->name, sizeof l->name, "%s", name);
}

static const struct layout *layout_of(CUfunction f) {
  /* Layouts live as long as the process: a thread's last one is kept without
   * the lock (a loop launches the same kernel again and again). */
  static __thread const struct layout *last;
  uintptr_t h = (uintptr_t)f;
  if (last && __atomic_load_n(&last->handle, __ATOMIC_ACQUIRE) == h) return last;
  struct layout *l;
  pthread_mutex_lock(&layout_lock);
  HASH_FIND(hh, layouts, &h, sizeof h, l);
  pthread_mutex_unlock(&layout_lock);
  if (l) return last = l;
  l = calloc(1, sizeof *l);
  if (!l) return NULL;
  l->handle = h;
  learn(l);
  pthread_mutex_lock(&layout_lock);
  struct layout *raced;
  HASH_FIND(hh, layouts, &h, sizeof h, raced);
  if (raced)
    free(l), l = raced;
  else
    HASH_ADD(hh, layouts, handle, sizeof l->handle, l);
  pthread_mutex_unlock(&layout_lock);
  return last = l;
}

/* Model lock held. */
void ac_kernel_args_note_variable(uintptr_t module, uintptr_t base) {
  AC_ASSERT_MODEL_HELD();
  if (!module) return;
  struct module_vars *mv;
  HASH_FIND(hh, modules, &module, sizeof module, mv);
  if (!mv) {
    mv = calloc(1, sizeof *mv);
    if (!mv) return;
    mv->module = module;
    HASH_ADD(hh, modules, module, sizeof mv->module, mv);
  }
  for (size_t i = 0; i < mv->count; i++)
    if (mv->base[i] == base) return;
  if (AC_GROW(mv->base, mv->count, mv->cap, 4)) mv->base[mv->count++] = base;
}

/* ---- judging ---- */

#define MAX_WORK_FINDINGS 4

/* One piece of GPU work being judged - a kernel launch, an asynchronous copy
 * or set, a graph launch - from work_begin to work_finish. */
struct gpu_work {
  const char *api;
  struct ac_stream *stream;
  bool host_is_legal;
  bool records_reach; /* device semantics: what the work may touch is recorded */
  const struct layout *layout;
  struct ac_finding findings[MAX_WORK_FINDINGS];
  int n;
  uint64_t judged[MAX_WORK_FINDINGS * 2]; /* allocations already judged */
  int judged_n;
};

static bool already_judged(struct gpu_work *l, uint64_t serial) {
  for (int i = 0; i < l->judged_n; i++)
    if (l->judged[i] == serial) return true;
  if (l->judged_n < (int)(sizeof l->judged / sizeof l->judged[0]))
    l->judged[l->judged_n++] = serial;
  return false;
}

/* The allocation at addr if the work's use of it needs judging or recording;
 * model lock held. Never-attached GLOBAL memory breaks no device rule, and
 * under strict semantics there is no reach to record either, so its record
 * need not be read: the common case, kept small enough to inline. */
static inline struct ac_alloc *allocation_to_judge(const struct gpu_work *l, uintptr_t addr) {
  if (!l->records_reach && !ac_model_may_need_judging(ac_model, addr)) return NULL;
  bool plain;
  struct ac_alloc *a = ac_model_find_alloc_plain(ac_model, addr, &plain);
  return !a || (plain && !l->records_reach) ? NULL : a;
}

/* The work is given a, through addr. */
static void judge_use(struct gpu_work *l, struct ac_alloc *a, uintptr_t addr, const char *kernel,
                      int param, size_t offset, const char *via) {
  if (!ac_alloc_is_managed(a) || already_judged(l, a->serial)) return;
  ac_order_add_reach(ac_model, l->stream, a);
  if (l->n == MAX_WORK_FINDINGS) return;
  struct ac_finding *f = &l->findings[l->n];
  if (!ac_judge_device_access(ac_model, a, l->stream, l->host_is_legal, f)) return;
  f->api = l->api;
  f->thread = ac_thread_id();
  f->device = (struct ac_device_facts){addr, "", param, offset, via};
  if (kernel) snprintf(f->device.kernel, sizeof f->device.kernel, "%s", kernel);
  l->n++;
}

/* One address the work is given; model lock held. */
static inline void judge_address(struct gpu_work *l, uintptr_t addr, const char *kernel, int param,
                                 size_t offset, const char *via) {
  struct ac_alloc *a = allocation_to_judge(l, addr);
  if (a) judge_use(l, a, addr, kernel, param, offset, via);
}

static void scan_bytes(struct gpu_work *l, const unsigned char *p, size_t size, int param) {
  for (size_t off = 0; off + sizeof(uintptr_t) <= size; off += sizeof(uintptr_t)) {
    uintptr_t word;
    memcpy(&word, p + off, sizeof word);
    stats.words++;
    if (word) judge_address(l, word, l->layout->name, param, off, "kernel argument");
  }
}

static void scan_arguments(struct gpu_work *l, void **params, void **extra) {
  const struct layout *lay = l->layout;
  if (params) {
    for (int i = 0; i < lay->count; i++)
      if (params[i]) scan_bytes(l, params[i], lay->size[i], i);
    return;
  }
  const unsigned char *buffer = NULL;
  size_t buffer_size = 0;
  for (void **e = extra; e && *e != CU_LAUNCH_PARAM_END; e += 2) {
    if (e[0] == CU_LAUNCH_PARAM_BUFFER_POINTER)
      buffer = e[1];
    else if (e[0] == CU_LAUNCH_PARAM_BUFFER_SIZE && e[1])
      buffer_size = *(size_t *)e[1];
  }
  if (!buffer) return;
  for (int i = 0; i < lay->count; i++)
    if ((size_t)lay->offset[i] + lay->size[i] <= buffer_size)
      scan_bytes(l, buffer + lay->offset[i], lay->size[i], i);
}

static void scan_module_variables(struct gpu_work *l) {
  struct module_vars *mv;
  uintptr_t module = l->layout->module;
  if (!module) return;
  HASH_FIND(hh, modules, &module, sizeof module, mv);
  for (size_t i = 0; mv && i < mv->count; i++)
    judge_address(l, mv->base[i], l->layout->name, -1, 0, "__managed__ variable");
}

/* `device` semantics hold only where every device has concurrent managed
 * access. 0: not decided yet, 1: strict, 2: device. */
static int decided_semantics;

static bool every_device_concurrent(int *without) {
  int count = 0;
  *without = -1;
  if (!ac_real.cuDeviceGetCount || ac_real.cuDeviceGetCount(&count) != CUDA_SUCCESS || count < 1)
    return false;
  for (int i = 0; i < count; i++) {
    CUdevice dev;
    int concurrent = 0;
    if (ac_real.cuDeviceGet(&dev, i) != CUDA_SUCCESS ||
        ac_real.cuDeviceGetAttribute(&concurrent, CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS,
                                     dev) != CUDA_SUCCESS ||
        !concurrent) {
      *without = i;
      return false;
    }
  }
  return true;
}

void ac_semantics_decide(void) {
  if (__atomic_load_n(&decided_semantics, __ATOMIC_ACQUIRE)) return;
  int d = 1, without = -1;
  if (ac_opts.semantics == AC_SEMANTICS_DEVICE) {
    if (ac_real.cuDeviceGet && ac_real.cuDeviceGetAttribute && every_device_concurrent(&without))
      d = 2;
    else
      ac_log("--semantics device: device %d has no concurrent managed access; judging strictly",
             without);
  }
  int expected = 0;
  if (!__atomic_compare_exchange_n(&decided_semantics, &expected, d, false, __ATOMIC_ACQ_REL,
                                   __ATOMIC_ACQUIRE))
    return;
  if (d == 2) {
    ac_model_enter();
    ac_model_set_reach_semantics(ac_model, true);
    ac_model_leave();
  }
}

/* Whether HOST-attached memory may be given to kernels: `device` semantics on
 * devices with concurrent managed access. Decided when CUDA is initialised. */
static bool concurrent_semantics(void) {
  int d = __atomic_load_n(&decided_semantics, __ATOMIC_ACQUIRE);
  if (AC_UNLIKELY(!d)) { /* a launch without cuInit seen: decide now */
    ac_semantics_decide();
    d = __atomic_load_n(&decided_semantics, __ATOMIC_ACQUIRE);
  }
  return d == 2;
}

/* The common frame of a launch, a copy and a graph launch: the operation is
 * enqueued and judged under one hold of the model lock (begin ... finish),
 * and the stack, if anything needs it, is taken after the lock is released. */
static bool work_begin(struct gpu_work *l, const char *api, CUstream stream, bool per_thread,
                       bool host_is_legal, struct ac_op_origin_slot *slot) {
  l->api = api;
  l->n = l->judged_n = 0;
  l->host_is_legal = host_is_legal;
  ac_model_enter();
  l->stream = ac_on_work_locked(api, stream, per_thread, slot);
  l->records_reach = ac_model_reach_semantics(ac_model);
  /* Captured work does not run now; a model without managed memory has nothing to judge. */
  return l->stream && !l->stream->capturing && ac_model_alloc_count(ac_model) > 0;
}

static void work_finish(struct gpu_work *l, const struct ac_op_origin_slot *slot) {
  ac_guard_refresh_locked();
  ac_model_leave();
  if (!slot->turned_busy && l->n == 0) return;
  struct ac_stack stack;
  ac_stack_capture(&stack);
  ac_on_work_busy_stack(slot, &stack);
  for (int i = 0; i < l->n; i++) {
    l->findings[i].stack = stack;
    ac_emit_finding(&l->findings[i], AC_DRIVER_RETURNED, CUDA_SUCCESS);
  }
}

/* A launch the driver accepted: an operation of its stream whose arguments
 * are judged (see check_order.c for the operation itself). */
void ac_on_launch(const char *api, CUfunction f, CUstream stream, bool per_thread, void **params,
                  void **extra) {
  struct gpu_work l;
  struct ac_op_origin_slot slot;
  bool host_is_legal = concurrent_semantics();
  l.layout = f ? layout_of(f) : NULL;
  if (work_begin(&l, api, stream, per_thread, host_is_legal, &slot) && l.layout &&
      l.layout->known) {
    double started = ac_opts.verbose ? now_seconds() : 0;
    scan_arguments(&l, params, extra);
    scan_module_variables(&l);
    if (ac_opts.verbose) stats.launches++, stats.seconds += now_seconds() - started;
  }
  if (l.layout) ac_history_note_kernel(ac_model, l.stream, slot.seq, l.layout->name);
  work_finish(&l, &slot);
}

/* An asynchronous copy or set: its operands are given to the stream's work. */
void ac_on_copy(const char *api, CUstream stream, bool per_thread, uintptr_t dst, uintptr_t src) {
  struct gpu_work l;
  struct ac_op_origin_slot slot;
  l.layout = NULL;
  /* The driver copies HOST-attached memory itself: only AC301 applies. */
  if (work_begin(&l, api, stream, per_thread, true, &slot)) {
    if (dst) judge_address(&l, dst, NULL, -1, 0, "copy destination");
    if (src) judge_address(&l, src, NULL, -1, 0, "copy source");
  }
  work_finish(&l, &slot);
}

/* ---- graphs ----
 * A graph's kernel nodes are read once, when it is instantiated (or its
 * executable updated): every argument word that is managed memory then, and
 * the nodes' modules' __managed__ variables, is kept with the executable and
 * judged against the stream of each launch. */

struct graph_use {
  uintptr_t addr;
  int param;
  size_t offset;
  char kernel[96];
};

struct graph_exec {
  uintptr_t handle;
  size_t count, cap;
  struct graph_use *uses;
  UT_hash_handle hh;
};

static struct graph_exec *execs; /* under ac_model_lock */

static void add_use(struct graph_exec *g, uintptr_t addr, const struct layout *lay, int param,
                    size_t offset) {
  for (size_t i = 0; i < g->count; i++)
    if (g->uses[i].addr == addr && g->uses[i].param == param) return;
  if (!AC_GROW(g->uses, g->count, g->cap, 8)) return;
  struct graph_use *u = &g->uses[g->count++];
  u->addr = addr;
  u->param = param;
  u->offset = offset;
  snprintf(u->kernel, sizeof u->kernel, "%s", lay->name);
}

/* Model lock held: the managed memory one kernel node is given. */
static void read_kernel_node(struct graph_exec *g, const struct layout *lay, void **params) {
  for (int i = 0; params && i < lay->count; i++) {
    const unsigned char *p = params[i];
    for (size_t off = 0; p && off + sizeof(uintptr_t) <= lay->size[i]; off += sizeof(uintptr_t)) {
      uintptr_t word;
      memcpy(&word, p + off, sizeof word);
      struct ac_alloc *a = word ? ac_model_find_alloc(ac_model, word) : NULL;
      if (a && ac_alloc_is_managed(a)) add_use(g, word, lay, i, off);
    }
  }
  struct module_vars *mv;
  uintptr_t module = lay->module;
  HASH_FIND(hh, modules, &module, sizeof module, mv);
  for (size_t i = 0; module && mv && i < mv->count; i++)
    add_use(g, mv->base[i], lay, -1, 0);
}

/* A kernel node's function and arguments: through the 12.0 ABI, else the
 * CUDA 10 one that older drivers offer alone. */
static bool kernel_node(CUgraphNode node, CUfunction *func, void ***params) {
  if (ac_real.cuGraphKernelNodeGetParams_v2) {
    CUDA_KERNEL_NODE_PARAMS_v2 kp;
    if (ac_real.cuGraphKernelNodeGetParams_v2(node, &kp) != CUDA_SUCCESS) return false;
    *func = kp.func ? kp.func : (CUfunction)kp.kern, *params = kp.kernelParams;
    return true;
  }
  CUDA_KERNEL_NODE_PARAMS_v1 kp;
  if (!ac_real.cuGraphKernelNodeGetParams ||
      ac_real.cuGraphKernelNodeGetParams(node, &kp) != CUDA_SUCCESS)
    return false;
  *func = kp.func, *params = kp.kernelParams;
  return true;
}

static void read_graph(struct graph_exec *g, CUgraph graph, int depth) {
  size_t n = 0;
  if (depth > 8 || !ac_real.cuGraphGetNodes || ac_real.cuGraphGetNodes(graph, NULL, &n) != 0 || !n)
    return;
  CUgraphNode *nodes = calloc(n, sizeof *nodes);
  if (!nodes || ac_real.cuGraphGetNodes(graph, nodes, &n) != CUDA_SUCCESS) n = 0;
  for (size_t i = 0; i < n; i++) {
    CUgraphNodeType type;
    if (ac_real.cuGraphNodeGetType(nodes[i], &type) != CUDA_SUCCESS) continue;
    if (type == CU_GRAPH_NODE_TYPE_GRAPH && ac_real.cuGraphChildGraphNodeGetGraph) {
      CUgraph child;
      if (ac_real.cuGraphChildGraphNodeGetGraph(nodes[i], &child) == CUDA_SUCCESS)
        read_graph(g, child, depth + 1);
      continue;
    }
    CUfunction func;
    void **params;
    if (type != CU_GRAPH_NODE_TYPE_KERNEL || !kernel_node(nodes[i], &func, &params)) continue;
    const struct layout *lay = layout_of(func);
    if (!lay || !lay->known) continue;
    ac_model_enter();
    read_kernel_node(g, lay, params);
    ac_model_leave();
  }
  free(nodes);
}

void ac_on_graph_instantiated(CUgraphExec exec, CUgraph graph) {
  struct graph_exec *g = calloc(1, sizeof *g);
  if (!g) return;
  g->handle = (uintptr_t)exec;
  read_graph(g, graph, 0);
  ac_model_enter();
  struct graph_exec *old;
  HASH_FIND(hh, execs, &g->handle, sizeof g->handle, old);
  if (old) {
    HASH_DEL(execs, old);
    free(old->uses);
    free(old);
  }
  HASH_ADD(hh, execs, handle, sizeof g->handle, g);
  ac_model_leave();
}

void ac_on_graph_exec_destroyed(CUgraphExec exec) {
  uintptr_t h = (uintptr_t)exec;
  struct graph_exec *g;
  ac_model_enter();
  HASH_FIND(hh, execs, &h, sizeof h, g);
  if (g) HASH_DEL(execs, g);
  ac_model_leave();
  if (g) free(g->uses), free(g);
}

void ac_on_graph_launch(const char *api, CUgraphExec exec, CUstream stream, bool per_thread) {
  struct gpu_work l;
  struct ac_op_origin_slot slot;
  uintptr_t h = (uintptr_t)exec;
  bool host_is_legal = concurrent_semantics();
  l.layout = NULL;
  if (work_begin(&l, api, stream, per_thread, host_is_legal, &slot)) {
    struct graph_exec *g;
    HASH_FIND(hh, execs, &h, sizeof h, g);
    for (size_t i = 0; g && i < g->count; i++)
      judge_address(&l, g->uses[i].addr, g->uses[i].kernel, g->uses[i].param, g->uses[i].offset,
                    "graph kernel argument");
  }
  work_finish(&l, &slot);
}

/* The module's kernels end: the driver may give their handles again for
 * other kernels, whose layouts must be learned anew. A retired layout leaves
 * the table and answers no handle, but is not freed: a thread's last-used
 * pointer may still see it (about a kilobyte per kernel per unload). */
static void retire_layouts(uintptr_t module) {
  struct layout *l, *tmp;
  pthread_mutex_lock(&layout_lock);
  HASH_ITER(hh, layouts, l, tmp) {
    if (l->module != module) continue;
    HASH_DEL(layouts, l);
    __atomic_store_n(&l->handle, 0, __ATOMIC_RELEASE);
  }
  pthread_mutex_unlock(&layout_lock);
}

/* Model lock held. The handle may name another module later. */
void ac_kernel_args_forget_module(uintptr_t module) {
  ac_image_module_unloaded(module);
  retire_layouts(module);
  struct module_vars *mv;
  HASH_FIND(hh, modules, &module, sizeof module, mv);
  if (!mv) return;
  HASH_DEL(modules, mv);
  free(mv->base);
  free(mv);
}
