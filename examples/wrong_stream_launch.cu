// wrong_stream_launch.cu - a <<<>>> launch on stream B given memory
// single-attached to stream A. The driver checks nothing and the results are
// undefined; attachcheck finds it from the kernel's arguments, through the
// CUkernel handle the runtime launches with (AC301).
#include <cstdio>
#include <cuda_runtime.h>

__global__ void scale(float *p, size_t n, float k) {
  size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
  if (i < n) p[i] *= k;
}

int main() {
  const size_t n = 1 << 16;
  float *p = nullptr;
  cudaStream_t a, b;
  if (cudaMallocManaged(&p, n * sizeof(float)) != cudaSuccess) {
    std::fprintf(stderr, "wrong_stream_launch: no CUDA device\n");
    return 1;
  }
  cudaStreamCreate(&a);
  cudaStreamCreate(&b);
  cudaStreamAttachMemAsync(a, p, 0, cudaMemAttachSingle);
  cudaStreamSynchronize(a);
  scale<<<(unsigned)((n + 255) / 256), 256, 0, b>>>(p, n, 2.0f); // wrong: p belongs to a
  scale<<<(unsigned)((n + 255) / 256), 256, 0, a>>>(p, n, 2.0f); // right
  cudaDeviceSynchronize();
  std::printf("p[0] = %f\n", p[0]);
  cudaFree(p);
  cudaStreamDestroy(a);
  cudaStreamDestroy(b);
  return 0;
}
