// bench/guide.cu - B2: the programming guide's multithreaded pattern, 8 threads
// x 1000 iterations of kernel -> synchronise -> CPU work, page guard on. Prints
// nanoseconds per iteration (all threads together).
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>
#include <thread>
#include <vector>

__global__ void increment(int *p, size_t n) {
  size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
  if (i < n) p[i] += 1;
}

int main(int argc, char **argv) {
  int threads = argc > 1 ? std::atoi(argv[1]) : 8,
      iterations = argc > 2 ? std::atoi(argv[2]) : 1000;
  cudaFree(0);
  auto work = [&] {
    const size_t n = 4096;
    int *p;
    cudaStream_t s;
    cudaStreamCreate(&s);
    cudaMallocManaged(&p, n * sizeof(int), cudaMemAttachHost);
    cudaStreamAttachMemAsync(s, p, 0, cudaMemAttachSingle);
    cudaStreamSynchronize(s);
    for (int it = 0; it < iterations; it++) {
      increment<<<(unsigned)(n / 256), 256, 0, s>>>(p, n);
      cudaStreamSynchronize(s);
      for (size_t i = 0; i < n; i += 64)
        p[i] += 1;
    }
    cudaFree(p);
    cudaStreamDestroy(s);
  };
  auto t0 = std::chrono::steady_clock::now();
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; t++)
    pool.emplace_back(work);
  for (auto &th : pool)
    th.join();
  auto t1 = std::chrono::steady_clock::now();
  std::printf("%.1f\n", std::chrono::duration<double, std::nano>(t1 - t0).count() / iterations);
  return 0;
}
