/* fake_copy.c - the copies and sets.
 *
 * Synchronous ones run on the legacy stream (the per-thread stream for _ptds)
 * and return when done; asynchronous ones complete at once on their stream.
 * Where the real driver uses the program's own mapping, so does the stand-in:
 * a side of a 2D or 3D copy whose memory type is HOST is read or written
 * through it (docs/driver-facts.md: a synchronous 2D copy read a managed source so),
 * a HOST-to-HOST copy moving the bytes. Everything else is device-side work
 * (docs/driver-facts.md: cuMemcpy, HtoD, DtoH touch no user mapping): it moves no
 * data, as kernels do not run. The stand-in makes no CUDA arrays, so no array
 * handle is valid here.
 */
#include <stdint.h>
#include <string.h>

#include "fake.h"

/* ---- one side of a 2D or 3D copy ---- */

struct side {
  CUmemorytype type;
  unsigned char *host; /* HOST: the first byte of the copy */
  CUdeviceptr device;
  size_t pitch, height;
};

/* Whether the side names memory a copy can use; HOST must be CPU memory. */
static bool side_valid(const struct side *s, size_t width) {
  if (s->type == CU_MEMORYTYPE_HOST) {
    if (!s->host) return false;
    pthread_mutex_lock(&fake_lock);
    struct fake_alloc *a = fake_find_alloc((uintptr_t)s->host);
    bool device = a && a->kind == FAKE_DEVICE;
    pthread_mutex_unlock(&fake_lock);
    return !device && width <= s->pitch;
  }
  if (s->type == CU_MEMORYTYPE_DEVICE || s->type == CU_MEMORYTYPE_UNIFIED)
    return s->device != 0 && width <= s->pitch;
  return false; /* arrays: the stand-in has none */
}

static __thread unsigned char staging[4096];

/* The host's part of the copy, row by row: HOST to HOST moves the bytes, a
 * HOST source is read into the staging buffer, as the driver stages it. */
static void copy_rows(const struct side *dst, const struct side *src, size_t width, size_t height,
                      size_t depth) {
  for (size_t z = 0; z < depth; z++)
    for (size_t y = 0; y < height; y++) {
      if (src->type != CU_MEMORYTYPE_HOST) return; /* nothing the host holds moves */
      const unsigned char *from = src->host + (z * src->height + y) * src->pitch;
      if (dst->type == CU_MEMORYTYPE_HOST)
        memmove(dst->host + (z * dst->height + y) * dst->pitch, from, width);
      else
        for (size_t x = 0; x < width; x += sizeof staging)
          memcpy(staging, from + x, width - x < sizeof staging ? width - x : sizeof staging);
    }
}

#define SIDE(p, s, offset)                                                                         \
  (struct side) {                                                                                  \
    (p)->s##MemoryType,                                                                            \
        (p)->s##MemoryType == CU_MEMORYTYPE_HOST && (p)->s##Host                                   \
            ? (unsigned char *)(p)->s##Host + (offset)                                             \
            : NULL,                                                                                \
        (p)->s##Device, (p)->s##Pitch, 0                                                           \
  }
#define SIDE_2D(p, s) SIDE(p, s, (p)->s##Y *(p)->s##Pitch + (p)->s##XInBytes)
#define SIDE_3D(p, s)                                                                              \
  SIDE(p, s, ((p)->s##Z * (p)->s##Height + (p)->s##Y) * (p)->s##Pitch + (p)->s##XInBytes)

/* Checks a copy; with sync, waits for the stream first (the driver does so
 * before it touches host memory), else enqueues it - or, on a capturing
 * stream, records it as node; then the host's part. */
static CUresult run_copy(struct side dst, struct side src, size_t width, size_t height,
                         size_t depth, bool sync, CUstream h, bool per_thread,
                         const CUDA_MEMCPY3D *node) {
  if (!fake_initialized) return CUDA_ERROR_NOT_INITIALIZED;
  if (height > 1 || depth > 1) {
    if (!side_valid(&dst, width) || !side_valid(&src, width)) return CUDA_ERROR_INVALID_VALUE;
  } else if (!side_valid(&dst, 0) || !side_valid(&src, 0)) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  if (!sync && fake_capture_copy(h, per_thread, node)) return CUDA_SUCCESS;
  CUresult r = sync ? fake_sync_work(per_thread) : fake_enqueue_work(h, per_thread);
  if (r == CUDA_SUCCESS) copy_rows(&dst, &src, width, height, depth);
  return r;
}

/* The fields of one side of a 2D, 3D or 3D-peer copy, as a graph node's 3D copy has them. */
#define NODE_SIDE(n, p, s)                                                                         \
  ((n)->s##XInBytes = (p)->s##XInBytes, (n)->s##Y = (p)->s##Y,                                     \
   (n)->s##MemoryType = (p)->s##MemoryType, (n)->s##Host = (p)->s##Host,                           \
   (n)->s##Device = (p)->s##Device, (n)->s##Array = (p)->s##Array, (n)->s##Pitch = (p)->s##Pitch)

static CUresult copy_2d(const CUDA_MEMCPY2D *p, bool sync, CUstream h, bool per_thread) {
  if (!p) return CUDA_ERROR_INVALID_VALUE;
  CUDA_MEMCPY3D node = {.WidthInBytes = p->WidthInBytes, .Height = p->Height, .Depth = 1};
  NODE_SIDE(&node, p, src), NODE_SIDE(&node, p, dst);
  node.srcHeight = node.dstHeight = p->Height;
  return run_copy(SIDE_2D(p, dst), SIDE_2D(p, src), p->WidthInBytes, p->Height, 1, sync, h,
                  per_thread, &node);
}

/* 3D and 3D-peer descriptors share their fields' names. */
#define DEFINE_COPY_3D(Fn, Type)                                                                   \
  static CUresult Fn(const Type *p, bool sync, CUstream h, bool per_thread) {                      \
    if (!p) return CUDA_ERROR_INVALID_VALUE;                                                       \
    struct side d = SIDE_3D(p, dst), s = SIDE_3D(p, src);                                          \
    d.height = p->dstHeight, s.height = p->srcHeight;                                              \
    if (p->Depth > 1 && (p->dstHeight < p->Height || p->srcHeight < p->Height))                    \
      return CUDA_ERROR_INVALID_VALUE;                                                             \
    CUDA_MEMCPY3D node = {                                                                         \
        .WidthInBytes = p->WidthInBytes, .Height = p->Height, .Depth = p->Depth};                  \
    NODE_SIDE(&node, p, src), NODE_SIDE(&node, p, dst);                                            \
    node.srcZ = p->srcZ, node.dstZ = p->dstZ;                                                      \
    node.srcHeight = p->srcHeight, node.dstHeight = p->dstHeight;                                  \
    return run_copy(d, s, p->WidthInBytes, p->Height, p->Depth, sync, h, per_thread, &node);       \
  }
DEFINE_COPY_3D(copy_3d, CUDA_MEMCPY3D)
DEFINE_COPY_3D(copy_3d_peer, CUDA_MEMCPY3D_PEER)

#define STRUCT_SYNC(Name, Type, Copy, PerThread)                                                   \
  FAKE_EXPORT CUresult Name(const Type *p) {                                                       \
    return Copy(p, true, NULL, PerThread);                                                         \
  }
#define STRUCT_ASYNC(Name, Type, Copy, PerThread)                                                  \
  FAKE_EXPORT CUresult Name(const Type *p, CUstream h) {                                           \
    return Copy(p, false, h, PerThread);                                                           \
  }
STRUCT_SYNC(cuMemcpy2D_v2, CUDA_MEMCPY2D, copy_2d, false)
STRUCT_SYNC(cuMemcpy2D_v2_ptds, CUDA_MEMCPY2D, copy_2d, true)
STRUCT_SYNC(cuMemcpy2DUnaligned_v2, CUDA_MEMCPY2D, copy_2d, false)
STRUCT_SYNC(cuMemcpy2DUnaligned_v2_ptds, CUDA_MEMCPY2D, copy_2d, true)
STRUCT_ASYNC(cuMemcpy2DAsync_v2, CUDA_MEMCPY2D, copy_2d, false)
STRUCT_ASYNC(cuMemcpy2DAsync_v2_ptsz, CUDA_MEMCPY2D, copy_2d, true)
STRUCT_SYNC(cuMemcpy3D_v2, CUDA_MEMCPY3D, copy_3d, false)
STRUCT_SYNC(cuMemcpy3D_v2_ptds, CUDA_MEMCPY3D, copy_3d, true)
STRUCT_ASYNC(cuMemcpy3DAsync_v2, CUDA_MEMCPY3D, copy_3d, false)
STRUCT_ASYNC(cuMemcpy3DAsync_v2_ptsz, CUDA_MEMCPY3D, copy_3d, true)
STRUCT_SYNC(cuMemcpy3DPeer, CUDA_MEMCPY3D_PEER, copy_3d_peer, false)
STRUCT_SYNC(cuMemcpy3DPeer_ptds, CUDA_MEMCPY3D_PEER, copy_3d_peer, true)
STRUCT_ASYNC(cuMemcpy3DPeerAsync, CUDA_MEMCPY3D_PEER, copy_3d_peer, false)
STRUCT_ASYNC(cuMemcpy3DPeerAsync_ptsz, CUDA_MEMCPY3D_PEER, copy_3d_peer, true)

/* ---- 1D copies, peer copies and sets: device-side work ---- */

static CUresult device_work(bool ok, bool sync, CUstream h, bool per_thread) {
  if (!fake_initialized) return CUDA_ERROR_NOT_INITIALIZED;
  if (!ok) return CUDA_ERROR_INVALID_VALUE;
  return sync ? fake_sync_work(per_thread) : fake_enqueue_work(h, per_thread);
}

/* An asynchronous 1D copy, or its node on a capturing stream: one row of a 3D
 * copy, each side typed as the call names it. */
static CUresult copy_1d(bool ok, CUstream h, bool per_thread, CUmemorytype dst_type, void *dst_host,
                        CUdeviceptr dst, CUmemorytype src_type, const void *src_host,
                        CUdeviceptr src, size_t n) {
  CUDA_MEMCPY3D node = {.srcMemoryType = src_type,
                        .srcHost = src_host,
                        .srcDevice = src,
                        .dstMemoryType = dst_type,
                        .dstHost = dst_host,
                        .dstDevice = dst,
                        .WidthInBytes = n,
                        .Height = 1,
                        .Depth = 1};
  if (fake_initialized && ok && fake_capture_copy(h, per_thread, &node)) return CUDA_SUCCESS;
  return device_work(ok, false, h, per_thread);
}

/* An asynchronous set, or its node on a capturing stream. */
static CUresult set_async(bool ok, CUstream h, bool per_thread, CUdeviceptr dst, size_t pitch,
                          unsigned value, unsigned element_size, size_t width, size_t height) {
  CUDA_MEMSET_NODE_PARAMS node = {dst, pitch, value, element_size, width, height};
  if (fake_initialized && ok && fake_capture_set(h, per_thread, &node)) return CUDA_SUCCESS;
  return device_work(ok, false, h, per_thread);
}

/* Their sizes, contexts and values go unused: no data moves. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-parameter"
#define SYNC(Name, PerThread, Params, Ok)                                                          \
  FAKE_EXPORT CUresult Name Params {                                                               \
    return device_work(Ok, true, NULL, PerThread);                                                 \
  }
SYNC(cuMemcpy, false, (CUdeviceptr d, CUdeviceptr s, size_t n), true)
SYNC(cuMemcpy_ptds, true, (CUdeviceptr d, CUdeviceptr s, size_t n), true)
SYNC(cuMemcpyHtoD_v2, false, (CUdeviceptr d, const void *s, size_t n), true)
SYNC(cuMemcpyHtoD_v2_ptds, true, (CUdeviceptr d, const void *s, size_t n), true)
SYNC(cuMemcpyDtoH_v2, false, (void *d, CUdeviceptr s, size_t n), true)
SYNC(cuMemcpyDtoH_v2_ptds, true, (void *d, CUdeviceptr s, size_t n), true)
SYNC(cuMemsetD8_v2, false, (CUdeviceptr d, unsigned char v, size_t n), true)
SYNC(cuMemsetD8_v2_ptds, true, (CUdeviceptr d, unsigned char v, size_t n), true)
SYNC(cuMemcpyDtoD_v2, false, (CUdeviceptr d, CUdeviceptr s, size_t n), true)
SYNC(cuMemcpyDtoD_v2_ptds, true, (CUdeviceptr d, CUdeviceptr s, size_t n), true)
SYNC(cuMemsetD16_v2, false, (CUdeviceptr d, unsigned short v, size_t n), true)
SYNC(cuMemsetD16_v2_ptds, true, (CUdeviceptr d, unsigned short v, size_t n), true)
SYNC(cuMemsetD32_v2, false, (CUdeviceptr d, unsigned int v, size_t n), true)
SYNC(cuMemsetD32_v2_ptds, true, (CUdeviceptr d, unsigned int v, size_t n), true)
#define PEER (CUdeviceptr d, CUcontext dc, CUdeviceptr s, CUcontext sc, size_t n)
SYNC(cuMemcpyPeer, false, PEER, d &&s)
SYNC(cuMemcpyPeer_ptds, true, PEER, d &&s)
#define COPY_ASYNC(Name, PerThread, Params, Ok, DstType, DstHost, Dst, SrcType, SrcHost, Src)      \
  FAKE_EXPORT CUresult Name Params {                                                               \
    return copy_1d(Ok, h, PerThread, DstType, DstHost, Dst, SrcType, SrcHost, Src, n);             \
  }
#define DEVICE CU_MEMORYTYPE_DEVICE
#define HOST CU_MEMORYTYPE_HOST
#define UNIFIED CU_MEMORYTYPE_UNIFIED
#define PEER_ASYNC (CUdeviceptr d, CUcontext dc, CUdeviceptr s, CUcontext sc, size_t n, CUstream h)
COPY_ASYNC(cuMemcpyPeerAsync, false, PEER_ASYNC, d &&s, DEVICE, NULL, d, DEVICE, NULL, s)
COPY_ASYNC(cuMemcpyPeerAsync_ptsz, true, PEER_ASYNC, d &&s, DEVICE, NULL, d, DEVICE, NULL, s)
#define COPY_1D_ASYNC (CUdeviceptr d, CUdeviceptr s, size_t n, CUstream h)
COPY_ASYNC(cuMemcpyAsync, false, COPY_1D_ASYNC, true, UNIFIED, NULL, d, UNIFIED, NULL, s)
COPY_ASYNC(cuMemcpyAsync_ptsz, true, COPY_1D_ASYNC, true, UNIFIED, NULL, d, UNIFIED, NULL, s)
#define HTOD_ASYNC (CUdeviceptr d, const void *s, size_t n, CUstream h)
COPY_ASYNC(cuMemcpyHtoDAsync_v2, false, HTOD_ASYNC, d &&s, DEVICE, NULL, d, HOST, s, 0)
COPY_ASYNC(cuMemcpyHtoDAsync_v2_ptsz, true, HTOD_ASYNC, d &&s, DEVICE, NULL, d, HOST, s, 0)
#define DTOH_ASYNC (void *d, CUdeviceptr s, size_t n, CUstream h)
COPY_ASYNC(cuMemcpyDtoHAsync_v2, false, DTOH_ASYNC, d &&s, HOST, d, 0, DEVICE, NULL, s)
COPY_ASYNC(cuMemcpyDtoHAsync_v2_ptsz, true, DTOH_ASYNC, d &&s, HOST, d, 0, DEVICE, NULL, s)
#define DTOD_ASYNC (CUdeviceptr d, CUdeviceptr s, size_t n, CUstream h)
COPY_ASYNC(cuMemcpyDtoDAsync_v2, false, DTOD_ASYNC, d &&s, DEVICE, NULL, d, DEVICE, NULL, s)
COPY_ASYNC(cuMemcpyDtoDAsync_v2_ptsz, true, DTOD_ASYNC, d &&s, DEVICE, NULL, d, DEVICE, NULL, s)
#define SET_ASYNC_OF(Name, PerThread, T, Size)                                                     \
  FAKE_EXPORT CUresult Name(CUdeviceptr d, T v, size_t n, CUstream h) {                            \
    return set_async(d != 0, h, PerThread, d, 0, v, Size, n, 1);                                   \
  }
/* Each set and its _ptsz twin. */
#define SET_ASYNC_PAIR(Of, Name, T, Size) Of(Name, false, T, Size) Of(Name##_ptsz, true, T, Size)
SET_ASYNC_PAIR(SET_ASYNC_OF, cuMemsetD8Async, unsigned char, 1)
SET_ASYNC_PAIR(SET_ASYNC_OF, cuMemsetD16Async, unsigned short, 2)
SET_ASYNC_PAIR(SET_ASYNC_OF, cuMemsetD32Async, unsigned int, 4)
#define SET2D(T) (CUdeviceptr d, size_t pitch, T v, size_t w, size_t rows)
SYNC(cuMemsetD2D8_v2, false, SET2D(unsigned char), d &&w <= pitch)
SYNC(cuMemsetD2D8_v2_ptds, true, SET2D(unsigned char), d &&w <= pitch)
SYNC(cuMemsetD2D16_v2, false, SET2D(unsigned short), d && 2 * w <= pitch)
SYNC(cuMemsetD2D16_v2_ptds, true, SET2D(unsigned short), d && 2 * w <= pitch)
SYNC(cuMemsetD2D32_v2, false, SET2D(unsigned int), d && 4 * w <= pitch)
SYNC(cuMemsetD2D32_v2_ptds, true, SET2D(unsigned int), d && 4 * w <= pitch)
#define SET2D_ASYNC_OF(Name, PerThread, T, Size)                                                   \
  FAKE_EXPORT CUresult Name(CUdeviceptr d, size_t pitch, T v, size_t w, size_t rows, CUstream h) { \
    return set_async(d && Size * w <= pitch, h, PerThread, d, pitch, v, Size, w, rows);            \
  }
SET_ASYNC_PAIR(SET2D_ASYNC_OF, cuMemsetD2D8Async, unsigned char, 1)
SET_ASYNC_PAIR(SET2D_ASYNC_OF, cuMemsetD2D16Async, unsigned short, 2)
SET_ASYNC_PAIR(SET2D_ASYNC_OF, cuMemsetD2D32Async, unsigned int, 4)
#pragma GCC diagnostic pop

/* ---- batches: the documented checks, then one operation on the stream ----
 * The legacy NULL stream is refused; every copy needs an attribute (the
 * first index 0, indices rising, numAttrs <= count) with a source order. */

static bool order_valid(CUmemcpySrcAccessOrder order) {
  return order == CU_MEMCPY_SRC_ACCESS_ORDER_STREAM ||
         order == CU_MEMCPY_SRC_ACCESS_ORDER_DURING_API_CALL ||
         order == CU_MEMCPY_SRC_ACCESS_ORDER_ANY;
}

static bool attrs_valid(const CUmemcpyAttributes *attrs, const size_t *idxs, size_t n,
                        size_t count) {
  if (!attrs || !idxs || n == 0 || n > count || idxs[0] != 0) return false;
  for (size_t i = 0; i < n; i++)
    if ((i && idxs[i] <= idxs[i - 1]) || idxs[i] >= count || !order_valid(attrs[i].srcAccessOrder))
      return false;
  return true;
}

static bool batch_stream_valid(CUstream h, bool per_thread) {
  return h != CU_STREAM_LEGACY && !fake_stream_is_null(h, per_thread);
}

static CUresult batch(CUdeviceptr *dsts, CUdeviceptr *srcs, size_t *sizes, size_t count,
                      CUmemcpyAttributes *attrs, size_t *idxs, size_t n, CUstream h,
                      bool per_thread) {
  bool ok = dsts && srcs && sizes && count && attrs_valid(attrs, idxs, n, count) &&
            batch_stream_valid(h, per_thread);
  for (size_t i = 0; ok && i < count; i++)
    ok = dsts[i] && srcs[i] && sizes[i];
  return device_work(ok, false, h, per_thread);
}

FAKE_EXPORT CUresult cuMemcpyBatchAsync_v2(CUdeviceptr *dsts, CUdeviceptr *srcs, size_t *sizes,
                                           size_t count, CUmemcpyAttributes *attrs, size_t *idxs,
                                           size_t n, CUstream h) {
  return batch(dsts, srcs, sizes, count, attrs, idxs, n, h, false);
}
FAKE_EXPORT CUresult cuMemcpyBatchAsync_v2_ptsz(CUdeviceptr *dsts, CUdeviceptr *srcs, size_t *sizes,
                                                size_t count, CUmemcpyAttributes *attrs,
                                                size_t *idxs, size_t n, CUstream h) {
  return batch(dsts, srcs, sizes, count, attrs, idxs, n, h, true);
}

/* The ABIs before 13.0 also say which copy failed: none here (SIZE_MAX). */
FAKE_EXPORT CUresult cuMemcpyBatchAsync(CUdeviceptr *dsts, CUdeviceptr *srcs, size_t *sizes,
                                        size_t count, CUmemcpyAttributes *attrs, size_t *idxs,
                                        size_t n, size_t *fail, CUstream h) {
  CUresult r = batch(dsts, srcs, sizes, count, attrs, idxs, n, h, false);
  if (r != CUDA_SUCCESS && fail) *fail = SIZE_MAX;
  return r;
}
FAKE_EXPORT CUresult cuMemcpyBatchAsync_ptsz(CUdeviceptr *dsts, CUdeviceptr *srcs, size_t *sizes,
                                             size_t count, CUmemcpyAttributes *attrs, size_t *idxs,
                                             size_t n, size_t *fail, CUstream h) {
  CUresult r = batch(dsts, srcs, sizes, count, attrs, idxs, n, h, true);
  if (r != CUDA_SUCCESS && fail) *fail = SIZE_MAX;
  return r;
}

static bool operand_valid(const CUmemcpy3DOperand *o) {
  return o->type == CU_MEMCPY_OPERAND_TYPE_POINTER && o->op.ptr.ptr; /* no arrays here */
}

static CUresult batch_3d(size_t n, CUDA_MEMCPY3D_BATCH_OP *ops, unsigned long long flags,
                         CUstream h, bool per_thread) {
  bool ok = n && ops && flags == 0 && batch_stream_valid(h, per_thread);
  for (size_t i = 0; ok && i < n; i++)
    ok = operand_valid(&ops[i].src) && operand_valid(&ops[i].dst) && ops[i].extent.width &&
         ops[i].extent.height && ops[i].extent.depth && order_valid(ops[i].srcAccessOrder);
  return device_work(ok, false, h, per_thread);
}

FAKE_EXPORT CUresult cuMemcpy3DBatchAsync_v2(size_t n, CUDA_MEMCPY3D_BATCH_OP *ops,
                                             unsigned long long flags, CUstream h) {
  return batch_3d(n, ops, flags, h, false);
}
FAKE_EXPORT CUresult cuMemcpy3DBatchAsync_v2_ptsz(size_t n, CUDA_MEMCPY3D_BATCH_OP *ops,
                                                  unsigned long long flags, CUstream h) {
  return batch_3d(n, ops, flags, h, true);
}
FAKE_EXPORT CUresult cuMemcpy3DBatchAsync(size_t n, CUDA_MEMCPY3D_BATCH_OP *ops, size_t *fail,
                                          unsigned long long flags, CUstream h) {
  CUresult r = batch_3d(n, ops, flags, h, false);
  if (r != CUDA_SUCCESS && fail) *fail = SIZE_MAX;
  return r;
}
FAKE_EXPORT CUresult cuMemcpy3DBatchAsync_ptsz(size_t n, CUDA_MEMCPY3D_BATCH_OP *ops, size_t *fail,
                                               unsigned long long flags, CUstream h) {
  CUresult r = batch_3d(n, ops, flags, h, true);
  if (r != CUDA_SUCCESS && fail) *fail = SIZE_MAX;
  return r;
}
