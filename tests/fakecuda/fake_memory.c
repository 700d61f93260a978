/* fake_memory.c - managed, device and pinned memory, and pointer attributes.
 *
 * As on the real driver (docs/driver-facts.md): a large managed allocation is
 * 2 MiB-aligned; small ones are sub-allocated 512 bytes apart from a shared
 * 2 MiB region, so they share pages. Device memory is address space the host
 * cannot touch (PROT_NONE), so a host access crashes as it would on a GPU.
 */
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "fake.h"

#define REGION (2u << 20)
#define SMALL_LIMIT 4096u
#define SMALL_STEP 512u

static struct fake_alloc *allocs;
static uintptr_t small_next, small_end;

static void *map_aligned(size_t bytes, int prot) {
  size_t len = bytes + REGION;
  char *raw = mmap(NULL, len, prot, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (raw == MAP_FAILED) return NULL;
  uintptr_t aligned = ((uintptr_t)raw + REGION - 1) & ~(uintptr_t)(REGION - 1);
  if (aligned > (uintptr_t)raw) munmap(raw, aligned - (uintptr_t)raw);
  uintptr_t end = aligned + bytes, raw_end = (uintptr_t)raw + len;
  if (raw_end > end) munmap((void *)end, raw_end - end);
  return (void *)aligned;
}

/* Rounds up to the page size of the machine: 4 KiB on x86-64, 4, 16 or
 * 64 KiB on aarch64 kernels (Jetson and Grace kernels often use 64 KiB). */
static size_t page_round(size_t n) {
  static size_t page;
  if (!page) page = (size_t)sysconf(_SC_PAGESIZE);
  return (n + page - 1) & ~(page - 1);
}

static CUresult record(uintptr_t base, size_t size, enum fake_mem_kind kind, unsigned assoc) {
  struct fake_alloc *a = calloc(1, sizeof *a);
  if (!a) return CUDA_ERROR_OUT_OF_MEMORY;
  a->base = base;
  a->size = size;
  a->kind = kind;
  a->assoc = assoc;
  a->next = allocs;
  allocs = a;
  return CUDA_SUCCESS;
}

struct fake_alloc *fake_find_alloc(uintptr_t addr) {
  for (struct fake_alloc *a = allocs; a; a = a->next)
    if (addr >= a->base && addr - a->base < a->size) return a;
  return NULL;
}

static uintptr_t take_small(size_t bytes) {
  size_t step = (bytes + SMALL_STEP - 1) & ~(size_t)(SMALL_STEP - 1);
  if (small_next == 0 || small_next + step > small_end) {
    void *region = map_aligned(REGION, PROT_READ | PROT_WRITE);
    if (!region) return 0;
    fake_managed_mapped((uintptr_t)region, REGION);
    small_next = (uintptr_t)region;
    small_end = small_next + REGION;
  }
  uintptr_t p = small_next;
  small_next += step;
  return p;
}

/* The range the last large managed allocation freed: like the real driver,
 * the next one of its size gets its address again (when nothing else took
 * it). Caller holds fake_lock. */
static uintptr_t freed_base;
static size_t freed_len;

static void *map_managed(size_t len) {
  if (freed_len == len) {
    void *again = mmap((void *)freed_base, len, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED_NOREPLACE, -1, 0);
    freed_len = 0;
    if (again == (void *)freed_base) return again;
    if (again != MAP_FAILED) munmap(again, len); /* a kernel that took the address as a hint */
  }
  return map_aligned(len, PROT_READ | PROT_WRITE);
}

CUresult fake_alloc_managed(CUdeviceptr *dptr, size_t bytes, unsigned assoc) {
  uintptr_t p;
  if (bytes <= SMALL_LIMIT) {
    p = take_small(bytes);
  } else {
    void *m = map_managed(page_round(bytes));
    p = (uintptr_t)m;
    if (m) fake_managed_mapped(p, page_round(bytes));
  }
  if (!p) return CUDA_ERROR_OUT_OF_MEMORY;
  CUresult r = record(p, bytes, FAKE_MANAGED, assoc);
  if (r == CUDA_SUCCESS) *dptr = p;
  return r;
}

FAKE_EXPORT CUresult cuMemAllocManaged(CUdeviceptr *dptr, size_t bytesize, unsigned int flags) {
  if (!fake_initialized) return CUDA_ERROR_NOT_INITIALIZED;
  if (!dptr || bytesize == 0) return CUDA_ERROR_INVALID_VALUE;
  if (flags != CU_MEM_ATTACH_GLOBAL && flags != CU_MEM_ATTACH_HOST) return CUDA_ERROR_INVALID_VALUE;
  pthread_mutex_lock(&fake_lock);
  CUresult r = fake_alloc_managed(dptr, bytesize, flags);
  pthread_mutex_unlock(&fake_lock);
  return r;
}

FAKE_EXPORT CUresult cuMemAlloc_v2(CUdeviceptr *dptr, size_t bytesize) {
  if (!fake_initialized) return CUDA_ERROR_NOT_INITIALIZED;
  if (!dptr || bytesize == 0) return CUDA_ERROR_INVALID_VALUE;
  void *m = map_aligned(page_round(bytesize), PROT_NONE);
  if (!m) return CUDA_ERROR_OUT_OF_MEMORY;
  pthread_mutex_lock(&fake_lock);
  CUresult r = record((uintptr_t)m, bytesize, FAKE_DEVICE, 0);
  pthread_mutex_unlock(&fake_lock);
  if (r == CUDA_SUCCESS) *dptr = (CUdeviceptr)m;
  return r;
}

FAKE_EXPORT CUresult cuMemHostAlloc(void **pp, size_t bytesize, unsigned int flags) {
  (void)flags;
  if (!fake_initialized) return CUDA_ERROR_NOT_INITIALIZED;
  if (!pp || bytesize == 0) return CUDA_ERROR_INVALID_VALUE;
  void *m = map_aligned(page_round(bytesize), PROT_READ | PROT_WRITE);
  if (!m) return CUDA_ERROR_OUT_OF_MEMORY;
  pthread_mutex_lock(&fake_lock);
  CUresult r = record((uintptr_t)m, bytesize, FAKE_PINNED, 0);
  pthread_mutex_unlock(&fake_lock);
  if (r == CUDA_SUCCESS) *pp = m;
  return r;
}

static CUresult release(uintptr_t base, enum fake_mem_kind kind) {
  pthread_mutex_lock(&fake_lock);
  struct fake_alloc **link = &allocs, *a;
  while ((a = *link) && !(a->base == base && a->kind == kind))
    link = &a->next;
  if (a) *link = a->next;
  if (a && a->kind == FAKE_MANAGED && a->size > SMALL_LIMIT) {
    freed_base = a->base;
    freed_len = page_round(a->size);
  }
  pthread_mutex_unlock(&fake_lock);
  if (!a) return CUDA_ERROR_INVALID_VALUE;
  /* Small managed slots are not reused, so stale pointers stay recognisable. */
  if (a->kind != FAKE_MANAGED || a->size > SMALL_LIMIT) {
    if (a->kind == FAKE_MANAGED) fake_managed_unmapped(a->base);
    munmap((void *)a->base, page_round(a->size));
  }
  free(a);
  return CUDA_SUCCESS;
}

static enum fake_mem_kind kind_of(CUdeviceptr dptr) {
  pthread_mutex_lock(&fake_lock);
  struct fake_alloc *a = fake_find_alloc(dptr);
  enum fake_mem_kind kind = a ? a->kind : FAKE_DEVICE;
  pthread_mutex_unlock(&fake_lock);
  return kind;
}

FAKE_EXPORT CUresult cuMemFree_v2(CUdeviceptr dptr) {
  if (!fake_initialized) return CUDA_ERROR_NOT_INITIALIZED;
  if (dptr == 0) return CUDA_SUCCESS;
  enum fake_mem_kind kind = kind_of(dptr);
  if (kind == FAKE_PINNED) return CUDA_ERROR_INVALID_VALUE;
  return release(dptr, kind);
}

CUresult fake_free_internal(CUdeviceptr dptr) {
  return release(dptr, kind_of(dptr));
}

/* Every mapping goes, the shared regions of small allocations too, so the
 * next context's allocations may land on the same addresses (they do on the
 * real driver). */
void fake_memory_end_all(void) {
  pthread_mutex_lock(&fake_lock);
  struct fake_alloc *a = allocs;
  allocs = NULL;
  small_next = small_end = 0;
  pthread_mutex_unlock(&fake_lock);
  while (a) {
    struct fake_alloc *next = a->next;
    if (a->kind == FAKE_MANAGED && a->size <= SMALL_LIMIT)
      munmap((void *)(a->base & ~(uintptr_t)(REGION - 1)), REGION);
    else
      munmap((void *)a->base, page_round(a->size));
    free(a);
    a = next;
  }
}

FAKE_EXPORT CUresult cuMemFreeHost(void *p) {
  if (!fake_initialized) return CUDA_ERROR_NOT_INITIALIZED;
  return release((uintptr_t)p, FAKE_PINNED);
}

/* One attribute of a known allocation; false if the attribute is not modelled. */
static bool attribute_of(const struct fake_alloc *a, CUpointer_attribute attr, void *data) {
  switch (attr) {
  case CU_POINTER_ATTRIBUTE_IS_MANAGED:
    *(unsigned *)data = a && a->kind == FAKE_MANAGED;
    return true;
  case CU_POINTER_ATTRIBUTE_MEMORY_TYPE:
    *(unsigned *)data = !a ? 0 : a->kind == FAKE_PINNED ? CU_MEMORYTYPE_HOST : CU_MEMORYTYPE_DEVICE;
    return true;
  case CU_POINTER_ATTRIBUTE_RANGE_START_ADDR:
    *(CUdeviceptr *)data = a ? a->base : 0;
    return true;
  case CU_POINTER_ATTRIBUTE_RANGE_SIZE:
    *(size_t *)data = a ? a->size : 0;
    return true;
  case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL:
    *(int *)data = a ? 0 : -2;
    return true;
  default:
    return false;
  }
}

FAKE_EXPORT CUresult cuPointerGetAttribute(void *data, CUpointer_attribute attribute,
                                           CUdeviceptr ptr) {
  if (!fake_initialized) return CUDA_ERROR_NOT_INITIALIZED;
  if (!data) return CUDA_ERROR_INVALID_VALUE;
  pthread_mutex_lock(&fake_lock);
  struct fake_alloc *a = fake_find_alloc(ptr);
  bool known = a && attribute_of(a, attribute, data);
  pthread_mutex_unlock(&fake_lock);
  return known ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

/* docs/driver-facts.md: the plural form succeeds on a pointer the driver does not
 * know, with every attribute zeroed. */
FAKE_EXPORT CUresult cuPointerGetAttributes(unsigned int numAttributes,
                                            CUpointer_attribute *attributes, void **data,
                                            CUdeviceptr ptr) {
  if (!fake_initialized) return CUDA_ERROR_NOT_INITIALIZED;
  if (!attributes || !data) return CUDA_ERROR_INVALID_VALUE;
  pthread_mutex_lock(&fake_lock);
  struct fake_alloc *a = fake_find_alloc(ptr);
  for (unsigned i = 0; i < numAttributes; i++) {
    if (!data[i]) continue;
    if (!attribute_of(a, attributes[i], data[i])) memset(data[i], 0, sizeof(unsigned));
  }
  pthread_mutex_unlock(&fake_lock);
  return CUDA_SUCCESS;
}
