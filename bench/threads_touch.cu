// bench/threads_touch.cu - B5: B3's loop on 8 host threads at once, each with
// its own stream and its own 1,250 small globally attached allocations:
// launch -> synchronise its stream -> CPU touch of one of its allocations.
// Each thread's launches and synchronisations are transitions the others'
// touches must see. Under strict semantics every touch made while another
// thread's kernel runs is a finding (AC201): the benchmark then measures the
// guard's cross-thread work under load; under device semantics none is.
// The clock runs from when every thread has made its allocations to when
// the last one ends its loop. Prints nanoseconds per iteration (all threads
// together).
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>
#include <thread>
#include <vector>

__global__ void empty() {}

using Clock = std::chrono::steady_clock;

int main(int argc, char **argv) {
  int threads = argc > 1 ? std::atoi(argv[1]) : 8,
      per_thread = argc > 2 ? std::atoi(argv[2]) : 1250,
      iterations = argc > 3 ? std::atoi(argv[3]) : 1000;
  cudaFree(0);
  std::atomic<int> ready{0}, finished{0};
  Clock::time_point t0, t1;
  auto work = [&] {
    std::vector<int *> allocs(per_thread);
    for (int i = 0; i < per_thread; i++)
      cudaMallocManaged(&allocs[i], 64);
    cudaStream_t s;
    cudaStreamCreate(&s);
    if (ready.fetch_add(1) + 1 == threads) t0 = Clock::now();
    while (ready.load() < threads)
      std::this_thread::yield();
    for (int it = 0; it < iterations; it++) {
      empty<<<1, 1, 0, s>>>();
      cudaStreamSynchronize(s);
      allocs[(size_t)it * 7919 % per_thread][0] += 1;
    }
    if (finished.fetch_add(1) + 1 == threads) t1 = Clock::now();
    cudaStreamSynchronize(s);
    for (int *p : allocs)
      cudaFree(p);
    cudaStreamDestroy(s);
  };
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; t++)
    pool.emplace_back(work);
  for (auto &t : pool)
    t.join();
  std::printf("%.1f\n",
              std::chrono::duration<double, std::nano>(t1 - t0).count() / (threads * iterations));
  return 0;
}
