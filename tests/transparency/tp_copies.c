/* tp_copies.c - the driver's own reads of managed memory, and programs that
 * copy without ever launching a kernel.
 *
 *   tp_copies copy2d_after_attach  a 2D copy from managed memory right after
 *                                  attaching it globally on the NULL stream:
 *                                  the driver reads the source through the CPU
 *                                  mapping; correct, no finding
 *   tp_copies htod_after_attach    the same with cuMemcpyHtoD
 *   tp_copies copy_unreached       an async copy works on m while the CPU
 *                                  writes g: AC202 in strict semantics, none
 *                                  in device semantics (the copy cannot reach g)
 *   tp_copies copy_reached         the CPU writes m, which the copy reads:
 *                                  AC202 in both
 */
#include "tp.h"

enum { ROWS = 64, PITCH = 4096, WIDTH = 1024, SIZE = ROWS * PITCH };

static CUdeviceptr source(void) {
  CUdeviceptr m = tp_managed(SIZE, CU_MEM_ATTACH_GLOBAL);
  tp_fill((void *)m, SIZE, 11);
  printf("source sum %08x\n", tp_sum((void *)m, SIZE));
  EXPECT_RC(cu.cuStreamAttachMemAsync(NULL, m, 0, CU_MEM_ATTACH_GLOBAL), CUDA_SUCCESS);
  return m;
}

static void copy2d_after_attach(void) {
  CUdeviceptr d;
  tp_start();
  CUdeviceptr m = source();
  EXPECT_RC(cu.cuMemAlloc(&d, SIZE), CUDA_SUCCESS);
  CUDA_MEMCPY2D c = {.srcMemoryType = CU_MEMORYTYPE_HOST,
                     .srcHost = (void *)m,
                     .srcPitch = PITCH,
                     .dstMemoryType = CU_MEMORYTYPE_DEVICE,
                     .dstDevice = d,
                     .dstPitch = WIDTH,
                     .WidthInBytes = WIDTH,
                     .Height = ROWS};
  printf("cuMemcpy2D %d\n", cuMemcpy2D(&c));
  printf("source sum after %08x\n", tp_sum((void *)m, SIZE));
}

static void htod_after_attach(void) {
  CUdeviceptr d;
  tp_start();
  CUdeviceptr m = source();
  EXPECT_RC(cu.cuMemAlloc(&d, SIZE), CUDA_SUCCESS);
  printf("cuMemcpyHtoD %d\n", cu.cuMemcpyHtoD(d, (void *)m, SIZE));
  printf("source sum after %08x\n", tp_sum((void *)m, SIZE));
}

/* An async copy from m on s, then a CPU write to target while s works. */
static void copy_then_write(int to_source) {
  CUdeviceptr d;
  tp_start();
  CUstream s = tp_stream();
  CUdeviceptr m = tp_managed(SIZE, CU_MEM_ATTACH_GLOBAL);
  CUdeviceptr g = tp_managed(SIZE, CU_MEM_ATTACH_GLOBAL);
  EXPECT_RC(cu.cuMemAlloc(&d, SIZE), CUDA_SUCCESS);
  printf("cuMemcpyAsync %d\n", cu.cuMemcpyAsync(d, m, SIZE, s));
  ((volatile char *)(to_source ? m : g))[0] = 1;
  EXPECT_RC(cu.cuStreamSynchronize(s), CUDA_SUCCESS);
  printf("written %d\n", ((volatile char *)(to_source ? m : g))[0]);
}

static void copy_unreached(void) {
  copy_then_write(0);
}
static void copy_reached(void) {
  copy_then_write(1);
}

static const struct scenario_case cases[] = {
    {"copy2d_after_attach", copy2d_after_attach},
    {"htod_after_attach", htod_after_attach},
    {"copy_unreached", copy_unreached},
    {"copy_reached", copy_reached},
};

TP_MAIN(cases)
