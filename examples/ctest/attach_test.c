/* attach_test.c - the test program of the CTest example: a managed buffer
 * attached to a stream and filled there, the right way or with one mistake.
 *
 *   attach_test right   attaches to a stream it created (no finding)
 *   attach_test wrong   single-attaches to the legacy NULL stream, which the
 *                       driver accepts silently (attachcheck: AC101)
 *
 * Exit status 0 when every call succeeds, as a test of its own would: only
 * attachcheck tells the wrong one apart.
 */
#include <cuda.h>
#include <stdio.h>
#include <string.h>

int main(int argc, char **argv) {
  CUdevice dev;
  CUcontext ctx;
  CUstream stream;
  CUdeviceptr data;
  int wrong = argc > 1 && strcmp(argv[1], "wrong") == 0;
  if (cuInit(0) || cuDeviceGet(&dev, 0) || cuDevicePrimaryCtxRetain(&ctx, dev) ||
      cuCtxSetCurrent(ctx) || cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING) ||
      cuMemAllocManaged(&data, 1 << 20, CU_MEM_ATTACH_GLOBAL))
    return fprintf(stderr, "attach_test: no CUDA device\n"), 2;
  CUstream to = wrong ? CU_STREAM_LEGACY : stream;
  if (cuStreamAttachMemAsync(to, data, 0, CU_MEM_ATTACH_SINGLE) ||
      cuMemsetD8Async(data, 0, 1 << 20, to) || cuStreamSynchronize(to) || cuMemFree(data) ||
      cuStreamDestroy(stream))
    return fprintf(stderr, "attach_test: a call failed\n"), 1;
  printf("attach_test %s: done\n", wrong ? "wrong" : "right");
  return 0;
}
