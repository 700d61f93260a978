/* interceptors_fd.c - the program's calls that close or replace descriptors
 * wait while the shim holds a descriptor in the program's range (the gate,
 * base/fd_gate.h): close, close_range, closefrom, dup2, dup3. A daemon's
 * close_range between the shim's open of its record stream and the move of
 * that descriptor above the program's range would otherwise close the
 * shim's file, and the program's next open would get the number the shim is
 * about to move, write into and close. The wait is a load of one word when
 * nobody holds the gate, and the call is the C library's, untouched.
 * The shim's own libraries' calls do not wait (their thread may hold a lock
 * the gate's holder is waiting for); the same system calls made through
 * syscall(2) wait in interceptors_own.c.
 */
#define _GNU_SOURCE
#include <sys/syscall.h>
#include <unistd.h>

#include "fd_gate.h"
#include "libc_real.h"
#include "own_code.h"
#include "shim.h"

bool ac_closes_descriptors(long number) {
  switch (number) {
  case SYS_close:
  case SYS_dup3:
#ifdef SYS_dup2
  case SYS_dup2:
#endif
#ifdef SYS_close_range
  case SYS_close_range:
#endif
    return true;
  default:
    return false;
  }
}

#define WAIT_FOR_THE_GATE()                                                                        \
  do {                                                                                             \
    if (!AC_FROM_OWN_LIBRARY()) ac_fd_gate_wait();                                                 \
  } while (0)

AC_EXPORT int close(int fd) {
  WAIT_FOR_THE_GATE();
  return AC_LIBC_REAL(close)(fd);
}

AC_EXPORT int dup2(int fd, int to) {
  WAIT_FOR_THE_GATE();
  return AC_LIBC_REAL(dup2)(fd, to);
}

AC_EXPORT int dup3(int fd, int to, int flags) {
  WAIT_FOR_THE_GATE();
  return AC_LIBC_REAL(dup3)(fd, to, flags);
}

/* A C library older than close_range and closefrom (glibc 2.34) has no
 * definition to forward to: the system call itself, and closefrom as the
 * C library makes it. */
AC_EXPORT int close_range(unsigned int first, unsigned int last, int flags) {
  WAIT_FOR_THE_GATE();
  __typeof__(&close_range) real = AC_LIBC_REAL(close_range);
  return real ? real(first, last, flags) : (int)syscall(SYS_close_range, first, last, flags);
}

AC_EXPORT void closefrom(int first) {
  WAIT_FOR_THE_GATE();
  __typeof__(&closefrom) real = AC_LIBC_REAL(closefrom);
  if (real) {
    real(first);
    return;
  }
  syscall(SYS_close_range, (unsigned)first, ~0U, 0);
}
