/* bench/scale.c - how the shim's cost grows with what is alive (CPU side,
 * over the stand-in driver or the real one). Each mode does N operations of
 * one kind and prints the CPU seconds they took - the process's, every
 * thread's: a loaded machine blurs elapsed time, not this - and the peak RSS
 * in KiB:
 *   live N             N small GLOBAL allocations made and kept
 *   free N             N allocations made, then freed (only the frees timed)
 *   attach N           N allocations each attached to a stream, launch+sync each 256
 *   attach-host N      N host-attached allocations each attached to one idle stream
 *   first-busy N       N allocations, then one launch+sync: the first moment
 *                      anything is busy (the page guard groups what is alive)
 *   stream-cycles N    N times: create a stream, launch on it, sync, destroy it
 *   streams-alive N    N streams created and each used once, all kept alive
 *   streams-ended N    N streams created and each used once, all synchronised
 *                      (cuCtxSynchronize), then all destroyed
 *   syscalls N         N one-byte write(2)s of a stack buffer to /dev/null,
 *                      with 1,000 GLOBAL allocations alive and a stream busy:
 *                      a program's ordinary I/O through the shim's wrappers
 * bench/scale.sh runs each with and without the shim at several N. */
#include <cuda.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

static const char ptx[] = ".version 8.0\n.target sm_90\n.address_size 64\n"
                          ".visible .entry touch(.param .u64 p)\n{\n  ret;\n}\n";
static CUfunction kernel;

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void launch(CUstream s, CUdeviceptr p) {
  void *args[] = {&p};
  if (cuLaunchKernel(kernel, 1, 1, 1, 1, 1, 1, 0, s, args, NULL)) exit(1);
}

static CUdeviceptr *allocate_as(long n, unsigned flags) {
  CUdeviceptr *a = malloc(sizeof *a * (size_t)n);
  for (long i = 0; a && i < n; i++)
    if (cuMemAllocManaged(&a[i], 64, flags)) exit(1);
  return a;
}

static CUdeviceptr *allocate(long n) {
  return allocate_as(n, CU_MEM_ATTACH_GLOBAL);
}

int main(int argc, char **argv) {
  if (argc != 3) return fprintf(stderr, "usage: %s MODE N\n", argv[0]), 2;
  const char *mode = argv[1];
  long n = atol(argv[2]);
  CUdevice dev;
  CUcontext ctx;
  CUmodule mod;
  CUstream s;
  if (cuInit(0) || cuDeviceGet(&dev, 0) || cuDevicePrimaryCtxRetain(&ctx, dev) ||
      cuCtxSetCurrent(ctx) || cuModuleLoadData(&mod, ptx) ||
      cuModuleGetFunction(&kernel, mod, "touch") || cuStreamCreate(&s, CU_STREAM_NON_BLOCKING))
    return 1;
  double t0 = now(), t1;
  if (strcmp(mode, "live") == 0) {
    allocate(n);
  } else if (strcmp(mode, "free") == 0) {
    CUdeviceptr *a = allocate(n);
    t0 = now();
    for (long i = 0; i < n; i++)
      cuMemFree(a[i]);
  } else if (strcmp(mode, "attach") == 0) {
    CUdeviceptr *a = allocate(n);
    t0 = now();
    for (long i = 0; i < n; i++) {
      cuStreamAttachMemAsync(s, a[i], 0, CU_MEM_ATTACH_SINGLE);
      if (i % 256 == 255) launch(s, a[i]), cuStreamSynchronize(s);
    }
    cuStreamSynchronize(s);
  } else if (strcmp(mode, "attach-host") == 0) {
    CUdeviceptr *a = allocate_as(n, CU_MEM_ATTACH_HOST);
    t0 = now();
    for (long i = 0; i < n; i++)
      cuStreamAttachMemAsync(s, a[i], 0, CU_MEM_ATTACH_SINGLE);
    cuStreamSynchronize(s);
  } else if (strcmp(mode, "first-busy") == 0) {
    CUdeviceptr *a = allocate(n);
    t0 = now();
    launch(s, a[0]), cuStreamSynchronize(s);
  } else if (strcmp(mode, "stream-cycles") == 0) {
    for (long i = 0; i < n; i++) {
      CUstream t;
      cuStreamCreate(&t, CU_STREAM_NON_BLOCKING);
      launch(t, 0);
      cuStreamSynchronize(t);
      cuStreamDestroy(t);
    }
  } else if (strcmp(mode, "streams-alive") == 0 || strcmp(mode, "streams-ended") == 0) {
    CUstream *t = malloc(sizeof *t * (size_t)n);
    for (long i = 0; t && i < n; i++) {
      cuStreamCreate(&t[i], CU_STREAM_NON_BLOCKING);
      launch(t[i], 0);
    }
    cuCtxSynchronize();
    for (long i = 0; t && mode[8] == 'e' && i < n; i++)
      cuStreamDestroy(t[i]);
  } else if (strcmp(mode, "syscalls") == 0) {
    CUdeviceptr *a = allocate(1000);
    int fd = open("/dev/null", O_WRONLY);
    char byte = 'x';
    launch(s, a[0]);
    t0 = now();
    for (long i = 0; fd >= 0 && i < n; i++)
      if (write(fd, &byte, 1) != 1) return 1;
    cuStreamSynchronize(s);
  } else {
    return fprintf(stderr, "unknown mode %s\n", mode), 2;
  }
  t1 = now();
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  printf("%.4f %ld\n", t1 - t0, ru.ru_maxrss);
  return 0;
}
