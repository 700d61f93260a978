/* test_fd_gate.c - the descriptor gate (base/fd_gate.c): a program's close
 * waits while another thread holds the gate, and only then; never for the
 * thread's own hold; a gate held at fork is not held in the child. */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fd_gate.h"
#include "test.h"

static int entered, left; /* atomic: the holder holds it; has let go */
static int waited_after_leave;

static void *hold_then_leave(void *arg) {
  (void)arg;
  ac_fd_gate_enter();
  __atomic_store_n(&entered, 1, __ATOMIC_SEQ_CST);
  usleep(100 * 1000);
  __atomic_store_n(&left, 1, __ATOMIC_SEQ_CST);
  ac_fd_gate_leave();
  return NULL;
}

static void *wait_for_gate(void *arg) {
  (void)arg;
  ac_fd_gate_wait();
  waited_after_leave = __atomic_load_n(&left, __ATOMIC_SEQ_CST);
  return NULL;
}

/* Another thread's hold: the waiter, started once the holder holds it,
 * returns only after the leave. */
static void other_thread_holds(void) {
  pthread_t holder, waiter;
  pthread_create(&holder, NULL, hold_then_leave, NULL);
  while (!__atomic_load_n(&entered, __ATOMIC_SEQ_CST))
    usleep(1000);
  pthread_create(&waiter, NULL, wait_for_gate, NULL);
  pthread_join(holder, NULL);
  pthread_join(waiter, NULL);
  CHECK(waited_after_leave == 1);
}

static void *enter_and_stay(void *arg) {
  (void)arg;
  ac_fd_gate_enter();
  return NULL;
}

int main(void) {
  /* Nobody holds it: no wait. */
  ac_fd_gate_wait();
  CHECK(1);
  /* The thread's own hold (a handler interrupting the shim): no wait. */
  ac_fd_gate_enter();
  ac_fd_gate_wait();
  ac_fd_gate_leave();
  CHECK(1);
  other_thread_holds();

  /* A thread that ends holding it (a bug): a fork's child does not wait for
   * it, and the parent waits a bounded time, not forever. */
  pthread_t t;
  pthread_create(&t, NULL, enter_and_stay, NULL);
  pthread_join(t, NULL);
  pid_t pid = fork();
  if (pid == 0) {
    ac_fd_gate_after_fork_child();
    alarm(1); /* the bounded wait is 2 s: past 1 s the child dies by SIGALRM */
    ac_fd_gate_wait();
    _exit(0);
  }
  int st = 0;
  waitpid(pid, &st, 0);
  CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
  ac_fd_gate_wait(); /* returns: the test would otherwise hang under ctest's limit */
  CHECK(1);
  return TEST_SUMMARY("test_fd_gate");
}
