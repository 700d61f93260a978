/* tp_threads.c - many threads, each in a loop of allocate, attach to its own
 * stream, launch, synchronise, write on the CPU, free: freed addresses come
 * back to other threads at once, so a checker that keeps stale state about
 * an address crashes or reports here. Correct; no finding.
 *
 *   tp_threads loop THREADS SECONDS
 *   tp_threads sleepers
 *   tp_threads racing THREADS SECONDS
 *
 * racing: each thread launches on its own stream, synchronises it and adds
 * one to one of its own GLOBAL allocations, while the others' kernels run (a
 * finding under strict semantics, AC202). The adds fault on pages that the
 * others' transitions protect and let go again, many times a second:
 * however often a thread loses that race, each add must see the one before
 * it and the program go on (a checker that gives up after a few retries
 * kills it).
 *
 * sleepers: threads that used managed memory sleep in nanosleep, poll and
 * sigtimedwait while the main thread makes its memory busy and idle again
 * many times; each call must run its whole time and return as it would
 * without a checker (a guard that signals threads must not cut them short).
 *
 * Each thread runs at least 4 rounds and until SECONDS have passed, so the
 * work is bounded in time; the output does not depend on how many rounds ran.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include "tp.h"

static double seconds;
static int bad[256];

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* One round; 0 when the CPU saw what it wrote. */
static int round_trip(CUstream s, size_t size, unsigned seed) {
  CUdeviceptr p = tp_managed(size, CU_MEM_ATTACH_GLOBAL);
  EXPECT_RC(cu.cuStreamAttachMemAsync(s, p, 0, CU_MEM_ATTACH_SINGLE), CUDA_SUCCESS);
  tp_idle_after_work(s, p);
  tp_fill((void *)p, size, seed);
  int wrong = ((unsigned char *)p)[size - 1] != (unsigned char)((size - 1) * 31u + seed);
  EXPECT_RC(cu.cuMemFree(p), CUDA_SUCCESS);
  return wrong;
}

static void *worker(void *arg) {
  int id = (int)(intptr_t)arg;
  EXPECT_RC(cu.cuCtxSetCurrent(tp_ctx), CUDA_SUCCESS);
  CUstream s = tp_stream();
  double end = now() + seconds;
  for (unsigned i = 0; i < 4 || now() < end; i++)
    bad[id] += round_trip(s, ((size_t)1 + (i + (unsigned)id) % 4) << 20, i);
  EXPECT_RC(cu.cuStreamDestroy(s), CUDA_SUCCESS);
  return NULL;
}

/* Runs fn on THREADS threads for SECONDS (the case's two arguments) and
 * says how many of their rounds read back wrong. */
static void run_threads(const char *name, void *(*fn)(void *), const char *rounds) {
  pthread_t t[256];
  if (tp_argc != 2) fprintf(stderr, "usage: tp_threads %s THREADS SECONDS\n", name), exit(2);
  int n = atoi(tp_argv[0]);
  seconds = atof(tp_argv[1]);
  if (n < 1 || n > 256) fprintf(stderr, "tp_threads: 1 to 256 threads\n"), exit(2);
  tp_start();
  for (int i = 0; i < n; i++)
    pthread_create(&t[i], NULL, fn, (void *)(intptr_t)i);
  int wrong = 0;
  for (int i = 0; i < n; i++)
    pthread_join(t[i], NULL), wrong += bad[i];
  printf("%d threads done, %d %s read back wrong\n", n, wrong, rounds);
}

static void loop(void) {
  run_threads("loop", worker, "rounds");
}

static CUdeviceptr shared_memory;
static sem_t touched;

static void *sleeper(void *arg) {
  int kind = (int)(intptr_t)arg;
  ((volatile char *)shared_memory)[kind] = 1; /* it uses the memory: a guard may track it */
  sem_post(&touched);
  double started = now();
  int r = 0;
  if (kind == 0) {
    struct timespec ts = {0, 300 * 1000 * 1000};
    r = nanosleep(&ts, &ts);
  } else if (kind == 1) {
    r = poll(NULL, 0, 300);
  } else {
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGUSR2);
    struct timespec ts = {0, 300 * 1000 * 1000};
    r = sigtimedwait(&set, NULL, &ts) < 0 && errno == EAGAIN ? 0 : -1;
  }
  bool whole = now() - started >= 0.29;
  static const char *names[] = {"nanosleep", "poll", "sigtimedwait"};
  printf("%s returned %d after its whole time: %s\n", names[kind], r, whole ? "yes" : "no");
  return NULL;
}

static void sleepers(void) {
  tp_start();
  CUstream s = tp_stream();
  shared_memory = tp_managed(1 << 20, CU_MEM_ATTACH_GLOBAL);
  tp_idle_after_work(s, shared_memory);
  sem_init(&touched, 0, 0);
  for (int kind = 0; kind < 3; kind++) { /* one at a time: the output keeps its order */
    pthread_t t;
    pthread_create(&t, NULL, sleeper, (void *)(intptr_t)kind);
    sem_wait(&touched); /* touched while the memory was idle: no finding */
    double started = now();
    while (now() - started < 0.3)
      tp_idle_after_work(s, shared_memory);
    pthread_join(t, NULL);
  }
}

enum { RACING_ALLOCS = 256 };

static void *racer(void *arg) {
  int id = (int)(intptr_t)arg;
  EXPECT_RC(cu.cuCtxSetCurrent(tp_ctx), CUDA_SUCCESS);
  CUstream s = tp_stream();
  CUdeviceptr mine[RACING_ALLOCS];
  unsigned next[RACING_ALLOCS]; /* what each holds now, once known */
  bool known[RACING_ALLOCS] = {false};
  for (int i = 0; i < RACING_ALLOCS; i++)
    mine[i] = tp_managed(64, CU_MEM_ATTACH_GLOBAL);
  double end = now() + seconds;
  for (unsigned i = 0; i < 4 || now() < end; i++) {
    unsigned k = i * 7919u % RACING_ALLOCS;
    tp_idle_after_work(s, mine[k]);
    /* One instruction reads and writes (one place, one finding): it must
     * see what the last one left. */
    unsigned was = __atomic_fetch_add((unsigned *)mine[k], 1u, __ATOMIC_RELAXED);
    bad[id] += known[k] && was != next[k];
    known[k] = true;
    next[k] = was + 1;
  }
  for (int i = 0; i < RACING_ALLOCS; i++)
    EXPECT_RC(cu.cuMemFree(mine[i]), CUDA_SUCCESS);
  EXPECT_RC(cu.cuStreamDestroy(s), CUDA_SUCCESS);
  return NULL;
}

static void racing(void) {
  run_threads("racing", racer, "writes");
}

static const struct scenario_case cases[] = {
    {"loop", loop}, {"sleepers", sleepers}, {"racing", racing}};

TP_MAIN(cases)
