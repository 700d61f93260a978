/* check_memory.c - allocations: what the program made, what it freed, and
 * what an unknown pointer is.
 *
 * Allocations made through the wrappers are recorded with their stack. A
 * pointer the model does not know is asked of the driver once
 * (cuPointerGetAttributes, which answers zeros for a non-CUDA pointer) and
 * the answer is kept, except for pageable memory, which may be registered
 * later.
 */
#include <stdlib.h>
#include <string.h>

#include "grow.h"
#include "shim.h"
#include "stack_depot.h"

/* ret_slot: where the program's return address lies, when an entry point
 * of its own made the memory (its stack is then kept per call site). */
static void record(void *const *ret_slot, enum ac_mem_kind kind, bool learned, const char *api,
                   CUdeviceptr base, size_t size, unsigned flags, uintptr_t module,
                   const char *name) {
  struct ac_alloc a;
  struct ac_stack stack = {0, {0}};
  ac_stack_id stack_id = 0;
  memset(&a, 0, sizeof a);
  a.base = (uintptr_t)base;
  a.size = size;
  a.kind = (uint8_t)kind;
  a.learned = learned;
  a.default_flags = (uint8_t)flags;
  a.assoc = flags == CU_MEM_ATTACH_HOST ? AC_ASSOC_HOST : AC_ASSOC_GLOBAL;
  if (api) {
    a.origin_thread = (uint32_t)ac_thread_id();
    if (ret_slot)
      ac_stack_capture_site(&stack, ret_slot, &stack_id);
    else
      ac_stack_capture(&stack);
  }
  ac_model_enter();
  a.origin_api = ac_api_intern(api); /* its table is under the model lock */
  /* The same live record again (a __managed__ variable looked up twice) is
   * kept with its state; any other record over this range is stale: the
   * driver has just handed the range out. */
  struct ac_alloc *known = ac_model_find_alloc_at(ac_model, a.base);
  if (!known || known->size != a.size || known->kind != kind || known->retiring) {
    ac_model_forget_overlapping(ac_model, a.base, a.size);
    a.origin_stack = ac_stack_store(&stack, stack_id); /* the depot is under the model lock */
    struct ac_alloc *added = ac_model_add_alloc(ac_model, &a);
    if (added && (module || name)) ac_model_name_alloc(ac_model, added, module, name);
    if (added && ac_alloc_is_managed(added)) ac_guard_allocated_locked(added);
  }
  if (kind == AC_MEM_MANAGED_VAR) ac_kernel_args_note_variable(module, a.base);
  ac_model_leave();
}

void ac_check_managed_allocated(void *const *ret_slot, const char *api, CUdeviceptr base,
                                size_t size, unsigned flags) {
  record(ret_slot, AC_MEM_MANAGED, false, api, base, size, flags, 0, NULL);
}

void ac_check_managed_variable(const char *api, CUdeviceptr base, size_t size, uintptr_t module,
                               const char *name) {
  record(NULL, AC_MEM_MANAGED_VAR, false, api, base, size, CU_MEM_ATTACH_GLOBAL, module, name);
}

void ac_check_advised(const char *api, CUdeviceptr addr, CUmem_advise advice) {
  ac_model_enter();
  ac_history_advice(ac_model, (uintptr_t)addr, (unsigned)advice, api, ac_thread_id());
  struct ac_alloc *a = ac_model_find_alloc(ac_model, (uintptr_t)addr);
  if (a) a->advised = true; /* its placement is the program's: the guard moves it nowhere */
  ac_model_leave();
}

void ac_check_prefetched(CUdeviceptr addr, size_t count, CUmemLocation where) {
  ac_model_enter();
  struct ac_alloc *a = ac_model_find_alloc(ac_model, (uintptr_t)addr);
  if (a && count) {
    ac_model_note_prefetch(a, (uintptr_t)addr, (uintptr_t)addr + count, (int)where.type, where.id);
    if (where.type != CU_MEM_LOCATION_TYPE_DEVICE) ac_guard_ahead_placed_locked(a);
  }
  ac_model_leave_as_is();
}

/* What the driver would answer for the program's own prefetches of a, over
 * [start, end): where the last one that covered those bytes went, else none
 * (a range the program prefetched in parts is answered as none). */
static void program_prefetch(const struct ac_alloc *a, uintptr_t start, uintptr_t end, int *type,
                             int *id) {
  const struct ac_alloc_more *m = a->more;
  bool covered = m && m->prefetch_end && m->prefetch_start <= start && end <= m->prefetch_end;
  *type = covered ? m->prefetch_type : CU_MEM_LOCATION_TYPE_INVALID;
  *id = covered ? m->prefetch_id : 0;
}

void ac_check_prefetch_answer(void *data, size_t size, CUmem_range_attribute attr, CUdeviceptr addr,
                              size_t count) {
  bool device_form = attr == CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION;
  if (!data || size != sizeof(int) || !count ||
      (!device_form && attr != CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION_TYPE))
    return;
  uintptr_t start = (uintptr_t)addr, end = start + count;
  ac_model_enter();
  const struct ac_alloc *a = ac_model_find_alloc(ac_model, start);
  if (a && a->ahead_last && end <= a->base + a->size) {
    int type, id;
    program_prefetch(a, start, end, &type, &id);
    int answer = type;
    if (device_form)
      answer = type == CU_MEM_LOCATION_TYPE_DEVICE    ? id
               : type == CU_MEM_LOCATION_TYPE_INVALID ? CU_DEVICE_INVALID
                                                      : CU_DEVICE_CPU; /* the host, a NUMA node */
    memcpy(data, &answer, sizeof answer);
  }
  ac_model_leave_as_is();
}

/* The record a free of base ends: the one starting there, else one the model
 * learned that holds it (the driver's range may start before the pointer the
 * program frees; a learned record is learned again when needed). */
static struct ac_alloc *freed_record_locked(CUdeviceptr base) {
  struct ac_alloc *a = ac_model_find_alloc_at(ac_model, (uintptr_t)base);
  if (!a && base && (a = ac_model_find_alloc(ac_model, (uintptr_t)base)) && !a->learned) a = NULL;
  return a;
}

uint64_t ac_check_before_free(CUdeviceptr base) {
  ac_model_enter();
  struct ac_alloc *a = freed_record_locked(base);
  uint64_t serial = a ? a->serial : 0;
  if (a) ac_guard_retire_locked(a);
  ac_model_leave();
  return serial;
}

void ac_check_freed(CUdeviceptr base, uint64_t serial, CUresult result) {
  if (result != CUDA_SUCCESS || serial == 0) return;
  ac_model_enter();
  struct ac_alloc *a = freed_record_locked(base);
  if (a && a->serial == serial) ac_model_remove_alloc(ac_model, a);
  ac_model_leave();
}

/* Asks the driver what ptr is, and records what it learned. */
static enum ac_mem_kind learn(CUdeviceptr ptr) {
  unsigned is_managed = 0, memory_type = 0;
  CUdeviceptr start = 0;
  size_t size = 0;
  CUpointer_attribute attrs[] = {CU_POINTER_ATTRIBUTE_IS_MANAGED, CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
                                 CU_POINTER_ATTRIBUTE_RANGE_START_ADDR,
                                 CU_POINTER_ATTRIBUTE_RANGE_SIZE};
  void *data[] = {&is_managed, &memory_type, &start, &size};
  if (!ac_real.cuPointerGetAttributes ||
      ac_real.cuPointerGetAttributes(4, attrs, data, ptr) != CUDA_SUCCESS)
    return AC_MEM_PAGEABLE;
  enum ac_mem_kind kind = is_managed                             ? AC_MEM_MANAGED
                          : memory_type == CU_MEMORYTYPE_DEVICE  ? AC_MEM_DEVICE
                          : memory_type == CU_MEMORYTYPE_HOST    ? AC_MEM_PINNED
                          : memory_type == CU_MEMORYTYPE_UNIFIED ? AC_MEM_MANAGED
                                                                 : AC_MEM_PAGEABLE;
  if (kind != AC_MEM_PAGEABLE && start && size)
    record(NULL, kind, true, NULL, start, size, CU_MEM_ATTACH_GLOBAL, 0, NULL);
  return kind;
}

enum ac_mem_kind ac_check_classify(CUdeviceptr ptr) {
  if (ptr == 0) return AC_MEM_NULL;
  ac_model_enter();
  struct ac_alloc *a = ac_model_find_alloc(ac_model, (uintptr_t)ptr);
  enum ac_mem_kind kind = a ? a->kind : AC_MEM_PAGEABLE;
  ac_model_leave();
  return a ? kind : learn(ptr);
}

void ac_check_reset_after_fork(void) {
  /* A forked child cannot use CUDA, and UVM unmaps managed memory there. */
  if (!ac_model) return;
  ac_model_destroy(ac_model);
  ac_model = ac_model_create();
}

/* ---- lifetimes that end many allocations at once ----
 * A module's (or library's) __managed__ variables end with it, a mapping of
 * virtual memory with cuMemUnmap or cuMemAddressFree, and every allocation
 * with the process's last context; the driver hands out those addresses
 * again, so the model forgets them. As with cuMemFree, the page guard lets go
 * of them before the driver call (ac_guard_retire_locked's reason), and they
 * are forgotten once it succeeded. */

struct doomed {
  struct ac_alloc **a;
  size_t n, cap;
  uintptr_t module;    /* the variables of this module, or */
  uintptr_t base, end; /* the records overlapping [base, end) made by serial upto, or */
  uint64_t upto;       /* (neither) every allocation */
};

static bool doomed_one(const struct ac_alloc *a, const struct doomed *d) {
  if (d->module) return a->kind == AC_MEM_MANAGED_VAR && ac_alloc_module(a) == d->module;
  if (d->end) return a->base < d->end && a->base + a->size > d->base && a->serial <= d->upto;
  return true;
}

static void collect_doomed(struct ac_alloc *a, void *ctx) {
  struct doomed *d = ctx;
  if (doomed_one(a, d) && AC_GROW(d->a, d->n, d->cap, 16)) d->a[d->n++] = a;
}

/* Model lock held: retires (before the call) or forgets (after) the
 * allocations d names; returns the largest serial among them. */
static uint64_t end_allocations_locked(struct doomed *d, bool forget) {
  uint64_t last = 0;
  ac_model_for_each_alloc(ac_model, collect_doomed, d);
  for (size_t i = 0; i < d->n; i++) {
    if (d->a[i]->serial > last) last = d->a[i]->serial;
    if (forget)
      ac_model_remove_alloc(ac_model, d->a[i]);
    else
      ac_guard_retire_locked(d->a[i]);
  }
  free(d->a);
  return last;
}

static struct doomed range(uintptr_t base, size_t size, uint64_t upto) {
  return (struct doomed){.base = base, .end = base + size, .upto = upto};
}

uint64_t ac_check_before_range_end(CUdeviceptr base, size_t size) {
  if (!base || !size) return 0;
  struct doomed d = range(base, size, UINT64_MAX);
  ac_model_enter();
  uint64_t last = end_allocations_locked(&d, false);
  ac_model_leave();
  return last;
}

void ac_check_range_ended(CUdeviceptr base, size_t size, uint64_t serial, CUresult result) {
  if (result != CUDA_SUCCESS || serial == 0) return;
  struct doomed d = range(base, size, serial); /* not what was made there since */
  ac_model_enter();
  end_allocations_locked(&d, true);
  ac_model_leave();
}

void ac_check_before_module_unload(uintptr_t module) {
  if (!module) return;
  struct doomed d = {.module = module};
  ac_model_enter();
  end_allocations_locked(&d, false);
  ac_model_leave();
}

void ac_check_module_unloaded(uintptr_t module, CUresult result) {
  if (!module || result != CUDA_SUCCESS) return;
  struct doomed d = {.module = module};
  ac_model_enter();
  end_allocations_locked(&d, true);
  ac_kernel_args_forget_module(module);
  ac_model_leave();
}

/* Contexts the program holds, as far as the shim saw them made: those of
 * cuCtxCreate, and each device's primary context while retained. Model lock. */
#define AC_MAX_DEVICES 64
static int created_contexts;
static int primary_refs[AC_MAX_DEVICES];

void ac_check_context_created(void) {
  ac_model_enter();
  created_contexts++;
  ac_model_leave();
}

void ac_check_primary_retained(CUdevice dev) {
  if (dev < 0 || dev >= AC_MAX_DEVICES) return;
  ac_model_enter();
  primary_refs[dev]++;
  ac_model_leave();
}

/* The contexts left once the call has ended one. A reset ends the primary
 * context's state but not its retains (the driver documents that the
 * program still releases it), so it counts here and not in the counts. An
 * end the shim did not see begin (a context made before it started) counts
 * as the last one's. */
static int live_after_end_locked(enum ac_ctx_end how, CUdevice dev) {
  int n = how == AC_CTX_DESTROY && created_contexts > 0 ? created_contexts - 1 : created_contexts;
  for (int d = 0; d < AC_MAX_DEVICES; d++) {
    int refs = primary_refs[d];
    if (d == dev && how == AC_CTX_RELEASE && refs > 0) refs--;
    if (d == dev && how == AC_CTX_RESET) refs = 0;
    n += refs > 0;
  }
  return n;
}

static void count_end_locked(enum ac_ctx_end how, CUdevice dev) {
  if (how == AC_CTX_DESTROY && created_contexts > 0)
    created_contexts--;
  else if (how == AC_CTX_RELEASE && dev >= 0 && dev < AC_MAX_DEVICES && primary_refs[dev] > 0)
    primary_refs[dev]--;
}

bool ac_check_before_context_end(enum ac_ctx_end how, CUdevice dev) {
  ac_model_enter();
  bool last = live_after_end_locked(how, dev) == 0;
  struct doomed every = {0};
  if (last) end_allocations_locked(&every, false);
  ac_model_leave();
  return last;
}

void ac_check_context_ended(enum ac_ctx_end how, CUdevice dev, bool last, CUresult result) {
  if (result != CUDA_SUCCESS) return;
  ac_model_enter();
  count_end_locked(how, dev);
  if (last) {
    struct doomed every = {0};
    end_allocations_locked(&every, true);
    ac_check_streams_ended_locked();
  }
  ac_model_leave();
}
