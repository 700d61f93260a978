/* fake_resources.c - the stream work that names no managed memory and needs
 * objects of its own: memory pools (an allocation from a pool), sparse arrays
 * (a tile mapped into one), external semaphores (signalled or waited for),
 * and batch decompression, which an H100 refuses.
 *
 * What each answers was measured on an H100 (docs/driver-facts.md), except
 * a semaphore's import: no graphics API there exports one. The stand-in takes
 * any open descriptor as an exported opaque-fd semaphore and keeps it, as the
 * driver keeps the descriptor of a semaphore it imported.
 */
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fake.h"

/* ---- memory pools: one default pool a device ---- */

static int default_pools[FAKE_MAX_DEVICES]; /* a pool's handle: the address of its device's slot */

FAKE_EXPORT CUresult cuDeviceGetDefaultMemPool(CUmemoryPool *pool, CUdevice dev) {
  if (!fake_initialized) return CUDA_ERROR_NOT_INITIALIZED;
  if (!pool) return CUDA_ERROR_INVALID_VALUE;
  if (dev < 0 || dev >= fake_device_count()) return CUDA_ERROR_INVALID_DEVICE;
  *pool = (CUmemoryPool)&default_pools[dev];
  return CUDA_SUCCESS;
}

static bool is_pool(CUmemoryPool pool) {
  uintptr_t p = (uintptr_t)pool, first = (uintptr_t)&default_pools[0];
  return p >= first && p < (uintptr_t)&default_pools[FAKE_MAX_DEVICES] &&
         (p - first) % sizeof default_pools[0] == 0;
}

static CUresult alloc_from_pool(CUdeviceptr *dptr, size_t bytesize, CUmemoryPool pool, CUstream h,
                                bool pt) {
  if (!fake_initialized) return CUDA_ERROR_NOT_INITIALIZED;
  if (!is_pool(pool)) return CUDA_ERROR_INVALID_VALUE;
  return fake_alloc_async(dptr, bytesize, h, pt);
}
FAKE_EXPORT CUresult cuMemAllocFromPoolAsync(CUdeviceptr *dptr, size_t bytesize, CUmemoryPool pool,
                                             CUstream h) {
  return alloc_from_pool(dptr, bytesize, pool, h, false);
}
FAKE_EXPORT CUresult cuMemAllocFromPoolAsync_ptsz(CUdeviceptr *dptr, size_t bytesize,
                                                  CUmemoryPool pool, CUstream h) {
  return alloc_from_pool(dptr, bytesize, pool, h, true);
}

/* ---- the objects handed out: each starts with its kind's magic, so a
 * handle of another kind, or one destroyed, is told apart ---- */

static void *object_new(size_t size, unsigned magic) {
  unsigned *o = calloc(1, size);
  if (o) *o = magic;
  return o;
}
static void *object_of(const void *handle, unsigned magic) {
  return handle && *(const unsigned *)handle == magic ? (void *)handle : NULL;
}
static CUresult object_destroy(void *handle, unsigned magic) {
  unsigned *o = object_of(handle, magic);
  if (!o) return CUDA_ERROR_INVALID_HANDLE;
  *o = 0;
  free(o);
  return CUDA_SUCCESS;
}

/* ---- sparse arrays: only what mapping a tile needs ----
 * The stand-in plays 2D sparse arrays of one 32-bit channel, whose tile is
 * 128 x 128 elements on an H100 (measured); it refuses other sparse arrays
 * (CUDA_ERROR_NOT_SUPPORTED) rather than invent their tiles. */

#define SPARSE_MAGIC 0x5a4b5e11u

struct fake_array {
  unsigned magic;
  CUDA_ARRAY3D_DESCRIPTOR desc;
};

static bool element_is_32_bit(const CUDA_ARRAY3D_DESCRIPTOR *d) {
  return d->NumChannels == 1 &&
         (d->Format == CU_AD_FORMAT_FLOAT || d->Format == CU_AD_FORMAT_UNSIGNED_INT32 ||
          d->Format == CU_AD_FORMAT_SIGNED_INT32);
}

FAKE_EXPORT CUresult cuArray3DCreate_v2(CUarray *handle, const CUDA_ARRAY3D_DESCRIPTOR *desc) {
  if (!fake_initialized) return CUDA_ERROR_NOT_INITIALIZED;
  if (!handle || !desc || desc->Width == 0) return CUDA_ERROR_INVALID_VALUE;
  if (!(desc->Flags & CUDA_ARRAY3D_SPARSE) || desc->Depth != 0 || !element_is_32_bit(desc))
    return CUDA_ERROR_NOT_SUPPORTED;
  struct fake_array *a = object_new(sizeof *a, SPARSE_MAGIC);
  if (!a) return CUDA_ERROR_OUT_OF_MEMORY;
  a->desc = *desc;
  *handle = (CUarray)a;
  return CUDA_SUCCESS;
}

static struct fake_array *array_of(CUarray h) {
  return object_of(h, SPARSE_MAGIC);
}

FAKE_EXPORT CUresult cuArrayDestroy(CUarray h) {
  return object_destroy(h, SPARSE_MAGIC);
}

FAKE_EXPORT CUresult cuArrayGetSparseProperties(CUDA_ARRAY_SPARSE_PROPERTIES *props, CUarray h) {
  struct fake_array *a = array_of(h);
  if (!props) return CUDA_ERROR_INVALID_VALUE;
  if (!a) return CUDA_ERROR_INVALID_HANDLE;
  memset(props, 0, sizeof *props);
  props->tileExtent.width = 128;
  props->tileExtent.height = 128;
  props->tileExtent.depth = 1;
  return CUDA_SUCCESS;
}

static bool map_info_valid(const CUarrayMapInfo *m) {
  if (m->resourceType != CU_RESOURCE_TYPE_ARRAY || !array_of(m->resource.array)) return false;
  if (m->subresourceType != CU_ARRAY_SPARSE_SUBRESOURCE_TYPE_SPARSE_LEVEL) return false;
  return m->memOperationType == CU_MEM_OPERATION_TYPE_UNMAP ||
         (m->memHandleType == CU_MEM_HANDLE_TYPE_GENERIC && m->memHandle.memHandle);
}

static CUresult map_array(CUarrayMapInfo *list, unsigned count, CUstream h, bool pt) {
  if (!fake_initialized) return CUDA_ERROR_NOT_INITIALIZED;
  if (!list || count == 0) return CUDA_ERROR_INVALID_VALUE;
  for (unsigned i = 0; i < count; i++)
    if (!map_info_valid(&list[i])) return CUDA_ERROR_INVALID_VALUE;
  return fake_enqueue_work(h, pt);
}
FAKE_EXPORT CUresult cuMemMapArrayAsync(CUarrayMapInfo *list, unsigned int count, CUstream h) {
  return map_array(list, count, h, false);
}
FAKE_EXPORT CUresult cuMemMapArrayAsync_ptsz(CUarrayMapInfo *list, unsigned int count, CUstream h) {
  return map_array(list, count, h, true);
}

/* ---- external semaphores ---- */

#define SEMAPHORE_MAGIC 0x5e3a9403u

struct fake_semaphore {
  unsigned magic;
  int fd; /* the driver's from the import on */
};

FAKE_EXPORT CUresult cuImportExternalSemaphore(CUexternalSemaphore *out,
                                               const CUDA_EXTERNAL_SEMAPHORE_HANDLE_DESC *desc) {
  if (!fake_initialized) return CUDA_ERROR_NOT_INITIALIZED;
  if (!out || !desc) return CUDA_ERROR_INVALID_VALUE;
  if (desc->type != CU_EXTERNAL_SEMAPHORE_HANDLE_TYPE_OPAQUE_FD) return CUDA_ERROR_NOT_SUPPORTED;
  if (desc->handle.fd < 0 || fcntl(desc->handle.fd, F_GETFD) < 0) return CUDA_ERROR_UNKNOWN;
  struct fake_semaphore *sem = object_new(sizeof *sem, SEMAPHORE_MAGIC);
  if (!sem) return CUDA_ERROR_OUT_OF_MEMORY;
  sem->fd = desc->handle.fd;
  *out = (CUexternalSemaphore)sem;
  return CUDA_SUCCESS;
}

static struct fake_semaphore *semaphore_of(CUexternalSemaphore h) {
  return object_of(h, SEMAPHORE_MAGIC);
}

FAKE_EXPORT CUresult cuDestroyExternalSemaphore(CUexternalSemaphore h) {
  struct fake_semaphore *sem = semaphore_of(h);
  if (sem) close(sem->fd);
  return object_destroy(h, SEMAPHORE_MAGIC);
}

/* A signal or a wait: none of them at all is refused (measured). */
static CUresult semaphores_async(const CUexternalSemaphore *sems, const void *params,
                                 unsigned count, CUstream h, bool pt) {
  if (!fake_initialized) return CUDA_ERROR_NOT_INITIALIZED;
  if (!sems || !params || count == 0) return CUDA_ERROR_INVALID_VALUE;
  for (unsigned i = 0; i < count; i++)
    if (!semaphore_of(sems[i])) return CUDA_ERROR_INVALID_HANDLE;
  return fake_enqueue_work(h, pt);
}
#define SEMAPHORES(Name, Params, PerThread)                                                        \
  FAKE_EXPORT CUresult Name(const CUexternalSemaphore *sems, const Params *params,                 \
                            unsigned int count, CUstream h) {                                      \
    return semaphores_async(sems, params, count, h, PerThread);                                    \
  }
SEMAPHORES(cuSignalExternalSemaphoresAsync, CUDA_EXTERNAL_SEMAPHORE_SIGNAL_PARAMS, false)
SEMAPHORES(cuSignalExternalSemaphoresAsync_ptsz, CUDA_EXTERNAL_SEMAPHORE_SIGNAL_PARAMS, true)
SEMAPHORES(cuWaitExternalSemaphoresAsync, CUDA_EXTERNAL_SEMAPHORE_WAIT_PARAMS, false)
SEMAPHORES(cuWaitExternalSemaphoresAsync_ptsz, CUDA_EXTERNAL_SEMAPHORE_WAIT_PARAMS, true)

/* ---- batch decompression: an H100 has no engine for it (measured) ---- */

FAKE_EXPORT CUresult cuMemBatchDecompressAsync(CUmemDecompressParams *params, size_t count,
                                               unsigned int flags, size_t *failIdx, CUstream h) {
  (void)params, (void)count, (void)flags, (void)failIdx, (void)h;
  return fake_initialized ? CUDA_ERROR_NOT_SUPPORTED : CUDA_ERROR_NOT_INITIALIZED;
}
FAKE_EXPORT CUresult cuMemBatchDecompressAsync_ptsz(CUmemDecompressParams *params, size_t count,
                                                    unsigned int flags, size_t *failIdx,
                                                    CUstream h) {
  (void)params, (void)count, (void)flags, (void)failIdx, (void)h;
  return fake_initialized ? CUDA_ERROR_NOT_SUPPORTED : CUDA_ERROR_NOT_INITIALIZED;
}
