// touch_before_sync.cu - the most common mistake: the CPU reads managed memory
// attached to a stream while a kernel on that stream may still run. On an H100
// the read silently returns a stale value; on a device without concurrent
// managed access it kills the process. attachcheck reports AC201 with both
// sides: the CPU read and the launch that made the stream busy.
#include <cstdio>
#include <cuda_runtime.h>

__global__ void increment(int *p, size_t n) {
  size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
  if (i < n) p[i] += 1;
}

int main() {
  const size_t n = 1 << 20;
  int *p = nullptr;
  cudaStream_t s;
  if (cudaMallocManaged(&p, n * sizeof(int), cudaMemAttachHost) != cudaSuccess) {
    std::fprintf(stderr, "touch_before_sync: no CUDA device\n");
    return 1;
  }
  cudaStreamCreate(&s);
  cudaStreamAttachMemAsync(s, p, 0, cudaMemAttachSingle);
  cudaStreamSynchronize(s);
  for (size_t i = 0; i < n; i++)
    p[i] = 0;
  increment<<<(unsigned)((n + 255) / 256), 256, 0, s>>>(p, n);
  int early = p[n - 1]; // wrong: the kernel may still be running
  cudaStreamSynchronize(s);
  int late = p[n - 1]; // right
  std::printf("before synchronising: %d, after: %d\n", early, late);
  cudaFree(p);
  cudaStreamDestroy(s);
  return 0;
}
