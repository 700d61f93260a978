// bench/launch.cu - B1: empty kernel launches through the runtime, the hot path
// of every CUDA program. Prints nanoseconds per launch (enqueue); bench/run.sh
// runs it with and without the shim, alternating, and prints the ratio.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>

__global__ void empty() {}

int main(int argc, char **argv) {
  int launches = argc > 1 ? std::atoi(argv[1]) : 200000;
  cudaStream_t s;
  if (cudaStreamCreate(&s) != cudaSuccess) {
    std::fprintf(stderr, "launch: no CUDA device\n");
    return 1;
  }
  for (int i = 0; i < 1000; i++)
    empty<<<1, 1, 0, s>>>();
  cudaStreamSynchronize(s);
  auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < launches; i++)
    empty<<<1, 1, 0, s>>>();
  auto t1 = std::chrono::steady_clock::now();
  cudaStreamSynchronize(s);
  double ns = std::chrono::duration<double, std::nano>(t1 - t0).count() / launches;
  std::printf("%.1f\n", ns);
  return 0;
}
