/* attach_mistakes.c - a driver-API program with five classic attach mistakes
 * and the right way beside each. It runs over the real driver and over the
 * stand-in driver, so `tools/demo.sh` can show findings on any machine.
 *
 *   1. single-attach to CU_STREAM_LEGACY: the driver accepts it silently (AC101)
 *   2. attach part of an allocation: the driver refuses it (AC102)
 *   3. attach on a stream that is capturing a graph: the capture breaks (AC107)
 *   4. read memory while a kernel on its stream may run: a silent race (AC201)
 *   5. launch on another stream with memory attached to the first (AC301)
 */
#include <cuda.h>
#include <stdio.h>

static const char ptx[] = ".version 8.0\n"
                          ".target sm_90\n"
                          ".address_size 64\n"
                          ".visible .entry scale(.param .u64 data, .param .u32 n)\n"
                          "{\n"
                          "  ret;\n"
                          "}\n";

static const char *name_of(CUresult r) {
  const char *n = "?";
  cuGetErrorName(r, &n);
  return n;
}

#define SHOW(call) printf("%-72s -> %s\n", #call, name_of(call))

int main(void) {
  CUdevice dev;
  CUcontext ctx;
  CUmodule mod;
  CUfunction scale;
  CUstream stream, other;
  CUdeviceptr data;
  CUgraph graph;
  size_t bytes = 1 << 20;
  unsigned n = (unsigned)(bytes / sizeof(float));

  setvbuf(stdout, NULL, _IOLBF, 0); /* interleave with the findings on stderr */
  if (cuInit(0) != CUDA_SUCCESS || cuDeviceGet(&dev, 0) != CUDA_SUCCESS ||
      cuDevicePrimaryCtxRetain(&ctx, dev) != CUDA_SUCCESS || cuCtxSetCurrent(ctx) != CUDA_SUCCESS) {
    fprintf(stderr, "attach_mistakes: no CUDA device\n");
    return 1;
  }
  SHOW(cuModuleLoadData(&mod, ptx));
  SHOW(cuModuleGetFunction(&scale, mod, "scale"));
  SHOW(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
  SHOW(cuMemAllocManaged(&data, bytes, CU_MEM_ATTACH_GLOBAL));

  printf("\n1. single-attach to the legacy NULL stream (wrong), then to a stream (right)\n");
  SHOW(cuStreamAttachMemAsync(CU_STREAM_LEGACY, data, 0, CU_MEM_ATTACH_SINGLE));
  SHOW(cuStreamAttachMemAsync(stream, data, 0, CU_MEM_ATTACH_SINGLE));

  printf("\n2. attach the first 4 KiB (wrong), then the whole allocation (right)\n");
  SHOW(cuStreamAttachMemAsync(stream, data, 4096, CU_MEM_ATTACH_SINGLE));
  SHOW(cuStreamAttachMemAsync(stream, data, 0, CU_MEM_ATTACH_SINGLE));

  printf("\n3. attach while the stream captures a graph (wrong), then after (right)\n");
  SHOW(cuStreamBeginCapture(stream, CU_STREAM_CAPTURE_MODE_GLOBAL));
  SHOW(cuStreamAttachMemAsync(stream, data, 0, CU_MEM_ATTACH_GLOBAL));
  SHOW(cuStreamEndCapture(stream, &graph));
  SHOW(cuStreamAttachMemAsync(stream, data, 0, CU_MEM_ATTACH_GLOBAL));

  printf("\n4. read the memory while a kernel on its stream may run (wrong), after (right)\n");
  SHOW(cuStreamAttachMemAsync(stream, data, 0, CU_MEM_ATTACH_SINGLE));
  SHOW(cuStreamSynchronize(stream));
  void *args[] = {&data, &n};
  SHOW(cuLaunchKernel(scale, n / 256, 1, 1, 256, 1, 1, 0, stream, args, NULL));
  printf("data[0] = %f while the kernel runs\n", ((volatile float *)data)[0]);
  SHOW(cuStreamSynchronize(stream));
  printf("data[0] = %f after synchronising\n", ((volatile float *)data)[0]);

  printf("\n5. launch on another stream with memory attached to this one (wrong)\n");
  SHOW(cuStreamCreate(&other, CU_STREAM_NON_BLOCKING));
  SHOW(cuLaunchKernel(scale, n / 256, 1, 1, 256, 1, 1, 0, other, args, NULL));
  SHOW(cuCtxSynchronize());
  SHOW(cuMemFree(data));
  SHOW(cuStreamDestroy(stream));
  SHOW(cuStreamDestroy(other));
  return 0;
}
