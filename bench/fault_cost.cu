// bench/fault_cost.cu - the floor under B3: what one protect + fault + lift of
// a page of managed memory costs on this machine, without attachcheck. The
// page guard cannot detect a CPU touch for less. Prints nanoseconds per
// launch/synchronise/touch iteration, plain and with the page protected before
// each touch (its own SIGSEGV handler lifting it).
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <cuda_runtime.h>
#include <sys/mman.h>

__global__ void empty() {}

static void lift(int, siginfo_t *info, void *) {
  mprotect((void *)((unsigned long)info->si_addr & ~4095ul), 4096, PROT_READ | PROT_WRITE);
}

int main() {
  const int iterations = 2000;
  int *p;
  cudaStream_t s;
  if (cudaMallocManaged(&p, 1 << 20) != cudaSuccess) return 1;
  cudaStreamCreate(&s);
  struct sigaction sa;
  std::memset(&sa, 0, sizeof sa);
  sa.sa_sigaction = lift;
  sa.sa_flags = SA_SIGINFO;
  sigaction(SIGSEGV, &sa, nullptr);
  for (int guarded = 0; guarded < 2; guarded++) {
    auto t0 = std::chrono::steady_clock::now();
    for (int it = 0; it < iterations; it++) {
      empty<<<1, 1, 0, s>>>();
      cudaStreamSynchronize(s);
      if (guarded) mprotect(p, 4096, PROT_NONE);
      p[0] += 1;
    }
    auto t1 = std::chrono::steady_clock::now();
    std::printf("%s: %.1f ns per iteration\n", guarded ? "protect+fault+lift" : "plain",
                std::chrono::duration<double, std::nano>(t1 - t0).count() / iterations);
  }
  return 0;
}
