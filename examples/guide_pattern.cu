// guide_pattern.cu - the programming guide's multithreaded pattern, done right:
// each thread allocates with cudaMemAttachHost, attaches its memory to its own
// stream, synchronises, then loops kernel -> synchronise -> CPU work. attachcheck
// reports nothing.
#include <cstdio>
#include <cuda_runtime.h>
#include <cstdlib>
#include <thread>
#include <vector>

__global__ void increment(int *p, size_t n) {
  size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
  if (i < n) p[i] += 1;
}

static bool worker(int iterations) {
  const size_t n = 4096;
  int *p = nullptr;
  cudaStream_t s;
  if (cudaStreamCreate(&s) != cudaSuccess) return false;
  if (cudaMallocManaged(&p, n * sizeof(int), cudaMemAttachHost) != cudaSuccess) return false;
  cudaStreamAttachMemAsync(s, p, 0, cudaMemAttachSingle);
  cudaStreamSynchronize(s);
  for (size_t i = 0; i < n; i++)
    p[i] = 0;
  for (int it = 0; it < iterations; it++) {
    increment<<<(unsigned)((n + 255) / 256), 256, 0, s>>>(p, n);
    cudaStreamSynchronize(s);
    p[it % n] += 1; // CPU work on memory attached to this thread's stream: legal here
  }
  bool ok = p[0] >= iterations;
  cudaFree(p);
  cudaStreamDestroy(s);
  return ok;
}

int main(int argc, char **argv) {
  int threads = argc > 1 ? std::atoi(argv[1]) : 4, iterations = argc > 2 ? std::atoi(argv[2]) : 50;
  std::vector<std::thread> pool;
  std::vector<char> ok(threads);
  for (int t = 0; t < threads; t++)
    pool.emplace_back([&, t] { ok[t] = worker(iterations); });
  for (auto &th : pool)
    th.join();
  for (int t = 0; t < threads; t++)
    if (!ok[t]) {
      std::fprintf(stderr, "guide_pattern: thread %d failed\n", t);
      return 1;
    }
  std::printf("guide_pattern: %d threads x %d iterations done\n", threads, iterations);
  return 0;
}
