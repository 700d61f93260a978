// bench/global_touch.cu - B3: 10,000 small globally attached managed
// allocations; a loop of launch -> synchronise -> CPU touch, judged with strict
// semantics (every launch makes all of them off-limits to the CPU). Prints
// nanoseconds per iteration. Built with TEMP_EACH_STEP (bench_temp_touch, B6),
// each step also makes a small managed temporary before its launch and frees
// it after its touch, as loops with scratch buffers do: memory changes class
// at every step, which the page guard must follow.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>
#include <vector>

__global__ void empty() {}

int main(int argc, char **argv) {
  int count = argc > 1 ? std::atoi(argv[1]) : 10000,
      iterations = argc > 2 ? std::atoi(argv[2]) : 2000;
  std::vector<int *> allocs(count);
  for (int i = 0; i < count; i++)
    cudaMallocManaged(&allocs[i], 64);
  cudaStream_t s;
  cudaStreamCreate(&s);
  auto t0 = std::chrono::steady_clock::now();
  for (int it = 0; it < iterations; it++) {
#ifdef TEMP_EACH_STEP
    int *temp = nullptr;
    if (cudaMallocManaged(&temp, 256) != cudaSuccess) return 1;
#endif
    empty<<<1, 1, 0, s>>>();
    cudaStreamSynchronize(s);
    allocs[(size_t)it * 7919 % count][0] += 1;
#ifdef TEMP_EACH_STEP
    temp[0] = it;
    cudaFree(temp);
#endif
  }
  auto t1 = std::chrono::steady_clock::now();
  std::printf("%.1f\n", std::chrono::duration<double, std::nano>(t1 - t0).count() / iterations);
  for (int *p : allocs)
    cudaFree(p);
  return 0;
}
