/* interceptors_block.c - calls that block: waits, sleeps, polls.
 *
 * A thread blocked in one runs none of the program's code until it returns,
 * so it is parked meanwhile (guard/threads.c): its protection-key register,
 * which only it can write, may lag behind the model without any transition
 * having to close pages for its sake, and it catches up before the call
 * returns to the program. A thread pool waiting on condition variables, a
 * sleeping logger or a poll loop then costs the keys nothing. Each wrapper is
 * only that: two stores and, on the way out, a read of the register.
 *
 * The condition-variable waits are forwarded to their GLIBC_2.3.2 version
 * (libc_real.c), the one every program built against a glibc since 2003
 * calls, as the sanitizers' interceptors do; a program still calling the
 * 2.2.5 version, whose condition variables have another layout, is not
 * supported.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <poll.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/select.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "libc_real.h"
#include "shim.h"

#define PARKED(Ret, Name, Params, Args)                                                            \
  AC_EXPORT Ret Name Params {                                                                      \
    __typeof__(&Name) real = AC_LIBC_REAL(Name);                                                   \
    ac_guard_park();                                                                               \
    Ret result = real Args;                                                                        \
    ac_guard_unpark();                                                                             \
    return result;                                                                                 \
  }

PARKED(int, nanosleep, (const struct timespec *req, struct timespec *rem), (req, rem))
PARKED(int, clock_nanosleep,
       (clockid_t clock, int flags, const struct timespec *req, struct timespec *rem),
       (clock, flags, req, rem))
PARKED(int, usleep, (useconds_t usec), (usec))
PARKED(unsigned, sleep, (unsigned seconds), (seconds))
PARKED(int, poll, (struct pollfd * fds, nfds_t n, int timeout), (fds, n, timeout))
PARKED(int, ppoll,
       (struct pollfd * fds, nfds_t n, const struct timespec *timeout, const sigset_t *mask),
       (fds, n, timeout, mask))
PARKED(int, select, (int n, fd_set *r, fd_set *w, fd_set *e, struct timeval *timeout),
       (n, r, w, e, timeout))
PARKED(int, pselect,
       (int n, fd_set *r, fd_set *w, fd_set *e, const struct timespec *timeout,
        const sigset_t *mask),
       (n, r, w, e, timeout, mask))
PARKED(int, epoll_wait, (int epfd, struct epoll_event *events, int max, int timeout),
       (epfd, events, max, timeout))
PARKED(int, epoll_pwait,
       (int epfd, struct epoll_event *events, int max, int timeout, const sigset_t *mask),
       (epfd, events, max, timeout, mask))
PARKED(int, pause, (void), ())
PARKED(int, sigsuspend, (const sigset_t *mask), (mask))
PARKED(int, sigwaitinfo, (const sigset_t *set, siginfo_t *info), (set, info))
PARKED(int, sigtimedwait, (const sigset_t *set, siginfo_t *info, const struct timespec *timeout),
       (set, info, timeout))
PARKED(int, sigwait, (const sigset_t *set, int *sig), (set, sig))
PARKED(int, pthread_cond_wait, (pthread_cond_t * c, pthread_mutex_t *m), (c, m))
PARKED(int, pthread_cond_timedwait,
       (pthread_cond_t * c, pthread_mutex_t *m, const struct timespec *at), (c, m, at))
PARKED(int, pthread_cond_clockwait,
       (pthread_cond_t * c, pthread_mutex_t *m, clockid_t clock, const struct timespec *at),
       (c, m, clock, at))
PARKED(int, sem_wait, (sem_t * s), (s))
PARKED(int, sem_timedwait, (sem_t * s, const struct timespec *at), (s, at))
PARKED(int, sem_clockwait, (sem_t * s, clockid_t clock, const struct timespec *at), (s, clock, at))
PARKED(int, pthread_join, (pthread_t t, void **ret), (t, ret))
PARKED(pid_t, waitpid, (pid_t pid, int *status, int options), (pid, status, options))
