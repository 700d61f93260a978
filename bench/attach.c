/* bench/attach.c - the wall time of one cuStreamAttachMemAsync: N 256-byte
 * managed allocations (GLOBAL, or HOST-attached with `host`) attached to an
 * idle stream one after the other, ROUNDS times (SINGLE, then back to their
 * first flag, a synchronisation between rounds); prints the best round's time
 * an attach in nanoseconds (bench/run.sh's A1 rows). Run it bare and under
 * the shim, alternating:
 *
 *   bench_attach N global|host ROUNDS
 *
 * With PERF_CTL and PERF_ACK naming perf's control fifos (`perf record -D -1
 * --control fifo:CTL,ACK`), only the attach loops are sampled. With
 * BENCH_ATTACH_ROUNDS set, every round's time an attach goes to stderr too:
 * a host whose processor changes speed in the middle of a run (a shared
 * virtual machine's) shows it there, where the best round hides it. */
#include <cuda.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int ctl = -1, ack = -1;

/* perf's sampling on or off, if it listens. */
static void tell_perf(const char *what) {
  char answer[16];
  if (ctl < 0) return;
  if (write(ctl, what, strlen(what)) < 0 || (ack >= 0 && read(ack, answer, sizeof answer) < 0))
    perror("bench_attach: perf control");
}

int main(int argc, char **argv) {
  long n = argc > 1 ? atol(argv[1]) : 10000;
  unsigned flag =
      argc > 2 && strcmp(argv[2], "host") == 0 ? CU_MEM_ATTACH_HOST : CU_MEM_ATTACH_GLOBAL;
  int rounds = argc > 3 ? atoi(argv[3]) : 6;
  bool each_round = getenv("BENCH_ATTACH_ROUNDS") != NULL;
  if (getenv("PERF_CTL") && getenv("PERF_ACK"))
    ctl = open(getenv("PERF_CTL"), O_WRONLY), ack = open(getenv("PERF_ACK"), O_RDONLY);
  CUdevice dev;
  CUcontext ctx;
  CUstream s;
  CUdeviceptr *a = malloc(sizeof *a * (size_t)n);
  if (!a || cuInit(0) || cuDeviceGet(&dev, 0) || cuDevicePrimaryCtxRetain(&ctx, dev) ||
      cuCtxSetCurrent(ctx) || cuStreamCreate(&s, CU_STREAM_NON_BLOCKING))
    return 1;
  for (long i = 0; i < n; i++)
    if (cuMemAllocManaged(&a[i], 256, flag)) return 1;
  double best = 1e30;
  for (int r = 0; r < rounds; r++) {
    tell_perf("enable\n");
    double t0 = now();
    for (long i = 0; i < n; i++)
      cuStreamAttachMemAsync(s, a[i], 0, r % 2 ? flag : CU_MEM_ATTACH_SINGLE);
    double t1 = now();
    tell_perf("disable\n");
    cuStreamSynchronize(s);
    if (t1 - t0 < best) best = t1 - t0;
    if (each_round)
      fprintf(stderr, "round %d: %.1f ns an attach\n", r, (t1 - t0) / (double)n * 1e9);
  }
  printf("%.1f\n", best / (double)n * 1e9);
  return 0;
}
