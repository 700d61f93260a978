/* libc_real.h - the C library's own definitions of the functions the shim
 * exports (libc_interceptors.inc), one typed field per row.
 *
 * They are resolved once, when the shim loads, not on each wrapper's first
 * call: that lookup (dlsym) takes the dynamic loader's lock, which a child
 * made by _Fork() may find held by a thread it does not have (a hang in its
 * first write), and which a signal handler must never wait for. A wrapper
 * called before the shim's constructor ran (from another library's) resolves
 * the table then.
 */
#ifndef AC_LIBC_REAL_H
#define AC_LIBC_REAL_H

#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <semaphore.h>
#include <signal.h>
#include <stdio.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

struct ac_libc_table {
#define AC_LIBC(Name) __typeof__(&Name) Name;
#include "libc_interceptors.inc"
#undef AC_LIBC
};
extern struct ac_libc_table ac_libc;

/* Fills every row not filled yet; at load, and on a wrapper's early call. */
void ac_libc_resolve(void);

#define AC_LIBC_REAL(Name)                                                                         \
  (__builtin_expect(ac_libc.Name != NULL, 1) ? ac_libc.Name : (ac_libc_resolve(), ac_libc.Name))

#endif
