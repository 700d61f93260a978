// destroy_then_touch.cu - cudaStreamDestroy does not wait for the stream's work:
// memory single-attached to it reverts to its default association only once
// that work is done (AC402, a note), and touching it before then is AC201.
#include <cstdio>
#include <cuda_runtime.h>

__global__ void fill(int *p, size_t n) {
  size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
  if (i < n) p[i] = 7;
}

int main() {
  const size_t n = 1 << 20;
  int *p = nullptr;
  cudaStream_t s;
  if (cudaMallocManaged(&p, n * sizeof(int)) != cudaSuccess) {
    std::fprintf(stderr, "destroy_then_touch: no CUDA device\n");
    return 1;
  }
  cudaStreamCreate(&s);
  cudaStreamAttachMemAsync(s, p, 0, cudaMemAttachSingle);
  fill<<<(unsigned)((n + 255) / 256), 256, 0, s>>>(p, n);
  cudaStreamDestroy(s);    // does not synchronise
  int value = p[0];        // wrong: the kernel may still run
  cudaDeviceSynchronize(); // right: wait first
  std::printf("p[0] read too early: %d, now: %d\n", value, p[0]);
  cudaFree(p);
  return 0;
}
