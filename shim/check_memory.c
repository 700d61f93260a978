/* check_memory.c - allocations: what the program made, what it freed, and
 * what an unknown pointer is.
 *
 * Allocations made through the wrappers are recorded with their stack. A
 * pointer the model does not know is asked of the driver once
 * (cuPointerGetAttributes, which answers zeros for a non-CUDA pointer) and
 * the answer is kept, except for pageable memory, which may be registered
 * later.
 */
#include <string.h>

#include "shim.h"

static void record(enum ac_mem_kind kind, bool learned, const char *api, CUdeviceptr base,
                   size_t size, unsigned flags, uintptr_t module, const char *name) {
  struct ac_alloc a;
  memset(&a, 0, sizeof a);
  a.base = (uintptr_t)base;
  a.size = size;
  a.kind = kind;
  a.learned = learned;
  a.default_flags = flags;
  a.assoc = flags == CU_MEM_ATTACH_HOST ? AC_ASSOC_HOST : AC_ASSOC_GLOBAL;
  a.module = module;
  if (name) strncpy(a.name, name, sizeof a.name - 1);
  if (api) {
    a.origin_api = api;
    a.origin_thread = ac_thread_id();
    ac_stack_capture(&a.origin_stack);
  }
  ac_model_enter();
  if (!ac_model_find_alloc_at(ac_model, a.base)) ac_model_add_alloc(ac_model, &a);
  if (kind == AC_MEM_MANAGED_VAR) ac_kernel_args_note_variable(module, a.base);
  ac_guard_refresh_locked(); /* a page it shares with forbidden memory is the CPU's again */
  ac_model_leave();
}

void ac_check_managed_allocated(const char *api, CUdeviceptr base, size_t size, unsigned flags) {
  record(AC_MEM_MANAGED, false, api, base, size, flags, 0, NULL);
}

void ac_check_managed_variable(const char *api, CUdeviceptr base, size_t size, uintptr_t module,
                               const char *name) {
  record(AC_MEM_MANAGED_VAR, false, api, base, size, CU_MEM_ATTACH_GLOBAL, module, name);
}

uint64_t ac_check_before_free(CUdeviceptr base) {
  ac_model_enter();
  struct ac_alloc *a = ac_model_find_alloc_at(ac_model, (uintptr_t)base);
  uint64_t serial = a ? a->serial : 0;
  if (a) ac_guard_retire_locked(a);
  ac_model_leave();
  return serial;
}

void ac_check_freed(CUdeviceptr base, uint64_t serial, CUresult result) {
  if (result != CUDA_SUCCESS || serial == 0) return;
  ac_model_enter();
  struct ac_alloc *a = ac_model_find_alloc_at(ac_model, (uintptr_t)base);
  if (a && a->serial == serial) ac_model_remove_alloc(ac_model, a);
  ac_guard_refresh_locked();
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
    record(kind, true, NULL, start, size, CU_MEM_ATTACH_GLOBAL, 0, NULL);
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
