// touch_global_other_thread.cu - thread A runs kernels on its own stream; thread
// B touches globally attached managed memory meanwhile. Without concurrent
// managed access the GPU owns every CU_MEM_ATTACH_GLOBAL allocation while any
// kernel runs, so B's access is illegal even though A's kernel never uses that
// memory (AC202). The fix: attach B's memory to the host or to B's stream.
#include <atomic>
#include <cstdio>
#include <cuda_runtime.h>
#include <thread>

__global__ void spin(int *p, long long cycles) {
  long long start = clock64();
  while (clock64() - start < cycles) {
  }
  p[0] = 1;
}

int main() {
  int *a = nullptr, *b = nullptr;
  if (cudaMallocManaged(&a, 4096) != cudaSuccess) {
    std::fprintf(stderr, "touch_global_other_thread: no CUDA device\n");
    return 1;
  }
  cudaMallocManaged(&b, 4096); // CU_MEM_ATTACH_GLOBAL, B's own memory
  std::atomic<int> phase{0};
  std::thread thread_a([&] {
    cudaStream_t s;
    cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
    cudaStreamAttachMemAsync(s, a, 0, cudaMemAttachSingle);
    spin<<<1, 1, 0, s>>>(a, 100000000);
    phase = 1;
    while (phase != 2) {
    }
    cudaStreamSynchronize(s);
    cudaStreamDestroy(s);
  });
  std::thread thread_b([&] {
    while (phase != 1) {
    }
    b[0] = 42; // wrong: thread A's stream is busy and b is attached globally
    phase = 2;
  });
  thread_a.join();
  thread_b.join();
  std::printf("b[0] = %d\n", b[0]);
  cudaFree(a);
  cudaFree(b);
  return 0;
}
