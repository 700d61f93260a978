/* stack_sites.c - the same wrong attach (AC101) reached from one place at one
 * stack depth through different callers, and through a frame whose size
 * changes from call to call (a variable-length array), in a loop: each
 * caller must be its own finding with its own count, though the shim keeps a
 * stack per call site and reads it back rather than unwinding again
 * (test_stack_sites.py); then the two callers in turn, whose stacks are read
 * back, and two callers of a wrong launch (AC301) in turn. Built -O0 so
 * every function keeps its frame. */
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

/* A kernel given memory single-attached to another stream (AC301), launched
 * from two callers in turn: a launch's stack is kept the same way. */
static const char ptx[] = ".version 8.0\n.target sm_90\n.address_size 64\n"
                          ".visible .entry use(.param .u64 p)\n{\n  ret;\n}\n";
static CUfunction use;
static CUstream other;

static __attribute__((noinline)) void launch_one(CUdeviceptr p) {
  void *args[] = {&p};
  cuLaunchKernel(use, 1, 1, 1, 32, 1, 1, 0, other, args, NULL);
}

static __attribute__((noinline)) void launch_left(CUdeviceptr p) {
  launch_one(p);
}

static __attribute__((noinline)) void launch_right(CUdeviceptr p) {
  launch_one(p);
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
  CUmodule mod;
  CUstream mine;
  if (cuModuleLoadData(&mod, ptx) || cuModuleGetFunction(&use, mod, "use") ||
      cuStreamCreate(&mine, CU_STREAM_NON_BLOCKING) ||
      cuStreamCreate(&other, CU_STREAM_NON_BLOCKING) ||
      cuStreamAttachMemAsync(mine, p, 0, CU_MEM_ATTACH_SINGLE) || cuStreamSynchronize(mine))
    return 1;
  for (int i = 0; i < 6; i++) {
    launch_left(p);
    launch_right(p);
  }
  puts("done");
  return cuCtxSynchronize() == CUDA_SUCCESS ? 0 : 1;
}
