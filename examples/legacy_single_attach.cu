// legacy_single_attach.cu - runtime API: single-attaching managed memory to
// cudaStreamLegacy. The driver accepts it silently; attachcheck reports AC101.
// The right way is shown after it: attach to a stream the program created.
#include <cstdio>
#include <cuda_runtime.h>

__global__ void increment(int *p, size_t n) {
  size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
  if (i < n) p[i] += 1;
}

int main() {
  const size_t n = 1 << 16;
  int *p = nullptr;
  cudaStream_t s;
  if (cudaMallocManaged(&p, n * sizeof(int)) != cudaSuccess) {
    std::fprintf(stderr, "legacy_single_attach: no CUDA device\n");
    return 1;
  }
  cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
  cudaError_t wrong = cudaStreamAttachMemAsync(cudaStreamLegacy, p, 0, cudaMemAttachSingle);
  std::printf("attach to cudaStreamLegacy: %s\n", cudaGetErrorString(wrong));
  cudaError_t right = cudaStreamAttachMemAsync(s, p, 0, cudaMemAttachSingle);
  std::printf("attach to a created stream: %s\n", cudaGetErrorString(right));
  increment<<<(unsigned)((n + 255) / 256), 256, 0, s>>>(p, n);
  cudaStreamSynchronize(s);
  std::printf("p[0] = %d\n", p[0]);
  cudaFree(p);
  cudaStreamDestroy(s);
  return 0;
}
