// cublas_threads.cu - the programming guide's per-thread attach pattern with
// cuBLAS and OpenMP, as NVIDIA's UnifiedMemoryStreams sample does it: each
// task's managed buffers are attached to its thread's stream, small tasks run
// on the host after attaching to it, large ones as a cuBLAS dgemv on the
// thread's stream. Correct: attachcheck must check it (cuBLAS looks driver
// names up from its constructor) and find nothing.
#include <cublas_v2.h>
#include <omp.h>

#include <cstdio>
#include <cstdlib>

#define CHECK(call)                                                                                \
  do {                                                                                             \
    if ((call) != 0) {                                                                             \
      std::fprintf(stderr, "%s:%d: %s failed\n", __FILE__, __LINE__, #call);                       \
      std::exit(1);                                                                                \
    }                                                                                              \
  } while (0)

struct task {
  int size;
  double *data, *vector, *result;
};

static void gemv_on_host(const task &t) {
  for (int i = 0; i < t.size; i++) {
    double sum = 0;
    for (int j = 0; j < t.size; j++)
      sum += t.data[i * t.size + j] * t.vector[j];
    t.result[i] = sum;
  }
}

static void run(task &t, cudaStream_t stream, cublasHandle_t handle) {
  CHECK(cudaMallocManaged(&t.data, sizeof(double) * t.size * t.size));
  CHECK(cudaMallocManaged(&t.vector, sizeof(double) * t.size));
  CHECK(cudaMallocManaged(&t.result, sizeof(double) * t.size));
  CHECK(cudaStreamAttachMemAsync(stream, t.data, 0, cudaMemAttachSingle));
  CHECK(cudaStreamAttachMemAsync(stream, t.vector, 0, cudaMemAttachSingle));
  CHECK(cudaStreamAttachMemAsync(stream, t.result, 0, cudaMemAttachSingle));
  CHECK(cudaStreamSynchronize(stream)); // the attaches are done: the CPU may fill them
  for (int i = 0; i < t.size * t.size; i++)
    t.data[i] = (i % 7) * 0.5;
  for (int i = 0; i < t.size; i++)
    t.vector[i] = 1.0, t.result[i] = 0.0;
  if (t.size < 64) {
    gemv_on_host(t);
  } else {
    double one = 1.0, zero = 0.0;
    CHECK(cublasSetStream(handle, stream));
    CHECK(cublasDgemv(handle, CUBLAS_OP_T, t.size, t.size, &one, t.data, t.size, t.vector, 1, &zero,
                      t.result, 1));
    CHECK(cudaStreamSynchronize(stream));
  }
  double sum = 0;
  for (int i = 0; i < t.size; i++)
    sum += t.result[i];
  if (sum <= 0) std::fprintf(stderr, "task of %d: bad sum %f\n", t.size, sum), std::exit(1);
  CHECK(cudaFree(t.data));
  CHECK(cudaFree(t.vector));
  CHECK(cudaFree(t.result));
}

int main(int argc, char **argv) {
  int threads = argc > 1 ? std::atoi(argv[1]) : 4, tasks = argc > 2 ? std::atoi(argv[2]) : 40;
  omp_set_num_threads(threads);
#pragma omp parallel
  {
    cudaStream_t stream;
    cublasHandle_t handle;
    CHECK(cudaStreamCreate(&stream));
    CHECK(cublasCreate(&handle));
#pragma omp for schedule(dynamic)
    for (int i = 0; i < tasks; i++) {
      task t = {i % 3 == 0 ? 32 : 64 + 16 * (i % 5), nullptr, nullptr, nullptr};
      run(t, stream, handle);
    }
    CHECK(cublasDestroy(handle));
    CHECK(cudaStreamDestroy(stream));
  }
  std::printf("cublas_threads: %d tasks on %d threads done\n", tasks, threads);
  return 0;
}
