// bench/protect_threads.cu - what one protection change costs on managed
// memory while the program's other threads run, without attachcheck: T
// threads (1, 2, 4, 8) each protect and unprotect their own small allocations
// in turn, with and without launching and synchronising between pairs, by
// mprotect and by pkey_mprotect, and the same on anonymous memory. A change
// writes the address space's lock and shoots down the TLB of every CPU where
// one of the process's threads runs, so its cost grows with running threads.
// Prints microseconds per pair of calls. Not run by bench/run.sh: a probe.
#include <cuda.h>
#include <cuda_runtime.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
static double now() {
  timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}
__global__ void touch(char *p, size_t n) {
  for (size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
    p[i]++;
}
static int key = -1, mode, gpu_work, nallocs = 16;
static size_t bytes = 65536;
static int reps = 2000;
static double total_us[64];
static void *worker(void *arg) {
  long id = (long)arg;
  cudaStream_t s;
  cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
  char *p[64];
  for (int i = 0; i < nallocs; i++) {
    if (mode == 2)
      p[i] = (char *)mmap(0, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    else
      cudaMallocManaged(&p[i], bytes, cudaMemAttachGlobal);
    memset(p[i], 1, bytes);
  }
  double acc = 0;
  for (int r = 0; r < reps; r++) {
    char *q = p[r % nallocs];
    if (gpu_work && mode != 2) touch<<<4, 64, 0, s>>>(p[(r + 1) % nallocs], bytes);
    double t = now();
    if (mode == 1) {
      syscall(SYS_pkey_mprotect, q, bytes, PROT_READ | PROT_WRITE, key);
      syscall(SYS_pkey_mprotect, q, bytes, PROT_READ | PROT_WRITE, 0);
    } else {
      mprotect(q, bytes, PROT_NONE);
      mprotect(q, bytes, PROT_READ | PROT_WRITE);
    }
    acc += now() - t;
    if (gpu_work && mode != 2) cudaStreamSynchronize(s);
  }
  total_us[id] = acc * 1e6 / reps;
  return 0;
}
int main() {
  key = (int)syscall(SYS_pkey_alloc, 0, 0);
  cudaFree(0);
  const char *names[] = {"mprotect/managed", "pkey/managed", "mprotect/anon"};
  for (mode = 0; mode < 3; mode++)
    for (gpu_work = 0; gpu_work < 2; gpu_work++)
      for (int T = 1; T <= 8; T *= 2) {
        if (mode == 2 && gpu_work) continue;
        pthread_t th[64];
        double t0 = now();
        for (long i = 0; i < T; i++)
          pthread_create(&th[i], 0, worker, (void *)i);
        for (int i = 0; i < T; i++)
          pthread_join(th[i], 0);
        double avg = 0;
        for (int i = 0; i < T; i++)
          avg += total_us[i] / T;
        printf("%-17s gpu_work=%d threads=%d: %.2f us per pair (run %.2f s)\n", names[mode],
               gpu_work, T, avg, now() - t0);
        fflush(stdout);
      }
  return 0;
}
