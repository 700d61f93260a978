/* locks.h - the locks of attachcheck, declared once in locks.inc with their
 * order and what fork does with each.
 *
 * ac_lock() marks the lock as this thread's before it waits for it and
 * ac_unlock() unmarks it after releasing it, so that ac_lock_held() is true
 * from the first instruction of an acquisition to the last of a release: a
 * signal handler that interrupts its thread anywhere in between (the guard's
 * SIGSEGV handler, when a program's handler touches guarded memory while the
 * shim works on that thread) knows never to wait for that lock. Checked
 * builds (AC_CHECK_LOCKS) stop with a line at any acquisition out of the
 * table's order, and at a release of a lock the thread does not hold.
 */
#ifndef AC_LOCKS_H
#define AC_LOCKS_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

enum ac_lock_id {
#define AC_LOCK(Name, Fork, What) AC_LOCK_##Name,
#include "locks.inc"
#undef AC_LOCK
  AC_LOCK_COUNT
};

/* Each lock, and how many times it has been taken (read and written under
 * it): beside the mutex, on the line a taker writes anyway, rather than
 * beside data every thread reads. */
struct ac_lock_slot {
  pthread_mutex_t mutex;
  uint64_t takings;
};
extern struct ac_lock_slot ac_locks[AC_LOCK_COUNT];
extern __thread uint32_t ac_locks_held; /* bit n: this thread holds (or is taking) lock n */

/* Stops the process with a line naming the broken lock rule. */
void ac_lock_violation(const char *what, enum ac_lock_id id) __attribute__((noreturn));

static inline bool ac_lock_held(enum ac_lock_id id) {
  return (ac_locks_held >> id) & 1u;
}

/* Whether this thread holds (or is taking) any lock of the table: a signal
 * handler that interrupted it there must wait for none of them. */
static inline bool ac_locks_any_held(void) {
  return ac_locks_held != 0;
}

static inline void ac_lock(enum ac_lock_id id) {
#ifdef AC_CHECK_LOCKS
  if (ac_locks_held >> id) ac_lock_violation("taken while holding itself or a lock after it", id);
#endif
  __atomic_store_n(&ac_locks_held, ac_locks_held | (1u << id), __ATOMIC_RELAXED);
  __atomic_signal_fence(__ATOMIC_SEQ_CST); /* marked before the wait, as a handler sees it */
  pthread_mutex_lock(&ac_locks[id].mutex);
  ac_locks[id].takings++;
}

/* How many times lock id has been taken; the caller holds it. */
static inline uint64_t ac_lock_takings(enum ac_lock_id id) {
  return ac_locks[id].takings;
}

static inline void ac_unlock(enum ac_lock_id id) {
#ifdef AC_CHECK_LOCKS
  if (!ac_lock_held(id)) ac_lock_violation("released by a thread that does not hold it", id);
#endif
  pthread_mutex_unlock(&ac_locks[id].mutex);
  __atomic_signal_fence(__ATOMIC_SEQ_CST); /* unmarked only once released */
  __atomic_store_n(&ac_locks_held, ac_locks_held & ~(1u << id), __ATOMIC_RELAXED);
}

/* The fork protocol, from the table: prepare takes every TAKE lock in order
 * (those this thread holds already - a fork from a signal handler that
 * interrupted attachcheck - are left as they are), the parent releases them,
 * and the child re-initialises every lock and starts with none held. */
void ac_locks_fork_prepare(void);
void ac_locks_fork_parent(void);
void ac_locks_fork_child(void);
/* Whether a thread is in a fork's prepare step, or waits to be: a thread
 * that takes a lock over and over (the guard's reporter, batch after batch)
 * lets it go first - a mutex is not fair, and a fork waiting behind such a
 * thread could wait for as long as the program makes findings. */
bool ac_locks_fork_pending(void);

/* The table as text, for --help-style listings and the test that keeps
 * docs/design.md's lock list equal to it. */
const char *ac_lock_name(enum ac_lock_id id);

#endif
