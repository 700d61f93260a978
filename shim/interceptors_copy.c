/* interceptors_copy.c - wrappers of every copy and set the driver exports.
 *
 * An asynchronous one is an operation of its stream whose operands are judged
 * like a kernel's arguments (kernel_args.c: AC301). A synchronous one is an
 * operation of the legacy stream (the thread's own default stream for _ptds)
 * that the host waits for. Managed memory reaches a copy under any name: a
 * device pointer, a host pointer (the driver then reads or writes it through
 * the program's own mapping), or a 2D/3D side of memory type HOST, DEVICE or
 * UNIFIED; every such operand is judged. Arrays are never managed memory.
 *
 * Here too the compiler checks driver_api.inc's wrapped rows against cuda.h. */
#include "gpu_work.h"
#include "repair.h"

/* Each wrapped row redeclared from its Params: cuda.h (with
 * __CUDA_API_VERSION_INTERNAL) declares every ABI under its exported name, so a
 * row whose parameter types differ from the driver's prototype does not compile. */
#define AC_WRAPPED(Name, Params, Effect, Why) CUresult CUDAAPI Name Params;
#define AC_LEFT_ALONE(Name, Reason, Why)
#include "driver_api.inc"
#undef AC_WRAPPED
#undef AC_LEFT_ALONE

/* ---- asynchronous copies and sets ---- */

/* The operation on hStream, then its destination and source (0: none);
 * DstBytes: how many bytes the GPU writes from Dst on, where that is one
 * span (0: not, or a copy to the host), for the guard to move closed memory
 * there to the GPU first (guard/ahead.c). */
#define COPY(Name, PerThread, Params, Args, Dst, Src, DstBytes)                                    \
  AC_EXPORT CUresult Name Params {                                                                 \
    AC_START_OR_FAIL(Name);                                                                        \
    AC_REPAIR_BEFORE(ac_repair_copy_order(#Name, hStream, PerThread, Dst, Src));                   \
    ac_copy_ahead(hStream, PerThread, Dst, DstBytes);                                              \
    CUresult r = ac_real.Name Args;                                                                \
    if (r == CUDA_SUCCESS) ac_on_copy(#Name, hStream, PerThread, Dst, Src);                        \
    AC_REPAIR_AFTER();                                                                             \
    return r;                                                                                      \
  }
#define HOST(p) ((uintptr_t)(p))

#define COPY_PARAMS (CUdeviceptr dst, CUdeviceptr src, size_t ByteCount, CUstream hStream)
#define COPY_ARGS (dst, src, ByteCount, hStream)
COPY(cuMemcpyAsync, false, COPY_PARAMS, COPY_ARGS, dst, src, ByteCount)
COPY(cuMemcpyAsync_ptsz, true, COPY_PARAMS, COPY_ARGS, dst, src, ByteCount)
#define HTOD_PARAMS (CUdeviceptr dstDevice, const void *srcHost, size_t ByteCount, CUstream hStream)
#define HTOD_ARGS (dstDevice, srcHost, ByteCount, hStream)
COPY(cuMemcpyHtoDAsync_v2, false, HTOD_PARAMS, HTOD_ARGS, dstDevice, HOST(srcHost), ByteCount)
COPY(cuMemcpyHtoDAsync_v2_ptsz, true, HTOD_PARAMS, HTOD_ARGS, dstDevice, HOST(srcHost), ByteCount)
#define DTOH_PARAMS (void *dstHost, CUdeviceptr srcDevice, size_t ByteCount, CUstream hStream)
#define DTOH_ARGS (dstHost, srcDevice, ByteCount, hStream)
COPY(cuMemcpyDtoHAsync_v2, false, DTOH_PARAMS, DTOH_ARGS, HOST(dstHost), srcDevice, 0)
COPY(cuMemcpyDtoHAsync_v2_ptsz, true, DTOH_PARAMS, DTOH_ARGS, HOST(dstHost), srcDevice, 0)
#define DTOD_PARAMS                                                                                \
  (CUdeviceptr dstDevice, CUdeviceptr srcDevice, size_t ByteCount, CUstream hStream)
#define DTOD_ARGS (dstDevice, srcDevice, ByteCount, hStream)
COPY(cuMemcpyDtoDAsync_v2, false, DTOD_PARAMS, DTOD_ARGS, dstDevice, srcDevice, ByteCount)
COPY(cuMemcpyDtoDAsync_v2_ptsz, true, DTOD_PARAMS, DTOD_ARGS, dstDevice, srcDevice, ByteCount)
#define PEER_PARAMS                                                                                \
  (CUdeviceptr dstDevice, CUcontext dstContext, CUdeviceptr srcDevice, CUcontext srcContext,       \
   size_t ByteCount, CUstream hStream)
#define PEER_ARGS (dstDevice, dstContext, srcDevice, srcContext, ByteCount, hStream)
COPY(cuMemcpyPeerAsync, false, PEER_PARAMS, PEER_ARGS, dstDevice, srcDevice, ByteCount)
COPY(cuMemcpyPeerAsync_ptsz, true, PEER_PARAMS, PEER_ARGS, dstDevice, srcDevice, ByteCount)
#define HTOA_PARAMS                                                                                \
  (CUarray dstArray, size_t dstOffset, const void *srcHost, size_t ByteCount, CUstream hStream)
#define HTOA_ARGS (dstArray, dstOffset, srcHost, ByteCount, hStream)
COPY(cuMemcpyHtoAAsync_v2, false, HTOA_PARAMS, HTOA_ARGS, 0, HOST(srcHost), 0)
COPY(cuMemcpyHtoAAsync_v2_ptsz, true, HTOA_PARAMS, HTOA_ARGS, 0, HOST(srcHost), 0)
#define ATOH_PARAMS                                                                                \
  (void *dstHost, CUarray srcArray, size_t srcOffset, size_t ByteCount, CUstream hStream)
#define ATOH_ARGS (dstHost, srcArray, srcOffset, ByteCount, hStream)
COPY(cuMemcpyAtoHAsync_v2, false, ATOH_PARAMS, ATOH_ARGS, HOST(dstHost), 0, 0)
COPY(cuMemcpyAtoHAsync_v2_ptsz, true, ATOH_PARAMS, ATOH_ARGS, HOST(dstHost), 0, 0)

COPY(cuMemcpy2DAsync_v2, false, (const CUDA_MEMCPY2D *pCopy, CUstream hStream), (pCopy, hStream),
     AC_SIDE_2D(pCopy, dst), AC_SIDE_2D(pCopy, src), 0)
COPY(cuMemcpy2DAsync_v2_ptsz, true, (const CUDA_MEMCPY2D *pCopy, CUstream hStream),
     (pCopy, hStream), AC_SIDE_2D(pCopy, dst), AC_SIDE_2D(pCopy, src), 0)
COPY(cuMemcpy3DAsync_v2, false, (const CUDA_MEMCPY3D *pCopy, CUstream hStream), (pCopy, hStream),
     AC_SIDE_3D(pCopy, dst), AC_SIDE_3D(pCopy, src), 0)
COPY(cuMemcpy3DAsync_v2_ptsz, true, (const CUDA_MEMCPY3D *pCopy, CUstream hStream),
     (pCopy, hStream), AC_SIDE_3D(pCopy, dst), AC_SIDE_3D(pCopy, src), 0)
COPY(cuMemcpy3DPeerAsync, false, (const CUDA_MEMCPY3D_PEER *pCopy, CUstream hStream),
     (pCopy, hStream), AC_SIDE_3D(pCopy, dst), AC_SIDE_3D(pCopy, src), 0)
COPY(cuMemcpy3DPeerAsync_ptsz, true, (const CUDA_MEMCPY3D_PEER *pCopy, CUstream hStream),
     (pCopy, hStream), AC_SIDE_3D(pCopy, dst), AC_SIDE_3D(pCopy, src), 0)

#define SET_PARAMS(T) (CUdeviceptr dstDevice, T value, size_t N, CUstream hStream)
#define SET_ARGS (dstDevice, value, N, hStream)
COPY(cuMemsetD8Async, false, SET_PARAMS(unsigned char), SET_ARGS, dstDevice, 0, N)
COPY(cuMemsetD8Async_ptsz, true, SET_PARAMS(unsigned char), SET_ARGS, dstDevice, 0, N)
COPY(cuMemsetD16Async, false, SET_PARAMS(unsigned short), SET_ARGS, dstDevice, 0, N * 2)
COPY(cuMemsetD16Async_ptsz, true, SET_PARAMS(unsigned short), SET_ARGS, dstDevice, 0, N * 2)
COPY(cuMemsetD32Async, false, SET_PARAMS(unsigned int), SET_ARGS, dstDevice, 0, N * 4)
COPY(cuMemsetD32Async_ptsz, true, SET_PARAMS(unsigned int), SET_ARGS, dstDevice, 0, N * 4)
#define SET2D_PARAMS(T)                                                                            \
  (CUdeviceptr dstDevice, size_t dstPitch, T value, size_t Width, size_t Height, CUstream hStream)
#define SET2D_ARGS (dstDevice, dstPitch, value, Width, Height, hStream)
#define SET2D_BYTES(Size) (Height ? (Height - 1) * dstPitch + Width * (Size) : 0)
COPY(cuMemsetD2D8Async, false, SET2D_PARAMS(unsigned char), SET2D_ARGS, dstDevice, 0,
     SET2D_BYTES(1))
COPY(cuMemsetD2D8Async_ptsz, true, SET2D_PARAMS(unsigned char), SET2D_ARGS, dstDevice, 0,
     SET2D_BYTES(1))
COPY(cuMemsetD2D16Async, false, SET2D_PARAMS(unsigned short), SET2D_ARGS, dstDevice, 0,
     SET2D_BYTES(2))
COPY(cuMemsetD2D16Async_ptsz, true, SET2D_PARAMS(unsigned short), SET2D_ARGS, dstDevice, 0,
     SET2D_BYTES(2))
COPY(cuMemsetD2D32Async, false, SET2D_PARAMS(unsigned int), SET2D_ARGS, dstDevice, 0,
     SET2D_BYTES(4))
COPY(cuMemsetD2D32Async_ptsz, true, SET2D_PARAMS(unsigned int), SET2D_ARGS, dstDevice, 0,
     SET2D_BYTES(4))

/* ---- batches: each copy of the batch is judged, in the batch's stream ---- */

static void on_batch(const char *api, CUstream stream, bool per_thread, const CUdeviceptr *dsts,
                     const CUdeviceptr *srcs, size_t count) {
  for (size_t i = 0; i < count; i++)
    ac_on_copy(api, stream, per_thread, dsts[i], srcs[i]);
}
static void repair_batch(const char *api, CUstream stream, bool per_thread, const CUdeviceptr *dsts,
                         const CUdeviceptr *srcs, size_t count) {
  for (size_t i = 0; i < count; i++)
    ac_repair_copy_order(api, stream, per_thread, dsts[i], srcs[i]);
}

static uintptr_t operand_3d(const CUmemcpy3DOperand *o) {
  return o->type == CU_MEMCPY_OPERAND_TYPE_POINTER ? o->op.ptr.ptr : 0;
}
static void on_batch_3d(const char *api, CUstream stream, bool per_thread,
                        const CUDA_MEMCPY3D_BATCH_OP *ops, size_t count) {
  for (size_t i = 0; i < count; i++)
    ac_on_copy(api, stream, per_thread, operand_3d(&ops[i].dst), operand_3d(&ops[i].src));
}
static void repair_batch_3d(const char *api, CUstream stream, bool per_thread,
                            const CUDA_MEMCPY3D_BATCH_OP *ops, size_t count) {
  for (size_t i = 0; i < count; i++)
    ac_repair_copy_order(api, stream, per_thread, operand_3d(&ops[i].dst), operand_3d(&ops[i].src));
}

#define BATCH(Name, PerThread, Params, Args, Judge, Repair)                                        \
  AC_EXPORT CUresult Name Params {                                                                 \
    AC_START_OR_FAIL(Name);                                                                        \
    AC_REPAIR_BEFORE(Repair);                                                                      \
    CUresult r = ac_real.Name Args;                                                                \
    if (r == CUDA_SUCCESS) Judge;                                                                  \
    AC_REPAIR_AFTER();                                                                             \
    return r;                                                                                      \
  }
#define BATCH_PARAMS(...)                                                                          \
  (CUdeviceptr * dsts, CUdeviceptr * srcs, size_t * sizes, size_t count,                           \
   CUmemcpyAttributes * attrs, size_t * attrsIdxs, size_t numAttrs, __VA_ARGS__ CUstream hStream)
#define BATCH_ARGS(...) (dsts, srcs, sizes, count, attrs, attrsIdxs, numAttrs, __VA_ARGS__ hStream)
#define JUDGE_BATCH(Name, PerThread) on_batch(#Name, hStream, PerThread, dsts, srcs, count)
#define REPAIR_BATCH(Name, PerThread) repair_batch(#Name, hStream, PerThread, dsts, srcs, count)
BATCH(cuMemcpyBatchAsync, false, BATCH_PARAMS(size_t *failIdx, ), BATCH_ARGS(failIdx, ),
      JUDGE_BATCH(cuMemcpyBatchAsync, false), REPAIR_BATCH(cuMemcpyBatchAsync, false))
BATCH(cuMemcpyBatchAsync_ptsz, true, BATCH_PARAMS(size_t *failIdx, ), BATCH_ARGS(failIdx, ),
      JUDGE_BATCH(cuMemcpyBatchAsync_ptsz, true), REPAIR_BATCH(cuMemcpyBatchAsync_ptsz, true))
BATCH(cuMemcpyBatchAsync_v2, false, BATCH_PARAMS(), BATCH_ARGS(),
      JUDGE_BATCH(cuMemcpyBatchAsync_v2, false), REPAIR_BATCH(cuMemcpyBatchAsync_v2, false))
BATCH(cuMemcpyBatchAsync_v2_ptsz, true, BATCH_PARAMS(), BATCH_ARGS(),
      JUDGE_BATCH(cuMemcpyBatchAsync_v2_ptsz, true), REPAIR_BATCH(cuMemcpyBatchAsync_v2_ptsz, true))
#define BATCH3D_PARAMS(...)                                                                        \
  (size_t numOps, CUDA_MEMCPY3D_BATCH_OP * opList, __VA_ARGS__ unsigned long long flags,           \
   CUstream hStream)
#define BATCH3D_ARGS(...) (numOps, opList, __VA_ARGS__ flags, hStream)
#define JUDGE_BATCH3D(Name, PerThread) on_batch_3d(#Name, hStream, PerThread, opList, numOps)
#define REPAIR_BATCH3D(Name, PerThread) repair_batch_3d(#Name, hStream, PerThread, opList, numOps)
BATCH(cuMemcpy3DBatchAsync, false, BATCH3D_PARAMS(size_t *failIdx, ), BATCH3D_ARGS(failIdx, ),
      JUDGE_BATCH3D(cuMemcpy3DBatchAsync, false), REPAIR_BATCH3D(cuMemcpy3DBatchAsync, false))
BATCH(cuMemcpy3DBatchAsync_ptsz, true, BATCH3D_PARAMS(size_t *failIdx, ), BATCH3D_ARGS(failIdx, ),
      JUDGE_BATCH3D(cuMemcpy3DBatchAsync_ptsz, true),
      REPAIR_BATCH3D(cuMemcpy3DBatchAsync_ptsz, true))
BATCH(cuMemcpy3DBatchAsync_v2, false, BATCH3D_PARAMS(), BATCH3D_ARGS(),
      JUDGE_BATCH3D(cuMemcpy3DBatchAsync_v2, false), REPAIR_BATCH3D(cuMemcpy3DBatchAsync_v2, false))
BATCH(cuMemcpy3DBatchAsync_v2_ptsz, true, BATCH3D_PARAMS(), BATCH3D_ARGS(),
      JUDGE_BATCH3D(cuMemcpy3DBatchAsync_v2_ptsz, true),
      REPAIR_BATCH3D(cuMemcpy3DBatchAsync_v2_ptsz, true))

/* ---- synchronous copies and sets ----
 * An operation on the legacy stream (the thread's own default stream for
 * _ptds) that the host waits for. The driver waits for the stream's earlier
 * work before it touches host memory: a host-typed side of a 2D copy it reads
 * or writes through the program's own mapping, managed memory included. So
 * the operation is told to the model before the call is forwarded, and the
 * page guard sees those accesses as made after the synchronisation they
 * follow. A call that then fails may leave the model believing in a
 * synchronisation that did not happen: a finding missed, never one made up. */
#define SYNC_COPY(Name, PerThread, Params, Args)                                                   \
  AC_EXPORT CUresult Name Params {                                                                 \
    AC_START_OR_FAIL(Name);                                                                        \
    ac_on_sync_copy(#Name, PerThread);                                                             \
    return ac_real.Name Args;                                                                      \
  }
#define MEMCPY_PARAMS (CUdeviceptr dst, CUdeviceptr src, size_t ByteCount)
SYNC_COPY(cuMemcpy, false, MEMCPY_PARAMS, (dst, src, ByteCount))
SYNC_COPY(cuMemcpy_ptds, true, MEMCPY_PARAMS, (dst, src, ByteCount))
#define SYNC_HTOD_PARAMS (CUdeviceptr dstDevice, const void *srcHost, size_t ByteCount)
SYNC_COPY(cuMemcpyHtoD_v2, false, SYNC_HTOD_PARAMS, (dstDevice, srcHost, ByteCount))
SYNC_COPY(cuMemcpyHtoD_v2_ptds, true, SYNC_HTOD_PARAMS, (dstDevice, srcHost, ByteCount))
#define SYNC_DTOH_PARAMS (void *dstHost, CUdeviceptr srcDevice, size_t ByteCount)
SYNC_COPY(cuMemcpyDtoH_v2, false, SYNC_DTOH_PARAMS, (dstHost, srcDevice, ByteCount))
SYNC_COPY(cuMemcpyDtoH_v2_ptds, true, SYNC_DTOH_PARAMS, (dstHost, srcDevice, ByteCount))
#define SYNC_DTOD_PARAMS (CUdeviceptr dstDevice, CUdeviceptr srcDevice, size_t ByteCount)
SYNC_COPY(cuMemcpyDtoD_v2, false, SYNC_DTOD_PARAMS, (dstDevice, srcDevice, ByteCount))
SYNC_COPY(cuMemcpyDtoD_v2_ptds, true, SYNC_DTOD_PARAMS, (dstDevice, srcDevice, ByteCount))
#define SYNC_PEER_PARAMS                                                                           \
  (CUdeviceptr dstDevice, CUcontext dstContext, CUdeviceptr srcDevice, CUcontext srcContext,       \
   size_t ByteCount)
#define SYNC_PEER_ARGS (dstDevice, dstContext, srcDevice, srcContext, ByteCount)
SYNC_COPY(cuMemcpyPeer, false, SYNC_PEER_PARAMS, SYNC_PEER_ARGS)
SYNC_COPY(cuMemcpyPeer_ptds, true, SYNC_PEER_PARAMS, SYNC_PEER_ARGS)
#define SYNC_HTOA_PARAMS (CUarray dstArray, size_t dstOffset, const void *srcHost, size_t ByteCount)
#define SYNC_HTOA_ARGS (dstArray, dstOffset, srcHost, ByteCount)
SYNC_COPY(cuMemcpyHtoA_v2, false, SYNC_HTOA_PARAMS, SYNC_HTOA_ARGS)
SYNC_COPY(cuMemcpyHtoA_v2_ptds, true, SYNC_HTOA_PARAMS, SYNC_HTOA_ARGS)
#define SYNC_ATOH_PARAMS (void *dstHost, CUarray srcArray, size_t srcOffset, size_t ByteCount)
#define SYNC_ATOH_ARGS (dstHost, srcArray, srcOffset, ByteCount)
SYNC_COPY(cuMemcpyAtoH_v2, false, SYNC_ATOH_PARAMS, SYNC_ATOH_ARGS)
SYNC_COPY(cuMemcpyAtoH_v2_ptds, true, SYNC_ATOH_PARAMS, SYNC_ATOH_ARGS)
#define SYNC_DTOA_PARAMS                                                                           \
  (CUarray dstArray, size_t dstOffset, CUdeviceptr srcDevice, size_t ByteCount)
#define SYNC_DTOA_ARGS (dstArray, dstOffset, srcDevice, ByteCount)
SYNC_COPY(cuMemcpyDtoA_v2, false, SYNC_DTOA_PARAMS, SYNC_DTOA_ARGS)
SYNC_COPY(cuMemcpyDtoA_v2_ptds, true, SYNC_DTOA_PARAMS, SYNC_DTOA_ARGS)
#define SYNC_ATOD_PARAMS                                                                           \
  (CUdeviceptr dstDevice, CUarray srcArray, size_t srcOffset, size_t ByteCount)
#define SYNC_ATOD_ARGS (dstDevice, srcArray, srcOffset, ByteCount)
SYNC_COPY(cuMemcpyAtoD_v2, false, SYNC_ATOD_PARAMS, SYNC_ATOD_ARGS)
SYNC_COPY(cuMemcpyAtoD_v2_ptds, true, SYNC_ATOD_PARAMS, SYNC_ATOD_ARGS)
#define SYNC_ATOA_PARAMS                                                                           \
  (CUarray dstArray, size_t dstOffset, CUarray srcArray, size_t srcOffset, size_t ByteCount)
#define SYNC_ATOA_ARGS (dstArray, dstOffset, srcArray, srcOffset, ByteCount)
SYNC_COPY(cuMemcpyAtoA_v2, false, SYNC_ATOA_PARAMS, SYNC_ATOA_ARGS)
SYNC_COPY(cuMemcpyAtoA_v2_ptds, true, SYNC_ATOA_PARAMS, SYNC_ATOA_ARGS)
SYNC_COPY(cuMemcpy2D_v2, false, (const CUDA_MEMCPY2D *pCopy), (pCopy))
SYNC_COPY(cuMemcpy2D_v2_ptds, true, (const CUDA_MEMCPY2D *pCopy), (pCopy))
SYNC_COPY(cuMemcpy2DUnaligned_v2, false, (const CUDA_MEMCPY2D *pCopy), (pCopy))
SYNC_COPY(cuMemcpy2DUnaligned_v2_ptds, true, (const CUDA_MEMCPY2D *pCopy), (pCopy))
SYNC_COPY(cuMemcpy3D_v2, false, (const CUDA_MEMCPY3D *pCopy), (pCopy))
SYNC_COPY(cuMemcpy3D_v2_ptds, true, (const CUDA_MEMCPY3D *pCopy), (pCopy))
SYNC_COPY(cuMemcpy3DPeer, false, (const CUDA_MEMCPY3D_PEER *pCopy), (pCopy))
SYNC_COPY(cuMemcpy3DPeer_ptds, true, (const CUDA_MEMCPY3D_PEER *pCopy), (pCopy))
#define SYNC_SET_PARAMS(T) (CUdeviceptr dstDevice, T value, size_t N)
#define SYNC_SET_ARGS (dstDevice, value, N)
SYNC_COPY(cuMemsetD8_v2, false, SYNC_SET_PARAMS(unsigned char), SYNC_SET_ARGS)
SYNC_COPY(cuMemsetD8_v2_ptds, true, SYNC_SET_PARAMS(unsigned char), SYNC_SET_ARGS)
SYNC_COPY(cuMemsetD16_v2, false, SYNC_SET_PARAMS(unsigned short), SYNC_SET_ARGS)
SYNC_COPY(cuMemsetD16_v2_ptds, true, SYNC_SET_PARAMS(unsigned short), SYNC_SET_ARGS)
SYNC_COPY(cuMemsetD32_v2, false, SYNC_SET_PARAMS(unsigned int), SYNC_SET_ARGS)
SYNC_COPY(cuMemsetD32_v2_ptds, true, SYNC_SET_PARAMS(unsigned int), SYNC_SET_ARGS)
#define SYNC_SET2D_PARAMS(T)                                                                       \
  (CUdeviceptr dstDevice, size_t dstPitch, T value, size_t Width, size_t Height)
#define SYNC_SET2D_ARGS (dstDevice, dstPitch, value, Width, Height)
SYNC_COPY(cuMemsetD2D8_v2, false, SYNC_SET2D_PARAMS(unsigned char), SYNC_SET2D_ARGS)
SYNC_COPY(cuMemsetD2D8_v2_ptds, true, SYNC_SET2D_PARAMS(unsigned char), SYNC_SET2D_ARGS)
SYNC_COPY(cuMemsetD2D16_v2, false, SYNC_SET2D_PARAMS(unsigned short), SYNC_SET2D_ARGS)
SYNC_COPY(cuMemsetD2D16_v2_ptds, true, SYNC_SET2D_PARAMS(unsigned short), SYNC_SET2D_ARGS)
SYNC_COPY(cuMemsetD2D32_v2, false, SYNC_SET2D_PARAMS(unsigned int), SYNC_SET2D_ARGS)
SYNC_COPY(cuMemsetD2D32_v2_ptds, true, SYNC_SET2D_PARAMS(unsigned int), SYNC_SET2D_ARGS)
