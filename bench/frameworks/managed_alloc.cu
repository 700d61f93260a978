// bench/frameworks/managed_alloc.cu - a PyTorch pluggable allocator that puts
// every tensor in managed memory, one cudaMallocManaged / cudaFree per tensor,
// as users do to run models larger than the GPU
// (torch.cuda.memory.CUDAPluggableAllocator). Built as a shared library.
#include <cstdio>
#include <cuda_runtime.h>
#include <sys/types.h>

extern "C" {
void *ac_bench_malloc(ssize_t size, int device, cudaStream_t stream) {
  (void)device, (void)stream;
  void *p = nullptr;
  if (cudaMallocManaged(&p, size ? (size_t)size : 1, cudaMemAttachGlobal) != cudaSuccess) {
    std::fprintf(stderr, "managed_alloc: cudaMallocManaged(%zd) failed\n", size);
    return nullptr;
  }
  return p;
}

void ac_bench_free(void *p, ssize_t size, int device, cudaStream_t stream) {
  (void)size, (void)device, (void)stream;
  cudaFree(p);
}
}
