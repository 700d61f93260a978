/* fake_memory.c - managed, device and pinned memory, and pointer attributes;
 * registered host memory, placement advice, stream-ordered allocations, IPC handles and the
 * virtual memory calls (reserve, create, map, unmap) as far as the scenarios
 * use them.
 *
 * As on the real driver (docs/driver-facts.md): a large managed allocation is
 * 2 MiB-aligned; small ones are sub-allocated 512 bytes apart from a shared
 * 2 MiB region, so they share pages. Device memory is address space the host
 * cannot touch (PROT_NONE), so a host access crashes as it would on a GPU.
 */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "fake.h"

#define REGION (2u << 20)
#define SMALL_LIMIT 4096u
#define SMALL_STEP 512u

static struct fake_alloc *allocs, *by_base;
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

static struct fake_alloc *record_mapped(uintptr_t base, size_t size, enum fake_mem_kind kind,
                                        unsigned assoc, enum fake_mapping mapping) {
  struct fake_alloc *a = calloc(1, sizeof *a);
  if (!a) return NULL;
  a->base = base;
  a->size = size;
  a->kind = kind;
  a->assoc = assoc;
  a->mapping = mapping;
  DL_PREPEND(allocs, a);
  HASH_ADD(hh, by_base, base, sizeof a->base, a);
  return a;
}

static CUresult record(uintptr_t base, size_t size, enum fake_mem_kind kind, unsigned assoc) {
  return record_mapped(base, size, kind, assoc, FAKE_MAPPED_BY_DRIVER) ? CUDA_SUCCESS
                                                                       : CUDA_ERROR_OUT_OF_MEMORY;
}

void fake_for_each_alloc(void (*fn)(const struct fake_alloc *a, void *ctx), void *ctx) {
  for (struct fake_alloc *a = allocs; a; a = a->next)
    fn(a, ctx);
}

/* A base is found at once (a program passing the pointers it got, as most
 * calls do, costs what it does with the real driver, whatever is alive);
 * an address inside an allocation is searched for. */
struct fake_alloc *fake_find_alloc(uintptr_t addr) {
  struct fake_alloc *a;
  HASH_FIND(hh, by_base, &addr, sizeof addr, a);
  if (a) return a;
  for (a = allocs; a; a = a->next)
    if (addr >= a->base && addr - a->base < a->size) return a;
  return NULL;
}

/* The next region of small allocations, above the last one, as the real
 * driver's came (three 2 MiB mappings in a row, docs/driver-facts.md), so
 * that small allocations come in address order: regions are carved upwards
 * from one span of address space reserved at the first; past its end,
 * anywhere. */
#define SMALL_SPAN ((size_t)4 << 30)
static uintptr_t span_next, span_end;

static void *next_small_region(void) {
  if (!span_end) {
    void *span = map_aligned(SMALL_SPAN, PROT_NONE);
    span_next = (uintptr_t)span;
    span_end = span ? span_next + SMALL_SPAN : 1;
  }
  if (span_next && span_next + REGION <= span_end) {
    void *p = mmap((void *)span_next, REGION, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED, -1, 0);
    if (p != MAP_FAILED) {
      span_next += REGION;
      return p;
    }
  }
  return map_aligned(REGION, PROT_READ | PROT_WRITE);
}

/* FAKECUDA_REUSE_SMALL=1: the slot of the small allocation freed last is
 * handed out again to the next one of its size, as the real driver does in
 * a loop that makes and frees a temporary (docs/driver-facts.md). Off by
 * default: stale pointers stay recognisable. Caller holds fake_lock. */
static uintptr_t small_freed_base;
static size_t small_freed_step;

/* Whether the environment sets name to 1, read once into *cached (-1 unread). */
static bool env_flag(const char *name, int *cached) {
  if (*cached < 0) {
    const char *v = getenv(name);
    *cached = v && strcmp(v, "1") == 0;
  }
  return *cached;
}

static bool reuse_small(void) {
  static int reuse = -1;
  return env_flag("FAKECUDA_REUSE_SMALL", &reuse);
}

static uintptr_t take_small(size_t bytes) {
  size_t step = (bytes + SMALL_STEP - 1) & ~(size_t)(SMALL_STEP - 1);
  if (small_freed_base && small_freed_step == step) {
    uintptr_t p = small_freed_base;
    small_freed_base = 0;
    return p;
  }
  if (small_next == 0 || small_next + step > small_end) {
    void *region = next_small_region();
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

/* FAKECUDA_SHARED_CHUNKS=1: a large managed allocation is mapped as the real
 * driver maps it (docs/driver-facts.md): address space reserved first, then
 * a fixed, shared mapping of a file over it, in whole 2 MiB chunks, made
 * inside cuMemAllocManaged; its free maps inaccessible anonymous memory over
 * the chunks, and the next allocation of its size maps a file there again.
 * Off by default: shared memory is the child's too after a fork. */
static bool shared_chunks(void) {
  static int shared = -1;
  return env_flag("FAKECUDA_SHARED_CHUNKS", &shared);
}

static size_t chunk_round(size_t n) {
  return (n + REGION - 1) & ~(size_t)(REGION - 1);
}

/* A file mapped at reserved address space (the descriptor closed again: the
 * mapping holds the file). */
static void *map_file_at(uintptr_t at, size_t len) {
  int fd = memfd_create("fakecuda-managed", MFD_CLOEXEC);
  if (fd < 0) return NULL;
  void *p = MAP_FAILED;
  if (ftruncate(fd, (off_t)len) == 0)
    p = mmap((void *)at, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, fd, 0);
  close(fd);
  return p == MAP_FAILED ? NULL : p;
}

static void *map_managed_shared(size_t len) {
  size_t chunks = chunk_round(len);
  uintptr_t at = freed_len == len ? freed_base : 0;
  freed_len = 0;
  if (!at) {
    void *reserved = map_aligned(chunks, PROT_NONE);
    if (!reserved) return NULL;
    at = (uintptr_t)reserved;
  }
  return map_file_at(at, chunks);
}

static void unmap_managed_shared(uintptr_t base, size_t len) {
  mmap((void *)base, chunk_round(len), PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
}

static void *map_managed(size_t len) {
  if (shared_chunks()) return map_managed_shared(len);
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
  fake_tegra_changed(); /* globally attached: the GPU's while any stream works */
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

/* Device memory: address space the host cannot touch. cuMemAlloc's, a
 * stream-ordered allocation's, a graph allocation node's and an imported IPC
 * handle's (the driver calls no export of its own). */
CUresult fake_alloc_device(CUdeviceptr *dptr, size_t bytesize) {
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

FAKE_EXPORT CUresult cuMemAlloc_v2(CUdeviceptr *dptr, size_t bytesize) {
  return fake_alloc_device(dptr, bytesize);
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

/* Ends the allocation of kind at base; with mapping, only one mapped so. */
static CUresult release_mapped(uintptr_t base, enum fake_mem_kind kind,
                               const enum fake_mapping *mapping) {
  pthread_mutex_lock(&fake_lock);
  struct fake_alloc *a;
  HASH_FIND(hh, by_base, &base, sizeof base, a);
  if (a && !(a->kind == kind && (!mapping || a->mapping == *mapping))) a = NULL;
  if (a) {
    HASH_DEL(by_base, a);
    DL_DELETE(allocs, a);
  }
  if (a && a->kind == FAKE_MANAGED && a->size > SMALL_LIMIT) {
    freed_base = a->base;
    freed_len = page_round(a->size);
  } else if (a && a->kind == FAKE_MANAGED && a->mapping == FAKE_MAPPED_BY_DRIVER && reuse_small()) {
    small_freed_base = a->base;
    small_freed_step = (a->size + SMALL_STEP - 1) & ~(size_t)(SMALL_STEP - 1);
  }
  pthread_mutex_unlock(&fake_lock);
  if (!a) return CUDA_ERROR_INVALID_VALUE;
  /* Small managed slots are not reused, so stale pointers stay recognisable. */
  bool unmap = a->mapping == FAKE_MAPPED_BY_DRIVER;
  if (unmap && (a->kind != FAKE_MANAGED || a->size > SMALL_LIMIT)) {
    if (a->kind == FAKE_MANAGED) fake_managed_unmapped(a->base);
    if (a->kind == FAKE_MANAGED && shared_chunks())
      unmap_managed_shared(a->base, a->size); /* the address space stays reserved */
    else
      munmap((void *)a->base, page_round(a->size));
  }
  free(a);
  return CUDA_SUCCESS;
}

static CUresult release(uintptr_t base, enum fake_mem_kind kind) {
  return release_mapped(base, kind, NULL);
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
  HASH_CLEAR(hh, by_base);
  small_next = small_end = small_freed_base = 0;
  pthread_mutex_unlock(&fake_lock);
  while (a) {
    struct fake_alloc *next = a->next;
    if (a->mapping != FAKE_MAPPED_BY_DRIVER)
      ; /* the program's pages, or a reserve's */
    else if (a->kind == FAKE_MANAGED && a->size <= SMALL_LIMIT)
      munmap((void *)(a->base & ~(uintptr_t)(REGION - 1)), REGION);
    else
      munmap((void *)a->base, page_round(a->size));
    free(a);
    a = next;
  }
}

FAKE_EXPORT CUresult cuMemFreeHost(void *p) {
  if (!fake_initialized) return CUDA_ERROR_NOT_INITIALIZED;
  enum fake_mapping by_driver = FAKE_MAPPED_BY_DRIVER;
  return release_mapped((uintptr_t)p, FAKE_PINNED, &by_driver);
}

/* ---- registered host memory: the program's own pages, page-locked ---- */

static CUresult host_register(void *p, size_t bytesize) {
  if (!fake_initialized) return CUDA_ERROR_NOT_INITIALIZED;
  if (!p || bytesize == 0) return CUDA_ERROR_INVALID_VALUE;
  pthread_mutex_lock(&fake_lock);
  CUresult r = CUDA_SUCCESS;
  for (struct fake_alloc *a = allocs; a; a = a->next)
    if (a->base < (uintptr_t)p + bytesize && (uintptr_t)p < a->base + a->size)
      r = CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED;
  if (r == CUDA_SUCCESS &&
      !record_mapped((uintptr_t)p, bytesize, FAKE_PINNED, 0, FAKE_MAPPED_BY_PROGRAM))
    r = CUDA_ERROR_OUT_OF_MEMORY;
  pthread_mutex_unlock(&fake_lock);
  return r;
}
FAKE_EXPORT CUresult cuMemHostRegister_v2(void *p, size_t bytesize, unsigned int flags) {
  (void)flags;
  return host_register(p, bytesize);
}
FAKE_EXPORT CUresult cuMemHostRegister(void *p, size_t bytesize, unsigned int flags) {
  (void)flags;
  return host_register(p, bytesize);
}

FAKE_EXPORT CUresult cuMemHostUnregister(void *p) {
  if (!fake_initialized) return CUDA_ERROR_NOT_INITIALIZED;
  enum fake_mapping by_program = FAKE_MAPPED_BY_PROGRAM;
  return release_mapped((uintptr_t)p, FAKE_PINNED, &by_program) == CUDA_SUCCESS
             ? CUDA_SUCCESS
             : CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED;
}

/* The managed allocation that holds all of [p, p + count), or NULL;
 * fake_lock held. */
static struct fake_alloc *managed_range(CUdeviceptr p, size_t count) {
  struct fake_alloc *a = fake_find_alloc(p);
  return a && a->kind == FAKE_MANAGED && count <= a->base + a->size - p ? a : NULL;
}

/* ---- placement advice: taken for managed memory, changes nothing here ---- */

static CUresult advise(CUdeviceptr p, size_t count, CUmem_advise advice) {
  if (!fake_initialized) return CUDA_ERROR_NOT_INITIALIZED;
  if (advice < CU_MEM_ADVISE_SET_READ_MOSTLY || advice > CU_MEM_ADVISE_UNSET_ACCESSED_BY || !count)
    return CUDA_ERROR_INVALID_VALUE;
  pthread_mutex_lock(&fake_lock);
  bool managed = managed_range(p, count) != NULL;
  pthread_mutex_unlock(&fake_lock);
  return managed ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}
FAKE_EXPORT CUresult cuMemAdvise_v2(CUdeviceptr p, size_t count, CUmem_advise advice,
                                    CUmemLocation location) {
  (void)location;
  return advise(p, count, advice);
}
FAKE_EXPORT CUresult cuMemAdvise(CUdeviceptr p, size_t count, CUmem_advise advice, CUdevice dev) {
  (void)dev;
  return advise(p, count, advice);
}

/* ---- prefetches of managed memory: an operation of the stream (nothing
 * migrates here), whose location the range remembers ---- */

/* The reference: the stream's device must have concurrent managed access,
 * whatever the destination (docs/driver-facts.md). */
bool fake_prefetch_allowed(void) {
  return fake_device_attribute(CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS,
                               fake_current_device());
}

static CUresult prefetch(CUdeviceptr p, size_t count, CUmemLocation where, CUstream h, bool pt) {
  if (!fake_initialized) return CUDA_ERROR_NOT_INITIALIZED;
  int to;
  if (!fake_prefetch_allowed())
    return CUDA_ERROR_INVALID_DEVICE;
  else if (where.type == CU_MEM_LOCATION_TYPE_HOST)
    to = 1;
  else if (where.type == CU_MEM_LOCATION_TYPE_DEVICE && where.id >= 0 &&
           where.id < fake_device_count() &&
           fake_device_attribute(CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS, where.id))
    to = 2 + where.id;
  else
    return CUDA_ERROR_INVALID_DEVICE;
  pthread_mutex_lock(&fake_lock);
  struct fake_alloc *a = count ? managed_range(p, count) : NULL;
  if (a) a->prefetched = to;
  pthread_mutex_unlock(&fake_lock);
  if (!a) return CUDA_ERROR_INVALID_VALUE;
  return fake_enqueue_work(h, pt);
}
static CUmemLocation device_location(CUdevice dev) {
  return dev == CU_DEVICE_CPU ? (CUmemLocation){.type = CU_MEM_LOCATION_TYPE_HOST}
                              : (CUmemLocation){.type = CU_MEM_LOCATION_TYPE_DEVICE, .id = dev};
}
FAKE_EXPORT CUresult cuMemPrefetchAsync(CUdeviceptr p, size_t count, CUdevice dev, CUstream h) {
  return prefetch(p, count, device_location(dev), h, false);
}
FAKE_EXPORT CUresult cuMemPrefetchAsync_ptsz(CUdeviceptr p, size_t count, CUdevice dev,
                                             CUstream h) {
  return prefetch(p, count, device_location(dev), h, true);
}
FAKE_EXPORT CUresult cuMemPrefetchAsync_v2(CUdeviceptr p, size_t count, CUmemLocation where,
                                           unsigned flags, CUstream h) {
  (void)flags;
  return prefetch(p, count, where, h, false);
}
FAKE_EXPORT CUresult cuMemPrefetchAsync_v2_ptsz(CUdeviceptr p, size_t count, CUmemLocation where,
                                                unsigned flags, CUstream h) {
  (void)flags;
  return prefetch(p, count, where, h, true);
}

/* Only LAST_PREFETCH_LOCATION is told: the device, CU_DEVICE_CPU, or
 * CU_DEVICE_INVALID for memory never prefetched. */
FAKE_EXPORT CUresult cuMemRangeGetAttribute(void *data, size_t size, CUmem_range_attribute attr,
                                            CUdeviceptr p, size_t count);
FAKE_EXPORT CUresult cuMemRangeGetAttributes(void **data, size_t *sizes,
                                             CUmem_range_attribute *attrs, size_t n, CUdeviceptr p,
                                             size_t count) {
  if (!data || !sizes || !attrs || !n) return CUDA_ERROR_INVALID_VALUE;
  for (size_t i = 0; i < n; i++) {
    CUresult r = cuMemRangeGetAttribute(data[i], sizes[i], attrs[i], p, count);
    if (r != CUDA_SUCCESS) return r;
  }
  return CUDA_SUCCESS;
}
FAKE_EXPORT CUresult cuMemRangeGetAttribute(void *data, size_t size, CUmem_range_attribute attr,
                                            CUdeviceptr p, size_t count) {
  if (!fake_initialized) return CUDA_ERROR_NOT_INITIALIZED;
  if (!data || attr != CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION || size != sizeof(int))
    return CUDA_ERROR_INVALID_VALUE;
  pthread_mutex_lock(&fake_lock);
  struct fake_alloc *a = count ? managed_range(p, count) : NULL;
  int to = a ? a->prefetched : 0;
  pthread_mutex_unlock(&fake_lock);
  if (!a) return CUDA_ERROR_INVALID_VALUE;
  *(int *)data = to == 0 ? CU_DEVICE_INVALID : to == 1 ? CU_DEVICE_CPU : to - 2;
  return CUDA_SUCCESS;
}

/* ---- stream-ordered allocations: device memory, made and freed at once;
 * captured, memory allocation and free nodes (the memory a captured free
 * names stays: nothing runs at a launch here) ---- */

CUresult fake_alloc_async(CUdeviceptr *dptr, size_t bytesize, CUstream h, bool pt) {
  CUresult r = fake_alloc_device(dptr, bytesize);
  if (r != CUDA_SUCCESS) return r;
  if (fake_capture_plain(h, pt, CU_GRAPH_NODE_TYPE_MEM_ALLOC)) return CUDA_SUCCESS;
  return fake_enqueue_work(h, pt);
}
FAKE_EXPORT CUresult cuMemAllocAsync(CUdeviceptr *dptr, size_t bytesize, CUstream h) {
  return fake_alloc_async(dptr, bytesize, h, false);
}
FAKE_EXPORT CUresult cuMemAllocAsync_ptsz(CUdeviceptr *dptr, size_t bytesize, CUstream h) {
  return fake_alloc_async(dptr, bytesize, h, true);
}

static CUresult free_async(CUdeviceptr dptr, CUstream h, bool pt) {
  if (!fake_initialized) return CUDA_ERROR_NOT_INITIALIZED;
  if (!dptr) return CUDA_ERROR_INVALID_VALUE;
  if (fake_capture_plain(h, pt, CU_GRAPH_NODE_TYPE_MEM_FREE)) return CUDA_SUCCESS;
  CUresult r = release(dptr, FAKE_DEVICE);
  return r == CUDA_SUCCESS ? fake_enqueue_work(h, pt) : r;
}
FAKE_EXPORT CUresult cuMemFreeAsync(CUdeviceptr dptr, CUstream h) {
  return free_async(dptr, h, false);
}
FAKE_EXPORT CUresult cuMemFreeAsync_ptsz(CUdeviceptr dptr, CUstream h) {
  return free_async(dptr, h, true);
}

/* ---- IPC: a handle names device memory of another process ----
 * The handle carries the exporter's process and the allocation's size; an
 * importing process gets device memory of that size at an address of its own. */

struct ipc_handle {
  unsigned magic;
  pid_t pid;
  size_t size;
};
#define IPC_MAGIC 0x1bcu

FAKE_EXPORT CUresult cuIpcGetMemHandle(CUipcMemHandle *handle, CUdeviceptr dptr) {
  if (!fake_initialized) return CUDA_ERROR_NOT_INITIALIZED;
  if (!handle) return CUDA_ERROR_INVALID_VALUE;
  pthread_mutex_lock(&fake_lock);
  struct fake_alloc *a = fake_find_alloc(dptr);
  bool device = a && a->kind == FAKE_DEVICE && a->base == dptr;
  struct ipc_handle h = {IPC_MAGIC, getpid(), device ? a->size : 0};
  pthread_mutex_unlock(&fake_lock);
  if (!device) return CUDA_ERROR_INVALID_VALUE;
  memset(handle, 0, sizeof *handle);
  memcpy(handle->reserved, &h, sizeof h);
  return CUDA_SUCCESS;
}

static CUresult ipc_open(CUdeviceptr *dptr, CUipcMemHandle handle) {
  struct ipc_handle h;
  memcpy(&h, handle.reserved, sizeof h);
  if (!fake_initialized) return CUDA_ERROR_NOT_INITIALIZED;
  if (!dptr || h.magic != IPC_MAGIC || h.size == 0) return CUDA_ERROR_INVALID_VALUE;
  if (h.pid == getpid()) return CUDA_ERROR_INVALID_CONTEXT; /* its own memory */
  CUresult r = fake_alloc_device(dptr, h.size);
  if (r != CUDA_SUCCESS) return r;
  pthread_mutex_lock(&fake_lock);
  fake_find_alloc(*dptr)->ipc_opened = true;
  pthread_mutex_unlock(&fake_lock);
  return CUDA_SUCCESS;
}
FAKE_EXPORT CUresult cuIpcOpenMemHandle_v2(CUdeviceptr *dptr, CUipcMemHandle handle,
                                           unsigned int flags) {
  (void)flags;
  return ipc_open(dptr, handle);
}
FAKE_EXPORT CUresult cuIpcOpenMemHandle(CUdeviceptr *dptr, CUipcMemHandle handle,
                                        unsigned int flags) {
  (void)flags;
  return ipc_open(dptr, handle);
}

FAKE_EXPORT CUresult cuIpcCloseMemHandle(CUdeviceptr dptr) {
  if (!fake_initialized) return CUDA_ERROR_NOT_INITIALIZED;
  pthread_mutex_lock(&fake_lock);
  struct fake_alloc *a = fake_find_alloc(dptr);
  bool opened = a && a->ipc_opened && a->base == dptr;
  pthread_mutex_unlock(&fake_lock);
  return opened ? release(dptr, FAKE_DEVICE) : CUDA_ERROR_INVALID_VALUE;
}

/* ---- virtual memory: a reserved range, physical memory mapped into it ---- */

#define VMM_GRANULARITY (2u << 20)

FAKE_EXPORT CUresult cuMemGetAllocationGranularity(size_t *granularity,
                                                   const CUmemAllocationProp *prop,
                                                   CUmemAllocationGranularity_flags option) {
  (void)option;
  if (!granularity || !prop) return CUDA_ERROR_INVALID_VALUE;
  *granularity = VMM_GRANULARITY;
  return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult cuMemAddressReserve(CUdeviceptr *ptr, size_t size, size_t alignment,
                                         CUdeviceptr addr, unsigned long long flags) {
  (void)alignment, (void)addr, (void)flags;
  if (!fake_initialized) return CUDA_ERROR_NOT_INITIALIZED;
  if (!ptr || size == 0 || size % VMM_GRANULARITY) return CUDA_ERROR_INVALID_VALUE;
  void *m = map_aligned(size, PROT_NONE);
  if (!m) return CUDA_ERROR_OUT_OF_MEMORY;
  *ptr = (CUdeviceptr)m;
  return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult cuMemAddressFree(CUdeviceptr ptr, size_t size) {
  if (!fake_initialized) return CUDA_ERROR_NOT_INITIALIZED;
  if (!ptr || size == 0) return CUDA_ERROR_INVALID_VALUE;
  munmap((void *)ptr, size);
  return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult cuMemCreate(CUmemGenericAllocationHandle *handle, size_t size,
                                 const CUmemAllocationProp *prop, unsigned long long flags) {
  (void)flags;
  if (!fake_initialized) return CUDA_ERROR_NOT_INITIALIZED;
  if (!handle || !prop || size == 0 || size % VMM_GRANULARITY) return CUDA_ERROR_INVALID_VALUE;
  size_t *physical = malloc(sizeof *physical);
  if (!physical) return CUDA_ERROR_OUT_OF_MEMORY;
  *physical = size;
  *handle = (CUmemGenericAllocationHandle)(uintptr_t)physical;
  return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult cuMemRelease(CUmemGenericAllocationHandle handle) {
  if (!handle) return CUDA_ERROR_INVALID_VALUE;
  free((void *)(uintptr_t)handle);
  return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult cuMemMap(CUdeviceptr ptr, size_t size, size_t offset,
                              CUmemGenericAllocationHandle handle, unsigned long long flags) {
  (void)flags;
  if (!fake_initialized) return CUDA_ERROR_NOT_INITIALIZED;
  if (!ptr || !handle || offset || size != *(size_t *)(uintptr_t)handle)
    return CUDA_ERROR_INVALID_VALUE;
  pthread_mutex_lock(&fake_lock);
  bool taken = fake_find_alloc(ptr) != NULL;
  bool ok = !taken && record_mapped(ptr, size, FAKE_DEVICE, 0, FAKE_MAPPED_IN_RESERVE);
  pthread_mutex_unlock(&fake_lock);
  return taken ? CUDA_ERROR_INVALID_VALUE : ok ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}

FAKE_EXPORT CUresult cuMemSetAccess(CUdeviceptr ptr, size_t size, const CUmemAccessDesc *desc,
                                    size_t count) {
  if (!ptr || !size || !desc || !count) return CUDA_ERROR_INVALID_VALUE;
  return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult cuMemUnmap(CUdeviceptr ptr, size_t size) {
  (void)size;
  if (!fake_initialized) return CUDA_ERROR_NOT_INITIALIZED;
  enum fake_mapping in_reserve = FAKE_MAPPED_IN_RESERVE;
  return release_mapped(ptr, FAKE_DEVICE, &in_reserve);
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
