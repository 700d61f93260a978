/* interceptors_block.c - calls a signal would cut short.
 *
 * To disable a protection key in another thread the guard signals it
 * (keys.c). A thread asleep in nanosleep, poll or sigsuspend would
 * return early (EINTR, or woken) from any signal handled, whatever SA_RESTART
 * says; so around these calls the thread is parked: the guard does not
 * signal it, and it catches up with the keys when the call returns. Each
 * wrapper is only that; a thread that never held a key pays one load.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <poll.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/select.h>
#include <time.h>
#include <unistd.h>

#include "shim.h"

#define PARKED(Ret, Name, Params, Args)                                                            \
  AC_EXPORT Ret Name Params {                                                                      \
    static __typeof__(&Name) real;                                                                 \
    if (AC_UNLIKELY(!real)) real = (__typeof__(&Name))ac_real_dlsym(RTLD_NEXT, #Name);             \
    ac_guard_park();                                                                               \
    Ret ret = real Args;                                                                           \
    ac_guard_unpark();                                                                             \
    return ret;                                                                                    \
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
