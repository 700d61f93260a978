// graph_wrong_stream.cu - a kernel captured into a CUDA graph and the graph
// launched on a stream other than the one its memory is attached to. The
// graph's kernel node is read when the graph is instantiated and judged when
// it is launched (AC301 at cudaGraphLaunch).
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
  cudaGraph_t graph;
  cudaGraphExec_t exec;
  if (cudaMallocManaged(&p, n * sizeof(float)) != cudaSuccess) {
    std::fprintf(stderr, "graph_wrong_stream: no CUDA device\n");
    return 1;
  }
  cudaStreamCreateWithFlags(&a, cudaStreamNonBlocking);
  cudaStreamCreateWithFlags(&b, cudaStreamNonBlocking);
  cudaStreamAttachMemAsync(a, p, 0, cudaMemAttachSingle);
  cudaStreamSynchronize(a);
  cudaStreamBeginCapture(b, cudaStreamCaptureModeGlobal);
  scale<<<(unsigned)((n + 255) / 256), 256, 0, b>>>(p, n, 2.0f);
  cudaStreamEndCapture(b, &graph);
  cudaGraphInstantiate(&exec, graph, 0);
  cudaGraphLaunch(exec, b); // wrong: p belongs to stream a
  cudaStreamSynchronize(b);
  std::printf("graph ran: %s\n", cudaGetErrorString(cudaGetLastError()));
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
  cudaFree(p);
  cudaStreamDestroy(a);
  cudaStreamDestroy(b);
  return 0;
}
