/* fd_gate.c - the gate of fd_gate.h: a count of holders, and a futex on it. */
#define _GNU_SOURCE
#include "fd_gate.h"
#include "sys.h"

#include <dlfcn.h>
#include <stdint.h>
#include <time.h>
#include <unistd.h>

/* How long a program's close waits at most, in 10 ms steps: a gate is held
 * for a few system calls, so a wait this long means one left held. */
#define WAIT_STEPS 200

static uint32_t holders;            /* atomic; the futex word */
static __thread unsigned held_here; /* how deep this thread holds it */

void ac_fd_gate_enter(void) {
  held_here++;
  __atomic_add_fetch(&holders, 1, __ATOMIC_SEQ_CST);
}

void ac_fd_gate_leave(void) {
  held_here--;
  if (__atomic_sub_fetch(&holders, 1, __ATOMIC_SEQ_CST) == 0)
    ac_sys_futex_wake(&holders, INT32_MAX);
}

void ac_fd_gate_wait(void) {
  if (held_here) return; /* this thread holds it: waiting would never end */
  const struct timespec step = {0, 10 * 1000 * 1000};
  for (int i = 0; i < WAIT_STEPS; i++) {
    uint32_t now = __atomic_load_n(&holders, __ATOMIC_SEQ_CST);
    if (now == 0) return;
    ac_sys_futex_wait(&holders, now, &step);
  }
}

void *ac_fd_gate_dlopen(const char *path, int flags) {
  ac_fd_gate_enter();
  void *h = dlopen(path, flags);
  ac_fd_gate_leave();
  return h;
}

void ac_fd_gate_after_fork_child(void) {
  __atomic_store_n(&holders, held_here, __ATOMIC_SEQ_CST);
}
