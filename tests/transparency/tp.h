/* tp.h - what the transparency programs share.
 *
 * A transparency program prints on stdout everything it observes (return
 * values, errno, byte counts, checksums), so the runner (run.py) can run it
 * bare and under attachcheck and demand the same output and exit status. It
 * reaches the driver through its own link to libcuda.so.1 (scenario.h's
 * "link" door) and launches an empty kernel loaded from PTX, which the
 * stand-in driver and the real one both accept.
 */
#ifndef TP_H
#define TP_H

#include <errno.h>
#include <stdint.h>

#include "scenario.h"

static const char tp_ptx[] = ".version 8.0\n.target sm_90\n.address_size 64\n"
                             ".visible .entry touch(.param .u64 p)\n{\n  ret;\n}\n";

static CUfunction tp_kernel;
static CUcontext tp_ctx;

/* cuInit, the primary context current, the kernel loaded. */
static void tp_start(void) {
  CUmodule mod;
  start_cuda("link");
  EXPECT_RC(cu.cuCtxGetCurrent(&tp_ctx), CUDA_SUCCESS);
  EXPECT_RC(cu.cuModuleLoadData(&mod, tp_ptx), CUDA_SUCCESS);
  EXPECT_RC(cu.cuModuleGetFunction(&tp_kernel, mod, "touch"), CUDA_SUCCESS);
  if (failures) exit(2);
}

static __attribute__((unused)) CUstream tp_stream(void) {
  CUstream s;
  EXPECT_RC(cu.cuStreamCreate(&s, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
  return s;
}

static __attribute__((unused)) CUdeviceptr tp_managed(size_t n, unsigned flags) {
  CUdeviceptr p = 0;
  EXPECT_RC(cu.cuMemAllocManaged(&p, n, flags), CUDA_SUCCESS);
  return p;
}

/* The empty kernel on stream, given p: the stream is busy until synchronised. */
static __attribute__((unused)) void tp_launch(CUstream stream, CUdeviceptr p) {
  void *args[] = {&p};
  EXPECT_RC(cu.cuLaunchKernel(tp_kernel, 1, 1, 1, 32, 1, 1, 0, stream, args, NULL), CUDA_SUCCESS);
}

/* Work on stream over p, then synchronised: p is idle and the CPU may touch it. */
static __attribute__((unused)) void tp_idle_after_work(CUstream stream, CUdeviceptr p) {
  tp_launch(stream, p);
  EXPECT_RC(cu.cuStreamSynchronize(stream), CUDA_SUCCESS);
}

/* A checksum of n bytes, so output shows what memory held without dumping it. */
static __attribute__((unused)) uint32_t tp_sum(const void *p, size_t n) {
  const unsigned char *b = p;
  uint32_t h = 2166136261u;
  for (size_t i = 0; i < n; i++)
    h = (h ^ b[i]) * 16777619u;
  return h;
}

/* A deterministic byte pattern. */
static __attribute__((unused)) void tp_fill(void *p, size_t n, unsigned seed) {
  unsigned char *b = p;
  for (size_t i = 0; i < n; i++)
    b[i] = (unsigned char)(i * 31u + seed);
}

/* Runs the case named on the command line; the process exits with finish(). */
#define TP_MAIN(cases)                                                                             \
  int main(int argc, char **argv) {                                                                \
    if (argc < 2) {                                                                                \
      fprintf(stderr, "usage: %s CASE [ARGS]\n", argv[0]);                                         \
      return 2;                                                                                    \
    }                                                                                              \
    const struct scenario_case *c =                                                                \
        find_case(cases, sizeof cases / sizeof cases[0], argv[0], argv[1]);                        \
    if (!c) return 2;                                                                              \
    tp_argc = argc - 2, tp_argv = argv + 2;                                                        \
    c->run();                                                                                      \
    fflush(stdout);                                                                                \
    return finish();                                                                               \
  }

static __attribute__((unused)) int tp_argc;
static __attribute__((unused)) char **tp_argv;

#endif
