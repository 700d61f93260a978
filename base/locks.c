/* locks.c - the locks of locks.inc and the fork protocol made from it. */
#include "locks.h"

#include "fd_gate.h"
#include "sys.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct ac_lock_slot ac_locks[AC_LOCK_COUNT] = {
#define AC_LOCK(Name, Fork, What) {PTHREAD_MUTEX_INITIALIZER, 0},
#include "locks.inc"
#undef AC_LOCK
};
__thread uint32_t ac_locks_held;

enum fork_action { TAKE, REINIT };
static const enum fork_action at_fork[AC_LOCK_COUNT] = {
#define AC_LOCK(Name, Fork, What) Fork,
#include "locks.inc"
#undef AC_LOCK
};
static const char *const names[AC_LOCK_COUNT] = {
#define AC_LOCK(Name, Fork, What) #Name,
#include "locks.inc"
#undef AC_LOCK
};

/* The locks prepare took, so that the parent releases exactly those; and
 * those the forking thread held already, which the child holds again. */
static uint32_t taken_for_fork, held_at_fork;
/* Forks between their prepare step's start and their end (atomic). */
static int forks_pending;

bool ac_locks_fork_pending(void) {
  return __atomic_load_n(&forks_pending, __ATOMIC_ACQUIRE) != 0;
}

const char *ac_lock_name(enum ac_lock_id id) {
  return id < AC_LOCK_COUNT ? names[id] : "?";
}

static void say(const char *s) {
  (void)ac_sys_write_all(2, s, strlen(s)); /* nothing to do if stderr is gone */
}

/* Where a checked build stops: the sanitizer's runtime, when the shim is
 * built with one, prints the stack that broke the rule; a single failure of
 * a rare interleaving is then enough to find it. */
void __sanitizer_print_stack_trace(void) __attribute__((weak));

void ac_lock_violation(const char *what, enum ac_lock_id id) {
  /* Raw writes: this may run with any lock held, the output's among them. */
  say("==attachcheck== internal error: lock ");
  say(ac_lock_name(id));
  say(": ");
  say(what);
  say("; this thread holds:");
  for (int held = 0; held < AC_LOCK_COUNT; held++)
    if ((ac_locks_held >> held) & 1u) say(" "), say(ac_lock_name((enum ac_lock_id)held));
  say("\n");
  if (__sanitizer_print_stack_trace) __sanitizer_print_stack_trace();
  abort();
}

void ac_locks_fork_prepare(void) {
  __atomic_add_fetch(&forks_pending, 1, __ATOMIC_ACQ_REL);
  uint32_t mine = ac_locks_held;
  taken_for_fork = 0;
  held_at_fork = mine;
  for (int id = 0; id < AC_LOCK_COUNT; id++) {
    if (at_fork[id] != TAKE || (mine >> id) & 1u) continue;
    /* Not the checked ac_lock: a fork from a signal handler that interrupted
     * attachcheck holds locks in the middle of the table. */
    pthread_mutex_lock(&ac_locks[id].mutex);
    taken_for_fork |= 1u << id;
  }
}

void ac_locks_fork_parent(void) {
  for (int id = AC_LOCK_COUNT - 1; id >= 0; id--)
    if ((taken_for_fork >> id) & 1u) pthread_mutex_unlock(&ac_locks[id].mutex);
  taken_for_fork = 0;
  __atomic_sub_fetch(&forks_pending, 1, __ATOMIC_ACQ_REL);
}

/* Every lock is made anew (another thread of the parent may have held a
 * REINIT row); the forking thread's own, held before prepare - the code a
 * signal handler interrupted goes on when it returns - are taken again. */
void ac_locks_fork_child(void) {
  for (int id = 0; id < AC_LOCK_COUNT; id++) {
    pthread_mutex_init(&ac_locks[id].mutex, NULL);
    if ((held_at_fork >> id) & 1u) pthread_mutex_lock(&ac_locks[id].mutex);
  }
  ac_locks_held = held_at_fork;
  taken_for_fork = 0;
  __atomic_store_n(&forks_pending, 0, __ATOMIC_RELEASE); /* the child's only thread forks no more */
  ac_fd_gate_after_fork_child(); /* its holders were the parent's other threads */
}
