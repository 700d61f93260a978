/* interceptors_thread.c - threads made by the program (and by the driver).
 *
 * The page guard keeps each thread's protection-key register in step with
 * the model, and a thread inherits its creator's register: so it must know
 * every thread from its first instruction of the program's (guard/threads.c).
 * pthread_create is wrapped: a record for the new thread is made before it
 * exists (a transition meanwhile counts it, with its creator's register),
 * and the thread runs a short start of the shim's before the program's
 * routine. A thread the driver makes for itself (its caller is libcuda) is
 * marked so: the driver's own accesses are never judged; so is one the shim
 * makes (the page guard's reporter), whose wait is no program's.
 *
 * A process made without the fork handlers - _Fork(), clone() without
 * CLONE_VM, a raw clone system call (interceptors_own.c's syscall) -
 * is marked a foreign child from its first step: the shim stays out of it.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdlib.h>

#include "libc_real.h"
#include "shim.h"

struct thread_start {
  void *(*routine)(void *);
  void *arg;
  struct ac_guard_thread *record;
  bool by_driver;
};

static void *start_thread(void *p) {
  struct thread_start s = *(struct thread_start *)p;
  free(p);
  ac_guard_thread_begins(s.record, s.by_driver);
  return s.routine(s.arg);
}

AC_EXPORT int pthread_create(pthread_t *thread, const pthread_attr_t *attr,
                             void *(*routine)(void *), void *arg) {
  __typeof__(&pthread_create) real = AC_LIBC_REAL(pthread_create);
  struct thread_start *s = malloc(sizeof *s);
  if (!s) return real(thread, attr, routine, arg); /* unknown to the guard, but made */
  /* The driver's threads, and the shim's own (the guard's reporter), run
   * none of the program's code. */
  uintptr_t caller = (uintptr_t)__builtin_return_address(0);
  bool by_driver = ac_pc_in_driver(caller) || ac_pc_in_shim((const void *)caller);
  *s = (struct thread_start){routine, arg, ac_guard_thread_expected(by_driver), by_driver};
  int r = real(thread, attr, start_thread, s);
  if (r != 0) {
    ac_guard_thread_not_made(s->record);
    free(s);
  }
  return r;
}

/* ---- processes made without the fork handlers ---- */

AC_EXPORT pid_t _Fork(void) {
  __typeof__(&_Fork) real = AC_LIBC_REAL(_Fork);
  ac_before_foreign_clone();
  pid_t pid = real();
  ac_after_foreign_clone(pid == 0);
  return pid;
}

struct clone_start {
  int (*fn)(void *);
  void *arg;
};

static int start_foreign_child(void *p) {
  struct clone_start s = *(struct clone_start *)p;
  ac_after_foreign_clone(true);
  return s.fn(s.arg);
}

/* clone() of a process (no CLONE_VM: a thread made this way shares the
 * parent's memory, and the parent's state is its own). */
AC_EXPORT int clone(int (*fn)(void *), void *stack, int flags, void *arg, ...) {
  __typeof__(&clone) real = AC_LIBC_REAL(clone);
  va_list ap;
  va_start(ap, arg);
  pid_t *parent_tid = va_arg(ap, pid_t *);
  void *tls = va_arg(ap, void *);
  pid_t *child_tid = va_arg(ap, pid_t *);
  va_end(ap);
  struct clone_start s = {fn, arg}; /* the child has a copy of this frame */
  if (flags & CLONE_VM) return real(fn, stack, flags, arg, parent_tid, tls, child_tid);
  ac_before_foreign_clone();
  int pid = real(start_foreign_child, stack, flags, &s, parent_tid, tls, child_tid);
  ac_after_foreign_clone(false);
  return pid;
}
