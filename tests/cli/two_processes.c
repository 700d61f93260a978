/* two_processes.c - a program that forks before using CUDA: both processes
 * make the same attach mistake from the same line (AC101), and the child one
 * more of its own (AC102). The CLI must merge both processes' streams into one
 * report, and say which processes each finding came from. */
#include <cuda.h>
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

static void attach_to_legacy_stream(CUdeviceptr m) {
  cuStreamAttachMemAsync(CU_STREAM_LEGACY, m, 0, CU_MEM_ATTACH_SINGLE);
}

int main(void) {
  pid_t child = fork();
  if (child < 0) return 1;
  CUdevice dev;
  CUcontext ctx;
  CUdeviceptr m;
  if (cuInit(0) || cuDeviceGet(&dev, 0) || cuDevicePrimaryCtxRetain(&ctx, dev) ||
      cuCtxSetCurrent(ctx) || cuMemAllocManaged(&m, 1 << 16, CU_MEM_ATTACH_GLOBAL))
    return 1;
  attach_to_legacy_stream(m);
  if (child == 0) {
    CUstream s;
    cuStreamCreate(&s, CU_STREAM_NON_BLOCKING);
    cuStreamAttachMemAsync(s, m, 4096, CU_MEM_ATTACH_SINGLE); /* part of it: AC102 */
    cuStreamSynchronize(s);
    return 0;
  }
  int status;
  waitpid(child, &status, 0);
  cuCtxSynchronize();
  return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}
