/* guide_threads.c - the programming guide's multithreaded pattern, done right:
 * each thread allocates with CU_MEM_ATTACH_HOST, attaches the memory to its own
 * stream, synchronises, then loops kernel -> synchronise -> CPU work. No
 * finding, no deadlock, whatever the number of threads.
 *
 *   guide_threads THREADS TOTAL_ITERATIONS
 */
#include <pthread.h>

#include "scenario.h"

static const char ptx[] = ".version 8.0\n.target sm_90\n.address_size 64\n"
                          ".visible .entry step(.param .u64 p, .param .u32 n)\n{\n  ret;\n}\n";

static CUcontext ctx;
static CUfunction kernel;
static int iterations;

static void *worker(void *arg) {
  (void)arg;
  CUstream s;
  CUdeviceptr p;
  unsigned n = 1024;
  EXPECT_RC(cu.cuCtxSetCurrent(ctx), CUDA_SUCCESS);
  EXPECT_RC(cu.cuStreamCreate(&s, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
  EXPECT_RC(cu.cuMemAllocManaged(&p, n * sizeof(int), CU_MEM_ATTACH_HOST), CUDA_SUCCESS);
  EXPECT_RC(cu.cuStreamAttachMemAsync(s, p, 0, CU_MEM_ATTACH_SINGLE), CUDA_SUCCESS);
  EXPECT_RC(cu.cuStreamSynchronize(s), CUDA_SUCCESS);
  int *host = (int *)p;
  for (int i = 0; i < iterations; i++) {
    void *args[] = {&p, &n};
    EXPECT_RC(cu.cuLaunchKernel(kernel, 4, 1, 1, 256, 1, 1, 0, s, args, NULL), CUDA_SUCCESS);
    EXPECT_RC(cu.cuStreamSynchronize(s), CUDA_SUCCESS);
    host[i % n] += 1; /* CPU work on memory attached to this thread's idle stream */
  }
  EXPECT_RC(cu.cuMemFree(p), CUDA_SUCCESS);
  EXPECT_RC(cu.cuStreamDestroy(s), CUDA_SUCCESS);
  return NULL;
}

int main(int argc, char **argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: %s THREADS TOTAL_ITERATIONS\n", argv[0]);
    return 2;
  }
  int threads = atoi(argv[1]);
  if (threads < 1 || threads > 256) return 2;
  iterations = atoi(argv[2]) / threads;
  CUmodule mod;
  start_cuda("link");
  EXPECT_RC(cu.cuCtxGetCurrent(&ctx), CUDA_SUCCESS);
  EXPECT_RC(cu.cuModuleLoadData(&mod, ptx), CUDA_SUCCESS);
  EXPECT_RC(cu.cuModuleGetFunction(&kernel, mod, "step"), CUDA_SUCCESS);
  pthread_t tid[256];
  for (int t = 0; t < threads; t++)
    pthread_create(&tid[t], NULL, worker, NULL);
  for (int t = 0; t < threads; t++)
    pthread_join(tid[t], NULL);
  return finish();
}
