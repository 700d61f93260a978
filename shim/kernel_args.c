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
 * and the analysis skipped - never guessed. Graphs are read in graph_args.c.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <uthash.h>

#include "gpu_work.h"
#include "grow.h"
#include "kernel_image.h"
#include "repair.h"
#include "rules_device.h"
#include "sys.h"

struct module_vars {
  uintptr_t module;
  size_t count, cap;
  uintptr_t *base;
  UT_hash_handle hh;
};

/* What judging launches cost, for --verbose (under ac_model_lock). */
static struct {
  unsigned long launches, words;
  double seconds;
} stats;

void ac_kernel_args_print_stats(void) {
  if (ac_opts.verbose && stats.launches)
    ac_log("kernel arguments: %lu launches judged, %lu words looked up, %.3f ms (%.0f ns each)",
           stats.launches, stats.words, stats.seconds * 1e3,
           stats.seconds * 1e9 / (double)stats.launches);
}
static struct ac_layout *layouts;
static struct module_vars *modules; /* under ac_model_lock */

static bool ask_layout(struct ac_layout *l, bool as_kernel) {
  for (l->count = 0; l->count < AC_MAX_PARAMS; l->count++) {
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
static bool learn_from_image(struct ac_layout *l) {
  struct ac_image_kernel k;
  uintptr_t module;
  if (!ac_image_layout(l->handle, &k, &module)) return false;
  l->known = true;
  l->count = k.count < AC_MAX_PARAMS ? k.count : AC_MAX_PARAMS;
  memcpy(l->offset, k.offset, sizeof l->offset[0] * (size_t)l->count);
  memcpy(l->size, k.size, sizeof l->size[0] * (size_t)l->count);
  l->module = module;
  snprintf(l->name, sizeof l->name, "%s", k.name);
  return true;
}

static void learn(struct ac_layout *l) {
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

/* Layouts live as long as the process: a thread's last one is kept without
 * the lock (a loop launches the same kernel again and again). */
static __thread const struct ac_layout *last_layout;

const struct ac_layout *ac_layout_known(CUfunction f) {
  const struct ac_layout *last = last_layout;
  uintptr_t h = (uintptr_t)f;
  if (last && __atomic_load_n(&last->handle, __ATOMIC_ACQUIRE) == h) return last;
  struct ac_layout *l;
  ac_lock(AC_LOCK_layout);
  HASH_FIND(hh, layouts, &h, sizeof h, l);
  ac_unlock(AC_LOCK_layout);
  return l ? last_layout = l : NULL;
}

const struct ac_layout *ac_layout_of(CUfunction f) {
  const struct ac_layout *known = ac_layout_known(f);
  if (known) return known;
  uintptr_t h = (uintptr_t)f;
  struct ac_layout *l = calloc(1, sizeof *l);
  if (!l) return NULL;
  l->handle = h;
  learn(l);
  ac_lock(AC_LOCK_layout);
  struct ac_layout *raced;
  HASH_FIND(hh, layouts, &h, sizeof h, raced);
  if (raced)
    free(l), l = raced;
  else
    HASH_ADD(hh, layouts, handle, sizeof l->handle, l);
  ac_unlock(AC_LOCK_layout);
  return last_layout = l;
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

/* Model lock held. */
size_t ac_module_variables(uintptr_t module, const uintptr_t **bases) {
  struct module_vars *mv = NULL;
  if (module) HASH_FIND(hh, modules, &module, sizeof module, mv);
  *bases = mv ? mv->base : NULL;
  return mv ? mv->count : 0;
}

/* ---- judging ---- */

static bool already_judged(struct ac_gpu_work *l, uint64_t serial) {
  for (int i = 0; i < l->judged_n; i++)
    if (l->judged[i] == serial) return true;
  if (l->judged_n < (int)(sizeof l->judged / sizeof l->judged[0]))
    l->judged[l->judged_n++] = serial;
  return false;
}

/* What a finding of this work says of it: the kernel and the argument, or
 * the copy's operands (classified when it is reported). */
static void describe_work(const struct ac_gpu_work *l, struct ac_finding *f, uintptr_t addr,
                          const char *kernel, int param, size_t offset, enum ac_work_via via) {
  struct ac_work_facts *w = &f->work;
  f->kind = l->operation == AC_WORK_KERNEL ? AC_KIND_LAUNCH : AC_KIND_COPY;
  *w = (struct ac_work_facts){.addr = addr,
                              .operation = l->operation,
                              .via = via,
                              .graph = l->graph,
                              .param = param,
                              .offset = offset};
  if (f->kind == AC_KIND_LAUNCH) {
    w->dims = l->dims;
    if (kernel) snprintf(w->kernel, sizeof w->kernel, "%s", kernel);
  } else {
    w->dst = l->dst;
    w->src = l->src;
  }
}

void ac_work_judge_use(struct ac_gpu_work *l, struct ac_alloc *a, uintptr_t addr,
                       const char *kernel, int param, size_t offset, enum ac_work_via via) {
  if (!ac_alloc_is_managed(a) || already_judged(l, a->serial)) return;
  if (!l->probe) ac_order_add_reach(ac_model, l->stream, a);
  if (l->n == AC_MAX_WORK_FINDINGS) return;
  struct ac_finding *f = &l->findings[l->n];
  if (!ac_judge_device_access(ac_model, a, l->stream, l->host_is_legal, f)) return;
  f->repair = f->rule == AC_RULE_AC301 && ac_repair_work_ordered(f);
  f->api = l->api;
  f->thread = ac_thread_id();
  describe_work(l, f, addr, kernel, param, offset, via);
  l->n++;
}

static void judge_word(uintptr_t word, int param, size_t offset, void *ctx) {
  struct ac_gpu_work *l = ctx;
  stats.words++;
  if (word) ac_work_judge_address(l, word, l->layout->name, param, offset, AC_VIA_ARGUMENT);
}

static void scan_arguments(struct ac_gpu_work *l, void **params, void **extra) {
  ac_for_each_argument_word(l->layout, params, extra, judge_word, l);
}

static void scan_module_variables(struct ac_gpu_work *l) {
  const uintptr_t *base;
  size_t n = ac_module_variables(l->layout->module, &base);
  for (size_t i = 0; i < n; i++)
    ac_work_judge_address(l, base[i], l->layout->name, -1, 0, AC_VIA_MANAGED_VARIABLE);
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
  bool concurrent =
      ac_real.cuDeviceGet && ac_real.cuDeviceGetAttribute && every_device_concurrent(&without);
  if (ac_opts.semantics == AC_SEMANTICS_DEVICE) {
    if (concurrent)
      d = 2;
    else
      ac_log("--semantics device: device %d has no concurrent managed access; judging strictly",
             without);
  }
  int expected = 0;
  if (!__atomic_compare_exchange_n(&decided_semantics, &expected, d, false, __ATOMIC_ACQ_REL,
                                   __ATOMIC_ACQUIRE))
    return;
  if (without >= 0) ac_guard_device_protects_managed(without);
  if (d == 2) {
    ac_model_enter();
    ac_model_set_reach_semantics(ac_model, true);
    ac_model_leave();
  }
}

/* Whether HOST-attached memory may be given to kernels: `device` semantics on
 * devices with concurrent managed access. Decided when CUDA is initialised. */
bool ac_concurrent_semantics(void) {
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
bool ac_work_begin(struct ac_gpu_work *l, const char *api, CUstream stream, bool per_thread,
                   bool host_is_legal, struct ac_op_origin_slot *slot) {
  l->api = api;
  l->n = l->judged_n = 0;
  l->graph = l->probe = false;
  l->dst = l->src = 0;
  l->ret_slot = NULL;
  l->host_is_legal = host_is_legal;
  ac_model_enter();
  l->stream = ac_on_work_locked(api, stream, per_thread, slot);
  l->records_reach = ac_model_reach_semantics(ac_model);
  /* Captured work does not run now; a model without managed memory has nothing to judge. */
  return l->stream && !l->stream->capturing && ac_model_alloc_count(ac_model) > 0;
}

void ac_work_finish(struct ac_gpu_work *l, const struct ac_op_origin_slot *slot) {
  ac_model_leave();
  if (!slot->turned_busy && l->n == 0) return;
  struct ac_stack stack;
  ac_stack_id kept; /* the busy stack is stored under the lock: its id is not needed */
  if (l->ret_slot)
    ac_stack_capture_site(&stack, l->ret_slot, &kept);
  else
    ac_stack_capture(&stack);
  ac_on_work_busy_stack(slot, &stack);
  for (int i = 0; i < l->n; i++) {
    struct ac_finding *f = &l->findings[i];
    f->stack = stack;
    if (f->kind == AC_KIND_COPY) { /* what the other operand is, for the report */
      f->work.dst_kind = ac_check_classify(f->work.dst);
      f->work.src_kind = ac_check_classify(f->work.src);
    }
    ac_emit_finding(f, AC_DRIVER_RETURNED, CUDA_SUCCESS);
  }
}

/* A launch the driver accepted: an operation of its stream whose arguments
 * are judged (see check_order.c for the operation itself). */
void ac_on_launch(void *const *ret_slot, const char *api, CUfunction f,
                  const struct ac_launch_dims *dims, CUstream stream, bool per_thread,
                  void **params, void **extra) {
  struct ac_gpu_work l;
  struct ac_op_origin_slot slot;
  bool host_is_legal = ac_concurrent_semantics();
  l.layout = f ? ac_layout_of(f) : NULL;
  l.dims = *dims;
  l.operation = AC_WORK_KERNEL;
  bool judged = ac_work_begin(&l, api, stream, per_thread, host_is_legal, &slot);
  l.ret_slot = ret_slot;
  if (judged && l.layout && l.layout->known) {
    double started = ac_opts.verbose ? ac_sys_now_seconds() : 0;
    scan_arguments(&l, params, extra);
    scan_module_variables(&l);
    if (ac_opts.verbose) stats.launches++, stats.seconds += ac_sys_now_seconds() - started;
  }
  if (l.layout) ac_history_note_kernel(ac_model, l.stream, slot.seq, l.layout->name);
  ac_work_finish(&l, &slot);
}

bool ac_work_probe_begin(struct ac_gpu_work *l, CUstream stream, bool per_thread) {
  l->n = l->judged_n = 0;
  l->graph = false;
  l->probe = true;
  l->records_reach = false;
  l->dst = l->src = 0;
  ac_model_enter();
  l->stream = ac_resolve_stream_locked(stream, per_thread, ac_thread_id()).stream;
  return l->stream && !l->stream->capturing && ac_model_alloc_count(ac_model) > 0;
}

bool ac_work_probe_end(struct ac_gpu_work *l) {
  ac_model_leave_as_is(); /* nothing changed */
  return l->n > 0;
}

bool ac_launch_probe(struct ac_gpu_work *l, CUfunction f, CUstream stream, bool per_thread,
                     void **params, void **extra) {
  l->layout = f ? ac_layout_of(f) : NULL;
  if (!l->layout || !l->layout->known) return false;
  l->operation = AC_WORK_KERNEL;
  l->host_is_legal = ac_concurrent_semantics();
  if (ac_work_probe_begin(l, stream, per_thread)) {
    scan_arguments(l, params, extra);
    scan_module_variables(l);
  }
  return ac_work_probe_end(l);
}

/* What an asynchronous copy-like call is, by its entry point's name. */
static enum ac_work_operation copy_operation(const char *api) {
  if (strstr(api, "Memset")) return AC_WORK_SET;
  if (strstr(api, "Value") || strstr(api, "BatchMemOp")) return AC_WORK_VALUE;
  return AC_WORK_COPY;
}

/* A copy's operands, given to its stream's work (model lock held). */
static void judge_operands(struct ac_gpu_work *l, uintptr_t dst, uintptr_t src) {
  l->dst = dst;
  l->src = src;
  if (dst)
    ac_work_judge_address(l, dst, NULL, -1, 0,
                          l->operation == AC_WORK_VALUE ? AC_VIA_ADDRESS : AC_VIA_DESTINATION);
  if (src) ac_work_judge_address(l, src, NULL, -1, 0, AC_VIA_SOURCE);
}

/* An asynchronous copy or set: its operands are given to the stream's work. */
void ac_on_copy(const char *api, CUstream stream, bool per_thread, uintptr_t dst, uintptr_t src) {
  struct ac_gpu_work l;
  struct ac_op_origin_slot slot;
  l.layout = NULL;
  l.operation = copy_operation(api);
  /* The driver copies HOST-attached memory itself: only AC301 applies. */
  if (ac_work_begin(&l, api, stream, per_thread, true, &slot)) judge_operands(&l, dst, src);
  ac_work_finish(&l, &slot);
}

bool ac_copy_probe(struct ac_gpu_work *l, const char *api, CUstream stream, bool per_thread,
                   uintptr_t dst, uintptr_t src) {
  l->layout = NULL;
  l->operation = copy_operation(api);
  l->host_is_legal = true;
  if (ac_work_probe_begin(l, stream, per_thread)) judge_operands(l, dst, src);
  return ac_work_probe_end(l);
}

/* The module's kernels end: the driver may give their handles again for
 * other kernels, whose layouts must be learned anew. A retired layout leaves
 * the table and answers no handle, but is not freed: a thread's last-used
 * pointer may still see it (about a kilobyte per kernel per unload). */
static void retire_layouts(uintptr_t module) {
  struct ac_layout *l, *tmp;
  ac_lock(AC_LOCK_layout);
  HASH_ITER(hh, layouts, l, tmp) {
    if (l->module != module) continue;
    HASH_DEL(layouts, l);
    __atomic_store_n(&l->handle, 0, __ATOMIC_RELEASE);
  }
  ac_unlock(AC_LOCK_layout);
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
