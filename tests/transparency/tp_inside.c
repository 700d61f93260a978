/* tp_inside.c - the program touches busy managed memory while its thread is
 * inside attachcheck, with the model lock held: judged when the thread
 * leaves the shim, never dropped, never a deadlock.
 *
 *   tp_inside calloc_busy   the program's own calloc - which every library
 *                           of the process calls, attachcheck's included,
 *                           while it holds its lock - reads memory
 *                           single-attached to a busy stream, once, when
 *                           armed: it stands for a signal handler (a
 *                           profiler's, a watchdog's) that lands while the
 *                           thread is inside the shim. The program then
 *                           records an event it never recorded before
 *                           (attachcheck makes that event's record with
 *                           calloc under its lock): AC201.
 *   tp_inside calloc_idle   the same read of memory the CPU may touch (the
 *                           stream synchronised first): no finding.
 *
 * A program that replaces calloc replaces it for a preloaded sanitizer
 * runtime too: cases.txt marks the cases (own_calloc), and the runner skips
 * them where one is preloaded.
 */
#define _GNU_SOURCE
#include <stdbool.h>
#include <stddef.h>

#include "tp.h"

extern void *__libc_calloc(size_t n, size_t size);

static __thread volatile int *armed; /* this thread's calloc reads it once */
static volatile int seen;

void *calloc(size_t n, size_t size) {
  volatile int *p = armed;
  if (p) {
    armed = NULL;
    seen += *p;
  }
  return __libc_calloc(n, size);
}

static void read_inside(bool busy) {
  tp_start();
  CUstream s = tp_stream();
  CUdeviceptr m = tp_managed(4096, CU_MEM_ATTACH_HOST);
  attach_sync(s, m, CU_MEM_ATTACH_SINGLE);
  CUevent e;
  EXPECT_RC(cu.cuEventCreate(&e, CU_EVENT_DEFAULT), CUDA_SUCCESS);
  tp_launch(s, m);
  if (!busy) EXPECT_RC(cu.cuStreamSynchronize(s), CUDA_SUCCESS);
  armed = (volatile int *)m;
  EXPECT_RC(cu.cuEventRecord(e, s), CUDA_SUCCESS);
  armed = NULL;
  EXPECT_RC(cu.cuStreamSynchronize(s), CUDA_SUCCESS);
  EXPECT_RC(cu.cuEventDestroy(e), CUDA_SUCCESS);
  printf("the event recorded and the stream synchronised\n");
}

static void calloc_busy(void) {
  read_inside(true);
}

static void calloc_idle(void) {
  read_inside(false);
}

static const struct scenario_case cases[] = {
    {"calloc_busy", calloc_busy},
    {"calloc_idle", calloc_idle},
};

TP_MAIN(cases)
