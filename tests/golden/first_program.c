/* first_program.c - a program as someone new to stream attachment might
 * write it: two buffers attached to stream a, a kernel given both launched
 * on stream b (two problems in one launch: AC301 for each argument), and a
 * helper thread that reads the result while a's kernel may still run
 * (AC201). Its golden report (tests/golden) must name the kernel, both
 * arguments, both allocations and the helper's thread in every format. */
#include <cuda.h>
#include <pthread.h>
#include <stdio.h>

static const char ptx[] = ".version 8.0\n"
                          ".target sm_90\n"
                          ".address_size 64\n"
                          ".visible .entry saxpy(.param .u64 x, .param .u64 y, .param .u32 n)\n"
                          "{\n"
                          "  ret;\n"
                          "}\n";

static void check(CUresult r, const char *what) {
  if (r != CUDA_SUCCESS) fprintf(stderr, "first_program: %s failed (%d)\n", what, (int)r);
}

/* The helper: prints the result as soon as it is asked to. */
static void *print_result(void *arg) {
  const float *y = arg;
  printf("y[0] = %f\n", y[0]);
  return NULL;
}

static void launch(CUfunction saxpy, CUstream stream, void **args) {
  check(cuLaunchKernel(saxpy, 4, 1, 1, 256, 1, 1, 0, stream, args, NULL), "cuLaunchKernel");
}

int main(void) {
  CUdevice dev;
  CUcontext ctx;
  CUmodule mod;
  CUfunction saxpy;
  CUstream a, b;
  CUdeviceptr x, y;
  unsigned n = 1024;
  pthread_t helper;

  check(cuInit(0), "cuInit");
  check(cuDeviceGet(&dev, 0), "cuDeviceGet");
  check(cuDevicePrimaryCtxRetain(&ctx, dev), "cuDevicePrimaryCtxRetain");
  check(cuCtxSetCurrent(ctx), "cuCtxSetCurrent");
  check(cuModuleLoadData(&mod, ptx), "cuModuleLoadData");
  check(cuModuleGetFunction(&saxpy, mod, "saxpy"), "cuModuleGetFunction");
  check(cuStreamCreate(&a, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
  check(cuStreamCreate(&b, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
  check(cuMemAllocManaged(&x, n * sizeof(float), CU_MEM_ATTACH_GLOBAL), "cuMemAllocManaged");
  check(cuMemAllocManaged(&y, n * sizeof(float), CU_MEM_ATTACH_GLOBAL), "cuMemAllocManaged");
  check(cuStreamAttachMemAsync(a, x, 0, CU_MEM_ATTACH_SINGLE), "cuStreamAttachMemAsync");
  check(cuStreamAttachMemAsync(a, y, 0, CU_MEM_ATTACH_SINGLE), "cuStreamAttachMemAsync");
  check(cuStreamSynchronize(a), "cuStreamSynchronize");

  void *args[] = {&x, &y, &n};
  launch(saxpy, b, args); /* wrong: x and y belong to a */
  check(cuStreamSynchronize(b), "cuStreamSynchronize");
  launch(saxpy, a, args);                                 /* right */
  pthread_create(&helper, NULL, print_result, (void *)y); /* wrong: a may still run */
  pthread_join(helper, NULL);
  check(cuStreamSynchronize(a), "cuStreamSynchronize");
  return 0;
}
