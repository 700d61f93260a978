/* tp_fork.c - fork while the checker is busy.
 *
 *   tp_fork busy_fork        fork while a stream works on guarded memory
 *   tp_fork storm_right N    N forks in one thread while another runs
 *                            attach/launch/synchronise rounds
 *   tp_fork storm_wrong N    the same with a mistaken attach each round (AC101)
 *
 * Children do a little stdio and _exit: a child must not hang on a lock the
 * parent's other thread held at the fork.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tp.h"

static CUstream s;
static CUdeviceptr m;

static void setup(void) {
  tp_start();
  s = tp_stream();
  m = tp_managed(1 << 20, CU_MEM_ATTACH_GLOBAL);
}

static int wait_child(pid_t pid) {
  int st = 0;
  if (pid < 0 || waitpid(pid, &st, 0) != pid) return -1;
  return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static void busy_fork(void) {
  setup();
  tp_launch(s, m);
  fflush(stdout);
  pid_t pid = fork();
  if (pid == 0) {
    char line[64];
    snprintf(line, sizeof line, "child says %d\n", 42);
    fputs(line, stdout);
    fflush(stdout);
    _exit(0);
  }
  int st = wait_child(pid);
  EXPECT_RC(cu.cuStreamSynchronize(s), CUDA_SUCCESS);
  tp_fill((void *)m, 1 << 20, 9);
  printf("child status %d, sum %08x\n", st, tp_sum((void *)m, 1 << 20));
}

static volatile int forking = 1;
static int wrong_attach;
static CUdeviceptr other;

/* Rounds of work until the forks are done; each may make a finding. */
static void *attacher(void *arg) {
  (void)arg;
  EXPECT_RC(cu.cuCtxSetCurrent(tp_ctx), CUDA_SUCCESS);
  for (int i = 0; forking || i < 20; i++) {
    if (wrong_attach) {
      EXPECT_RC(cu.cuStreamAttachMemAsync(CU_STREAM_LEGACY, other, 0, CU_MEM_ATTACH_SINGLE),
                CUDA_SUCCESS);
      EXPECT_RC(cu.cuStreamSynchronize(CU_STREAM_LEGACY), CUDA_SUCCESS);
    }
    tp_idle_after_work(s, m);
    ((volatile char *)m)[i % 4096] = 1;
  }
  return NULL;
}

static void storm(int wrong) {
  pthread_t t;
  int n = tp_argc > 0 ? atoi(tp_argv[0]) : 200, failed = 0;
  wrong_attach = wrong;
  setup();
  other = tp_managed(4096, CU_MEM_ATTACH_GLOBAL);
  fflush(stdout);
  pthread_create(&t, NULL, attacher, NULL);
  for (int i = 0; i < n; i++) {
    pid_t pid = fork();
    if (pid == 0) _exit(7);
    failed += wait_child(pid) != 7;
  }
  forking = 0;
  pthread_join(t, NULL);
  printf("%d forks, %d children did not exit 7\n", n, failed);
}

static void storm_right(void) {
  storm(0);
}
static void storm_wrong(void) {
  storm(1);
}

static const struct scenario_case cases[] = {
    {"busy_fork", busy_fork}, {"storm_right", storm_right}, {"storm_wrong", storm_wrong}};

TP_MAIN(cases)
