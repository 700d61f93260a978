// bench/guard_floor.cu - the floor under B3, without attachcheck: what
// detecting a CPU touch with page protection costs on this machine at all.
// Same allocations and loop as B3 (bench/global_touch.cu); the mode, one per
// process so every mode starts from the same untouched pages, is
//   plain  - nothing protected;
//   fault  - what the page guard does: everything protected at the start,
//            the touch faults and a bare handler lifts the page, the next
//            launch protects it again;
//   oracle - everything protected at the start, but no fault: the page about
//            to be touched is lifted just before and protected again just
//            after, as a guard that knew the future would do.
// Prints nanoseconds per iteration, as B3 does.
#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <cuda_runtime.h>
#include <string>
#include <sys/mman.h>
#include <unistd.h>
#include <vector>

__global__ void empty() {}

static uintptr_t page_of(const void *p) {
  return (uintptr_t)p & ~(uintptr_t)(getpagesize() - 1);
}

static void lift(int, siginfo_t *info, void *) {
  mprotect((void *)page_of(info->si_addr), getpagesize(), PROT_READ | PROT_WRITE);
}

int main(int argc, char **argv) {
  const std::string mode = argc > 1 ? argv[1] : "plain";
  const int count = 10000, iterations = 2000;
  const size_t page = getpagesize();
  std::vector<int *> allocs(count);
  for (int i = 0; i < count; i++)
    if (cudaMallocManaged(&allocs[i], 64) != cudaSuccess) {
      std::fprintf(stderr, "guard_floor: cudaMallocManaged failed\n");
      return 1;
    }
  uintptr_t lo = UINTPTR_MAX, hi = 0;
  for (int *p : allocs) {
    lo = std::min(lo, page_of(p));
    hi = std::max(hi, page_of(p) + page);
  }
  cudaStream_t s;
  cudaStreamCreate(&s);
  struct sigaction sa;
  std::memset(&sa, 0, sizeof sa);
  sa.sa_sigaction = lift;
  sa.sa_flags = SA_SIGINFO;
  sigaction(SIGSEGV, &sa, nullptr);
  if (mode != "plain") mprotect((void *)lo, hi - lo, PROT_NONE);

  uintptr_t touched_last = 0;
  auto t0 = std::chrono::steady_clock::now();
  for (int it = 0; it < iterations; it++) {
    int *p = allocs[(size_t)it * 7919 % count];
    empty<<<1, 1, 0, s>>>();
    if (mode == "fault" && touched_last) mprotect((void *)touched_last, page, PROT_NONE);
    cudaStreamSynchronize(s);
    if (mode == "oracle") mprotect((void *)page_of(p), page, PROT_READ | PROT_WRITE);
    p[0] += 1;
    if (mode == "oracle") mprotect((void *)page_of(p), page, PROT_NONE);
    touched_last = page_of(p);
  }
  auto t1 = std::chrono::steady_clock::now();
  std::printf("%.1f\n", std::chrono::duration<double, std::nano>(t1 - t0).count() / iterations);
  return 0;
}
