/* tp_sigthread.c - the signal thread of a server: every signal blocked in
 * every thread, one thread taking them all, with sigwait over a full set or
 * read from a signalfd over a full set, while worker threads launch,
 * synchronise and touch managed memory.
 *
 *   tp_sigthread sigwait|signalfd [ROUNDS [BOUND_SECONDS]]
 *
 * Each of ROUNDS rounds (200 by default) asks the signal thread, with
 * SIGRTMIN+2, to read the shared globally attached memory while it is idle
 * (so a checker's guard counts the signal thread among its users), then lets
 * the workers run kernels, which make that memory busy again. Each worker
 * also queues SIGRTMIN+1 once, and the main thread ends with SIGTERM. The
 * signal thread must get exactly those (it prints every signal it got, by
 * number and count), and the whole run must take less than BOUND_SECONDS
 * (10 by default: a few hundred milliseconds bare) - a checker that signals
 * the thread and waits for an answer it never gets stalls each round.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdbool.h>
#include <sys/signalfd.h>
#include <time.h>
#include <unistd.h>

#include "tp.h"

enum { WORKERS = 4, STEPS = 5, BUF = 1 << 20, SMALL = 64 << 10 };

static CUdeviceptr shared;
static int rounds = 200;
static bool use_signalfd;
static pthread_barrier_t start_round, end_round;
static sem_t read_done;
static int got[NSIG];
static uint32_t seen_sum;

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* The next signal, by sigwait or from the signalfd. */
static int next_signal(int fd, const sigset_t *all) {
  if (fd >= 0) {
    struct signalfd_siginfo si;
    ssize_t n = read(fd, &si, sizeof si);
    if (n != (ssize_t)sizeof si) {
      printf("signalfd read = %zd errno %s\n", n, n < 0 ? strerrorname_np(errno) : "-");
      return -1;
    }
    return (int)si.ssi_signo;
  }
  int sig = 0, r = sigwait(all, &sig);
  if (r != 0) {
    printf("sigwait = %d (%s)\n", r, strerrorname_np(r));
    return -1;
  }
  return sig;
}

static void *signal_thread(void *arg) {
  sigset_t all;
  (void)arg;
  sigfillset(&all);
  int fd = use_signalfd ? signalfd(-1, &all, SFD_CLOEXEC) : -1;
  if (use_signalfd && fd < 0) perror("tp_sigthread: signalfd"), exit(2);
  for (;;) {
    int sig = next_signal(fd, &all);
    if (sig < 0) break;
    if (sig < NSIG) got[sig]++;
    if (sig == SIGRTMIN + 2) {
      /* the workers are stopped between rounds: the memory is idle */
      seen_sum += tp_sum((void *)shared, 4096);
      sem_post(&read_done);
    }
    if (sig == SIGTERM) break;
  }
  if (fd >= 0) close(fd);
  return NULL;
}

static void *worker(void *arg) {
  int id = (int)(intptr_t)arg;
  EXPECT_RC(cu.cuCtxSetCurrent(tp_ctx), CUDA_SUCCESS);
  CUstream s = tp_stream();
  CUdeviceptr mine = tp_managed(SMALL, CU_MEM_ATTACH_HOST);
  attach_sync(s, mine, CU_MEM_ATTACH_SINGLE);
  pthread_barrier_wait(&end_round); /* set up: the shared memory is idle again */
  for (int r = 0; r < rounds; r++) {
    pthread_barrier_wait(&start_round);
    for (int k = 0; k < STEPS; k++) {
      tp_idle_after_work(s, mine); /* its kernels make the shared memory busy too */
      tp_fill((void *)mine, SMALL, (unsigned)(r + k));
    }
    if (r == rounds / 2) sigqueue(getpid(), SIGRTMIN + 1, (union sigval){.sival_int = id});
    pthread_barrier_wait(&end_round);
  }
  EXPECT_RC(cu.cuMemFree(mine), CUDA_SUCCESS);
  EXPECT_RC(cu.cuStreamDestroy(s), CUDA_SUCCESS);
  return NULL;
}

static void run(bool fd) {
  use_signalfd = fd;
  if (tp_argc > 0) rounds = atoi(tp_argv[0]);
  double bound = tp_argc > 1 ? atof(tp_argv[1]) : 10;
  if (rounds < 2) fprintf(stderr, "tp_sigthread: at least 2 rounds\n"), exit(2);
  double started = now();
  sigset_t all;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, NULL); /* before any thread: all of them inherit it */
  sem_init(&read_done, 0, 0);
  /* The signal thread is made before CUDA starts, so that its first touch is
   * one a guard sees: a thread made later starts with a copy of its
   * creator's protection-key register (tp_unregistered tests that). */
  pthread_t sig_t, workers[WORKERS];
  pthread_create(&sig_t, NULL, signal_thread, NULL);
  tp_start();
  CUstream s = tp_stream();
  shared = tp_managed(BUF, CU_MEM_ATTACH_GLOBAL);
  tp_idle_after_work(s, shared);
  tp_fill((void *)shared, BUF, 5);
  pthread_barrier_init(&start_round, NULL, WORKERS + 1);
  pthread_barrier_init(&end_round, NULL, WORKERS + 1);
  for (int i = 0; i < WORKERS; i++)
    pthread_create(&workers[i], NULL, worker, (void *)(intptr_t)i);
  pthread_barrier_wait(&end_round);
  for (int r = 0; r < rounds; r++) {
    sigqueue(getpid(), SIGRTMIN + 2, (union sigval){.sival_int = r});
    sem_wait(&read_done);
    pthread_barrier_wait(&start_round);
    pthread_barrier_wait(&end_round);
  }
  for (int i = 0; i < WORKERS; i++)
    pthread_join(workers[i], NULL);
  kill(getpid(), SIGTERM);
  pthread_join(sig_t, NULL);
  double took = now() - started;
  printf("the signal thread read the shared memory %d times, sum %08x\n", got[SIGRTMIN + 2],
         seen_sum);
  for (int sig = 1; sig < NSIG; sig++)
    if (got[sig]) printf("signal %d: %d time(s)\n", sig, got[sig]);
  printf("expected: SIGRTMIN+1 (%d) %d times, SIGRTMIN+2 (%d) %d times, SIGTERM (%d) once\n",
         SIGRTMIN + 1, WORKERS, SIGRTMIN + 2, rounds, SIGTERM);
  printf("the run took less than %g s: %s\n", bound, took < bound ? "yes" : "no");
  if (took >= bound) fprintf(stderr, "tp_sigthread: the run took %.1f s\n", took);
}

static void by_sigwait(void) {
  run(false);
}

static void by_signalfd(void) {
  run(true);
}

static const struct scenario_case cases[] = {{"sigwait", by_sigwait}, {"signalfd", by_signalfd}};

TP_MAIN(cases)
