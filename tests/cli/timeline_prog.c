/* timeline_prog.c - a program whose findings tell a story across streams, for
 * the HTML report's timeline: memory advised read-mostly, attached to stream a, N sets enqueued on
 * a (argv[1], default 40), the CPU touches the memory while a is busy (AC201),
 * an event recorded on a that stream b waits for, a host function on b, then
 * b is given a's memory (AC301) and other memory is single-attached to the
 * legacy stream (AC101). */
#include <cuda.h>
#include <stdio.h>
#include <stdlib.h>

static void host_step(void *data) {
  (void)data;
}

static int check(CUresult r, const char *what) {
  if (r != CUDA_SUCCESS) fprintf(stderr, "timeline_prog: %s failed (%d)\n", what, (int)r);
  return r != CUDA_SUCCESS;
}

int main(int argc, char **argv) {
  long n = argc > 1 ? atol(argv[1]) : 40;
  CUdevice dev;
  CUcontext ctx;
  CUdeviceptr m, other;
  CUstream a, b;
  CUevent done;
  if (check(cuInit(0), "cuInit") || check(cuDeviceGet(&dev, 0), "cuDeviceGet") ||
      check(cuDevicePrimaryCtxRetain(&ctx, dev), "cuDevicePrimaryCtxRetain") ||
      check(cuCtxSetCurrent(ctx), "cuCtxSetCurrent") ||
      check(cuMemAllocManaged(&m, 1 << 16, CU_MEM_ATTACH_GLOBAL), "cuMemAllocManaged") ||
      check(cuMemAllocManaged(&other, 1 << 16, CU_MEM_ATTACH_GLOBAL), "cuMemAllocManaged") ||
      check(cuStreamCreate(&a, CU_STREAM_NON_BLOCKING), "cuStreamCreate") ||
      check(cuStreamCreate(&b, CU_STREAM_NON_BLOCKING), "cuStreamCreate") ||
      check(cuEventCreate(&done, CU_EVENT_DEFAULT), "cuEventCreate"))
    return 1;
  CUmemLocation gpu = {CU_MEM_LOCATION_TYPE_DEVICE, 0};
  cuMemAdvise(m, 1 << 16, CU_MEM_ADVISE_SET_READ_MOSTLY, gpu); /* part of the story */
  cuStreamAttachMemAsync(a, m, 0, CU_MEM_ATTACH_SINGLE);
  for (long i = 0; i < n; i++)
    cuMemsetD8Async(m, (unsigned char)i, 1 << 16, a);
  ((volatile char *)m)[0] = 1; /* a is busy: AC201 */
  /* After the touch: the host function's start means a's work is complete. */
  cuEventRecord(done, a);
  cuStreamWaitEvent(b, done, 0);
  cuLaunchHostFunc(b, host_step, NULL);
  cuMemsetD8Async(m, 0, 1 << 16, b); /* a's memory on b: AC301 */
  cuStreamAttachMemAsync(CU_STREAM_LEGACY, other, 0, CU_MEM_ATTACH_SINGLE); /* AC101 */
  cuCtxSynchronize();
  cuMemFree(m);
  cuMemFree(other);
  return 0;
}
