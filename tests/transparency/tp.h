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
#include <signal.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

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

/* A periodic SIGALRM every usec microseconds, sent to the calling thread
 * only (SIGEV_THREAD_ID). A process-wide one (setitimer) goes to any thread
 * that does not block it whenever the caller is still inside its handler -
 * the driver's threads block nothing - and two handlers at once lose updates
 * whoever made the handler slower. The handler is installed with SA_RESTART. */
static timer_t tp_ticker;

/* handler for sig, with flags and an empty sa_mask. */
static __attribute__((unused)) void tp_handle(int sig, void (*handler)(int), int flags) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = handler;
  sa.sa_flags = flags;
  sigemptyset(&sa.sa_mask);
  sigaction(sig, &sa, NULL);
}

static __attribute__((unused)) void tp_ticks_start(void (*handler)(int), long usec) {
  tp_handle(SIGALRM, handler, SA_RESTART);
  struct sigevent ev;
  memset(&ev, 0, sizeof ev);
  ev.sigev_notify = SIGEV_THREAD_ID;
  ev.sigev_signo = SIGALRM;
  ev._sigev_un._tid = (pid_t)syscall(SYS_gettid); /* sigev_notify_thread_id: glibc 2.37 on */
  struct itimerspec it = {{0, usec * 1000}, {0, usec * 1000}};
  if (timer_create(CLOCK_MONOTONIC, &ev, &tp_ticker) != 0 ||
      timer_settime(tp_ticker, 0, &it, NULL) != 0) {
    perror("timer");
    exit(2);
  }
}

/* Stops the ticks; one still pending is dropped. */
static __attribute__((unused)) void tp_ticks_stop(void) {
  timer_delete(tp_ticker);
  signal(SIGALRM, SIG_IGN);
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
