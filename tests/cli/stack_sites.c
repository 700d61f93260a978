/* stack_sites.c - the same wrong attach (AC101) reached from one place at one
 * stack depth through different callers, and through a frame whose size
 * changes from call to call (a variable-length array), in a loop: each
 * caller must be its own finding with its own count, though the shim keeps a
 * stack per call site and reads it back rather than unwinding again
 * (test_stack_sites.py); then the two callers in turn, whose stacks are read
 * back. Built -O0 so every function keeps its frame. */
#include <cuda.h>
#include <stdio.h>
#include <string.h>

static __attribute__((noinline)) void attach_one(CUdeviceptr p) {
  cuStreamAttachMemAsync(CU_STREAM_LEGACY, p, 0, CU_MEM_ATTACH_SINGLE);
}

/* Two callers of the same size: attach_one's frame lies at the same place
 * from either, so only the return address one frame out tells them apart. */
static __attribute__((noinline)) void from_left(CUdeviceptr p) {
  attach_one(p);
}

static __attribute__((noinline)) void from_right(CUdeviceptr p) {
  attach_one(p);
}

/* Its frame grows with n: the frames inside it move. */
static __attribute__((noinline)) void with_array(CUdeviceptr p, int n) {
  volatile char pad[n * 512];
  memset((char *)pad, 0, sizeof pad);
  from_left(p);
}

/* The last word: its finding shows the attach before it, whose stack came
 * back from the kept ones. */
static __attribute__((noinline)) void last_word(CUdeviceptr p) {
  cuStreamAttachMemAsync(CU_STREAM_LEGACY, p, 0, CU_MEM_ATTACH_SINGLE);
}

int main(void) {
  CUdevice dev;
  CUcontext ctx;
  CUdeviceptr p;
  if (cuInit(0) || cuDeviceGet(&dev, 0) || cuDevicePrimaryCtxRetain(&ctx, dev) ||
      cuCtxSetCurrent(ctx) || cuMemAllocManaged(&p, 4096, CU_MEM_ATTACH_GLOBAL))
    return 1;
  for (int i = 0; i < 12; i++) {
    if (i % 4 == 0) from_left(p);
    if (i % 4 == 1) from_right(p);
    if (i % 4 == 2) attach_one(p);
    if (i % 4 == 3) with_array(p, i);
  }
  for (int i = 0; i < 6; i++) {
    from_left(p);
    from_right(p);
  }
  last_word(p);
  puts("done");
  return cuCtxSynchronize() == CUDA_SUCCESS ? 0 : 1;
}
