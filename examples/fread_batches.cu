// fread_batches.cu - the most ordinary loop: read a batch from a file into
// managed memory, launch a kernel on it, synchronise, and again. Correct:
// every fread must succeed under attachcheck exactly as without it.
#include <cstdio>
#include <cstdlib>

__global__ void sum(const unsigned char *in, size_t n, unsigned long long *out) {
  for (size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
    atomicAdd(out, in[i]);
}

int main() {
  const size_t batch = 1 << 20;
  unsigned char *buf;
  unsigned long long *total;
  cudaStream_t s;
  if (cudaStreamCreate(&s) != cudaSuccess || cudaMallocManaged(&buf, batch) != cudaSuccess ||
      cudaMallocManaged(&total, sizeof *total) != cudaSuccess)
    return 1;
  cudaStreamAttachMemAsync(s, buf, 0, cudaMemAttachSingle);
  cudaStreamAttachMemAsync(s, total, 0, cudaMemAttachSingle);
  cudaStreamSynchronize(s);
  *total = 0;
  FILE *f = std::fopen("/proc/self/exe", "rb");
  if (!f) return 1;
  size_t got, bytes = 0;
  while ((got = std::fread(buf, 1, batch, f)) > 0) {
    bytes += got;
    sum<<<32, 256, 0, s>>>(buf, got, total);
    cudaStreamSynchronize(s);
  }
  if (std::ferror(f)) return std::perror("fread"), 1;
  std::printf("fread_batches: %zu bytes, checksum %llu\n", bytes, *total);
  return 0;
}
