/* gpu_work.h - what kernel_args.c shares with graph_args.c: kernel parameter
 * layouts, and the frame in which one piece of GPU work (a launch, a copy, a
 * graph launch) is enqueued and its memory judged (AC301, AC302).
 */
#ifndef AC_GPU_WORK_H
#define AC_GPU_WORK_H

#include <string.h>
#include <uthash.h>

#include "shim.h"

#define AC_MAX_PARAMS 128

/* A kernel's parameter layout, learned once per handle (kernel_args.c). */
struct ac_layout {
  uintptr_t handle;
  bool known;
  int count;
  uint32_t offset[AC_MAX_PARAMS], size[AC_MAX_PARAMS];
  uintptr_t module; /* CUmodule or CUlibrary, 0 if unknown */
  char name[96];
  UT_hash_handle hh;
};

/* f's layout (learned now if it was not), or NULL; lives as long as the process. */
const struct ac_layout *ac_layout_of(CUfunction f);
/* f's layout if it was learned already (at an accepted launch), else NULL. */
const struct ac_layout *ac_layout_known(CUfunction f);

/* Model lock held: the __managed__ variables of module (their count; *bases
 * valid until the model lock is released). */
size_t ac_module_variables(uintptr_t module, const uintptr_t **bases);

/* The argument buffer of CU_LAUNCH_PARAM_BUFFER_POINTER in extra, or NULL. */
static inline const unsigned char *ac_extra_buffer(void **extra, size_t *size) {
  const unsigned char *buffer = NULL;
  *size = 0;
  for (void **e = extra; e && *e != CU_LAUNCH_PARAM_END; e += 2) {
    if (e[0] == CU_LAUNCH_PARAM_BUFFER_POINTER)
      buffer = e[1];
    else if (e[0] == CU_LAUNCH_PARAM_BUFFER_SIZE && e[1])
      *size = *(size_t *)e[1];
  }
  return buffer;
}

/* fn for each pointer-sized, aligned word of each parameter of a launch
 * whose layout is lay, its arguments given as params or in extra's buffer:
 * the word (0 too), its parameter's index and its offset there. Inline, so
 * that each caller's fn is inlined into the walk. */
static inline void
ac_for_each_argument_word(const struct ac_layout *lay, void **params, void **extra,
                          void (*fn)(uintptr_t word, int param, size_t offset, void *ctx),
                          void *ctx) {
  size_t buffer_size = 0;
  const unsigned char *buffer = params ? NULL : ac_extra_buffer(extra, &buffer_size);
  for (int i = 0; i < lay->count; i++) {
    const unsigned char *p = NULL;
    if (params)
      p = params[i];
    else if (buffer && (size_t)lay->offset[i] + lay->size[i] <= buffer_size)
      p = buffer + lay->offset[i];
    for (size_t off = 0; p && off + sizeof(uintptr_t) <= lay->size[i]; off += sizeof(uintptr_t)) {
      uintptr_t word;
      memcpy(&word, p + off, sizeof word);
      fn(word, i, off, ctx);
    }
  }
}

/* Reading ahead of work (work_ahead.c): takes the model lock; whether memory
 * may be moved ahead of work on stream now - no capture is in progress, whose
 * graph the prefetch could join or break. ac_ahead_end releases the lock and
 * enqueues b's prefetches on stream, whatever begin said. */
bool ac_ahead_begin(CUstream stream, bool per_thread);
void ac_ahead_end(const struct ac_guard_ahead *b, CUstream stream, bool per_thread);

/* The first byte one side of a 3D copy touches, by its memory type: HOST is
 * the host pointer, DEVICE and UNIFIED the device pointer (UNIFIED: a unified
 * pointer, host or device); arrays are never managed memory. */
static inline uintptr_t ac_copy_side(CUmemorytype type, const void *host, CUdeviceptr device,
                                     size_t offset) {
  uintptr_t base = 0;
  if (type == CU_MEMORYTYPE_HOST)
    base = (uintptr_t)host;
  else if (type == CU_MEMORYTYPE_DEVICE || type == CU_MEMORYTYPE_UNIFIED)
    base = device;
  return base ? base + offset : 0;
}
#define AC_SIDE_2D(p, s)                                                                           \
  ac_copy_side((p)->s##MemoryType, (p)->s##Host, (p)->s##Device,                                   \
               (p)->s##Y *(p)->s##Pitch + (p)->s##XInBytes)
#define AC_SIDE_3D(p, s)                                                                           \
  ac_copy_side((p)->s##MemoryType, (p)->s##Host, (p)->s##Device,                                   \
               ((p)->s##Z * (p)->s##Height + (p)->s##Y) * (p)->s##Pitch + (p)->s##XInBytes)

/* One finding per allocation the work may not be given: two wrong buffers
 * are two problems to fix. */
#define AC_MAX_WORK_FINDINGS 8

/* One piece of GPU work being judged, from ac_work_begin to ac_work_finish. */
struct ac_gpu_work {
  const char *api;
  struct ac_stream *stream;
  bool host_is_legal;
  bool records_reach; /* device semantics: what the work may touch is recorded */
  bool graph;         /* a graph launch: its nodes' uses are judged */
  bool probe;         /* judged before the launch, nothing recorded (--on-error repair) */
  const struct ac_layout *layout;
  struct ac_launch_dims dims;       /* a launch's */
  enum ac_work_operation operation; /* what the work (or the graph node being judged) is */
  uintptr_t dst, src;               /* a copy's operands */
  struct ac_finding findings[AC_MAX_WORK_FINDINGS];
  int n;
  uint64_t judged[AC_MAX_WORK_FINDINGS * 2]; /* allocations already judged */
  int judged_n;
  void *const *ret_slot; /* the program's return address, for its stack (stack.c); or NULL */
};

/* Whether HOST-attached memory may be given to kernels: `device` semantics on
 * devices with concurrent managed access. */
bool ac_concurrent_semantics(void);

/* Enqueues the work on its stream and takes the model lock; true if its
 * memory is to be judged (a stream that runs it now, managed memory to judge). */
bool ac_work_begin(struct ac_gpu_work *l, const char *api, CUstream stream, bool per_thread,
                   bool host_is_legal, struct ac_op_origin_slot *slot);
/* A probe's frame (--on-error repair): the model lock taken, the stream
 * resolved, nothing recorded; true when there is memory to judge. The end
 * releases the lock; true when something was found. */
bool ac_work_probe_begin(struct ac_gpu_work *l, CUstream stream, bool per_thread);
bool ac_work_probe_end(struct ac_gpu_work *l);
/* Judges a launch before it is made, recording nothing: l's findings are
 * what the launch would be found to break (--on-error repair). False when
 * there is nothing to judge. No lock held. */
bool ac_launch_probe(struct ac_gpu_work *l, CUfunction f, CUstream stream, bool per_thread,
                     void **params, void **extra);
/* The same for an asynchronous copy, set or stream memory operation. */
bool ac_copy_probe(struct ac_gpu_work *l, const char *api, CUstream stream, bool per_thread,
                   uintptr_t dst, uintptr_t src);
/* The same for a graph launch: its nodes' uses (graph_args.c). */
bool ac_graph_launch_probe(struct ac_gpu_work *l, CUgraphExec exec, CUstream stream,
                           bool per_thread);
/* Refreshes the guard, releases the lock, and reports what was found. */
void ac_work_finish(struct ac_gpu_work *l, const struct ac_op_origin_slot *slot);
/* The work is given a, through addr (model lock held). */
void ac_work_judge_use(struct ac_gpu_work *l, struct ac_alloc *a, uintptr_t addr,
                       const char *kernel, int param, size_t offset, enum ac_work_via via);

/* The allocation at addr if the work's use of it needs judging or recording;
 * model lock held. Never-attached GLOBAL memory breaks no device rule, and
 * under strict semantics there is no reach to record either, so its record
 * need not be read: the common case, kept small enough to inline. */
static inline struct ac_alloc *ac_work_allocation(const struct ac_gpu_work *l, uintptr_t addr) {
  if (!l->records_reach && !ac_model_may_need_judging(ac_model, addr)) return NULL;
  bool plain;
  struct ac_alloc *a = ac_model_find_alloc_plain(ac_model, addr, &plain);
  return !a || (plain && !l->records_reach) ? NULL : a;
}

/* One address the work is given; model lock held. */
static inline void ac_work_judge_address(struct ac_gpu_work *l, uintptr_t addr, const char *kernel,
                                         int param, size_t offset, enum ac_work_via via) {
  struct ac_alloc *a = ac_work_allocation(l, addr);
  if (a) ac_work_judge_use(l, a, addr, kernel, param, offset, via);
}

#endif
