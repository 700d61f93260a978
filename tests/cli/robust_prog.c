/* robust_prog.c - a program that does to the shim what real programs do:
 *
 *   robust_prog fork-busy          forks while managed memory is protected
 *                                  (a kernel is running on it)
 *   robust_prog storm PAGES        touches PAGES pages of memory a kernel may
 *                                  use, as fast as it can (a storm of AC202)
 *   robust_prog close-fds DATA     a finding, closes every descriptor >= 3 as
 *                                  daemons do, opens DATA, another finding
 *   robust_prog close-stderr DATA  the same, closing fd 2 so DATA gets it
 *   robust_prog chdir DIR          a finding, chdir(DIR), another finding
 *
 * Each writes "data\n" into DATA last, so a test can see whether anything
 * else got in. Exit status 0 when every call answered as expected.
 */
#include <cuda.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static const char ptx[] = ".version 8.0\n.target sm_90\n.address_size 64\n"
                          ".visible .entry touch(.param .u64 p)\n{\n  ret;\n}\n";

static CUfunction kernel;
static CUstream stream;
static CUdeviceptr managed;

static int start(size_t bytes) {
  CUdevice dev;
  CUcontext ctx;
  CUmodule mod;
  if (cuInit(0) || cuDeviceGet(&dev, 0) || cuDevicePrimaryCtxRetain(&ctx, dev) ||
      cuCtxSetCurrent(ctx) || cuModuleLoadData(&mod, ptx) ||
      cuModuleGetFunction(&kernel, mod, "touch") ||
      cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING) ||
      cuMemAllocManaged(&managed, bytes, CU_MEM_ATTACH_GLOBAL))
    return 1;
  return 0;
}

/* A kernel on the managed memory: until the stream is synchronised the CPU
 * may not touch it, and the page guard protects it. */
static int launch(void) {
  void *args[] = {&managed};
  return cuLaunchKernel(kernel, 1, 1, 1, 32, 1, 1, 0, stream, args, NULL) != CUDA_SUCCESS;
}

static int fork_busy(void) {
  if (start(1 << 20) || launch()) return 1;
  pid_t child = fork();
  if (child < 0) return 1;
  if (child == 0) _exit(0);
  int status;
  if (waitpid(child, &status, 0) != child || !WIFEXITED(status) || WEXITSTATUS(status)) return 1;
  return cuStreamSynchronize(stream) != CUDA_SUCCESS;
}

static int storm(long pages) {
  long page = sysconf(_SC_PAGESIZE);
  if (start((size_t)(pages * page)) || launch()) return 1;
  for (long i = 0; i < pages; i++)
    ((volatile char *)managed)[i * page] = 1; /* AC202 each, from one line */
  return cuStreamSynchronize(stream) != CUDA_SUCCESS;
}

/* Two different findings, from two different lines. */
static void finding_one(void) {
  cuStreamAttachMemAsync(CU_STREAM_LEGACY, managed, 0, CU_MEM_ATTACH_SINGLE); /* AC101 */
}
static void finding_two(void) {
  cuStreamAttachMemAsync(stream, managed, 4096, CU_MEM_ATTACH_SINGLE); /* AC102 */
}

static int write_data(int fd) {
  int bad = write(fd, "data\n", 5) != 5;
  return close(fd) != 0 || bad;
}

/* closing: 3 closes every descriptor from 3 up (a daemon), 2 closes stderr. */
static int daemon_like(const char *data, int closing) {
  if (start(1 << 16)) return 1;
  finding_one();
  if (closing == 2)
    close(2);
  else
    for (int fd = 3; fd < 4096; fd++)
      close(fd);
  int fd = open(data, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd != closing) return 1; /* the number the shim's output may have had */
  finding_two();
  return write_data(fd);
}

static int change_folder(const char *dir) {
  if (start(1 << 16)) return 1;
  finding_one();
  if (chdir(dir) != 0) return 1;
  finding_two();
  return 0;
}

int main(int argc, char **argv) {
  const char *mode = argc > 1 ? argv[1] : "";
  if (strcmp(mode, "fork-busy") == 0) return fork_busy();
  if (strcmp(mode, "storm") == 0 && argc > 2) return storm(atol(argv[2]));
  if (strcmp(mode, "close-fds") == 0 && argc > 2) return daemon_like(argv[2], 3);
  if (strcmp(mode, "close-stderr") == 0 && argc > 2) return daemon_like(argv[2], 2);
  if (strcmp(mode, "chdir") == 0 && argc > 2) return change_folder(argv[2]);
  fprintf(stderr, "usage: robust_prog fork-busy|storm N|close-fds F|close-stderr F|chdir D\n");
  return 2;
}
