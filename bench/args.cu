// bench/args.cu - B4: kernels with 8 pointer parameters into 1,000 live managed
// allocations, 100,000 launches: the cost of judging kernel arguments. Prints
// nanoseconds per launch.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>
#include <vector>

__global__ void eight(int *a, int *b, int *c, int *d, int *e, int *f, int *g, int *h) {
  if (threadIdx.x == 1000) *a = *b + *c + *d + *e + *f + *g + *h;
}

int main(int argc, char **argv) {
  int launches = argc > 1 ? std::atoi(argv[1]) : 100000;
  std::vector<int *> p(1000);
  for (auto &q : p)
    cudaMallocManaged(&q, 256);
  cudaStream_t s;
  cudaStreamCreate(&s);
  for (int i = 0; i < 1000; i++)
    eight<<<1, 1, 0, s>>>(p[0], p[1], p[2], p[3], p[4], p[5], p[6], p[7]);
  cudaStreamSynchronize(s);
  auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < launches; i++) {
    int k = (i * 8) % 992;
    eight<<<1, 1, 0, s>>>(p[k], p[k + 1], p[k + 2], p[k + 3], p[k + 4], p[k + 5], p[k + 6],
                          p[k + 7]);
  }
  auto t1 = std::chrono::steady_clock::now();
  cudaStreamSynchronize(s);
  std::printf("%.1f\n", std::chrono::duration<double, std::nano>(t1 - t0).count() / launches);
  return 0;
}
