// partial_attach.cu - runtime API: attaching only part of a managed allocation.
// The driver refuses it with cudaErrorInvalidValue; attachcheck reports AC102
// and names the allocation. Right: length 0 (or the exact size) from its start.
#include <cstdio>
#include <cuda_runtime.h>

int main() {
  const size_t bytes = 4 << 20;
  char *p = nullptr;
  cudaStream_t s;
  if (cudaMallocManaged(&p, bytes) != cudaSuccess) {
    std::fprintf(stderr, "partial_attach: no CUDA device\n");
    return 1;
  }
  cudaStreamCreate(&s);
  cudaError_t wrong = cudaStreamAttachMemAsync(s, p + 4096, 4096, cudaMemAttachSingle);
  std::printf("attach 4 KiB from offset 4 KiB: %s\n", cudaGetErrorString(wrong));
  cudaError_t right = cudaStreamAttachMemAsync(s, p, 0, cudaMemAttachSingle);
  std::printf("attach the whole allocation: %s\n", cudaGetErrorString(right));
  cudaStreamSynchronize(s);
  cudaFree(p);
  cudaStreamDestroy(s);
  return 0;
}
