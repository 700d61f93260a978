/* interceptors_own.c - the system calls of the shim's own libraries, kept
 * out of the program's descriptors; and syscall(2), through which libunwind
 * makes them (and a program may clone a process the fork handlers never see).
 *
 * The shim loads libunwind (stacks), libdw and libelf (source lines) itself,
 * privately, but their calls into the C library bind to the shim's exports:
 * those made from their code (base/own_code.h) are the shim's business.
 *
 * libunwind checks that an address is readable before it reads a frame it
 * is unsure of by writing one byte of it into a pipe of its own (a write the
 * kernel refuses with EFAULT where the byte is unreadable). That pipe lived
 * in the program's lowest free descriptors: a program under a small
 * RLIMIT_NOFILE got fewer files than bare, and one that closed every
 * descriptor and opened its own data file in the numbers the pipe had would
 * have had a byte of the shim's unwinding read from it and written into it.
 * Here pipe2 gives libunwind no descriptor (-1, -1), read of that pipe says
 * it is empty, and the write is a probe of the byte that needs none -
 * FUTEX_WAIT with a zero timeout reads the word as the thread itself would,
 * through its page protection and its protection keys, and fails with EFAULT
 * exactly where the write did.
 *
 * libdw keeps each module's ELF file and debug file open once it read them
 * (a finding's source lines): those descriptors are moved where the
 * program's never come (report/output.c), above its RLIMIT_NOFILE.
 *
 * Those moves hold the descriptor gate (base/fd_gate.h), which the
 * program's closes wait for (interceptors_fd.c; here, the system calls that
 * close or replace descriptors made through syscall(2)).
 *
 * Every other call of the program's is the C library's, untouched.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <linux/sched.h>
#include <stdarg.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "fd_gate.h"
#include "libc_real.h"
#include "own_code.h"
#include "shim.h"

/* Whether addr's word can be read by the calling thread; async-signal-safe,
 * no descriptor, no side effect (the wait times out at once or finds the
 * word changed). */
static bool readable(const void *addr) {
  const struct timespec now = {0, 0};
  uintptr_t word = (uintptr_t)addr & ~(uintptr_t)3;
  long r = syscall(SYS_futex, (void *)word, FUTEX_WAIT_PRIVATE, 0, &now, NULL, 0);
  return r == 0 || errno != EFAULT;
}

bool ac_unwinder_read(int fd, ssize_t *result) {
  if (fd != -1) return false;
  errno = EAGAIN; /* the pipe that is not there is empty: every address is checked anew */
  *result = -1;
  return true;
}

/* libunwind's probe: on x86-64 it writes the byte through syscall(2), on
 * aarch64 through write(2); both come here. */
bool ac_unwinder_write(int fd, const void *addr, ssize_t *result) {
  if (fd != -1) return false;
  if (readable(addr)) {
    *result = 1;
  } else {
    errno = EFAULT;
    *result = -1;
  }
  return true;
}

AC_EXPORT int open(const char *path, int flags, ...) {
  __typeof__(&open) real = AC_LIBC_REAL(open);
  mode_t mode = 0;
  if (flags & (O_CREAT | O_TMPFILE)) {
    va_list ap;
    va_start(ap, flags);
    mode = va_arg(ap, mode_t);
    va_end(ap);
  }
  if (!AC_FROM_OWN_LIBRARY()) return real(path, flags, mode);
  return AC_OPEN_OUT_OF_RANGE(real(path, flags, mode));
}

AC_EXPORT int dup(int fd) {
  __typeof__(&dup) real = AC_LIBC_REAL(dup);
  if (!AC_FROM_OWN_LIBRARY()) return real(fd);
  return AC_OPEN_OUT_OF_RANGE(real(fd));
}

AC_EXPORT int pipe2(int fds[2], int flags) {
  __typeof__(&pipe2) real = AC_LIBC_REAL(pipe2);
  if (ac_pc_in_unwinder((uintptr_t)__builtin_return_address(0))) {
    fds[0] = fds[1] = -1;
    return 0;
  }
  return real(fds, flags);
}

/* Whether a clone system call makes a process (not a thread sharing the
 * memory): its child, where it returns 0, is a foreign child (shim.h). */
static bool forks_a_process(long number, const long *a) {
  if (number == SYS_clone) return !(a[0] & CLONE_VM);
#ifdef SYS_clone3
  if (number == SYS_clone3 && a[0]) return !(((const struct clone_args *)a[0])->flags & CLONE_VM);
#endif
  return false;
}

/* Six arguments are read whatever the caller passed, as the C library's own
 * syscall() does: the sixth comes from the caller's stack, where a call
 * with fewer left something of its frame, read and passed on unused - which
 * AddressSanitizer would take for an underflow. */
__attribute__((no_sanitize("address"))) AC_EXPORT long syscall(long number, ...) {
  __typeof__(&syscall) real = AC_LIBC_REAL(syscall);
  va_list ap;
  va_start(ap, number);
  long a[6];
  for (int i = 0; i < 6; i++)
    a[i] = va_arg(ap, long);
  va_end(ap);
  /* The shim's own raw calls (base/sys.c, being linked -Bsymbolic, binds
   * here): never the program's closes, forks or the unwinder's writes, and
   * a reporter thread must not wait at the gate for a holder that may be
   * waiting for the reporter's lock. */
  if (ac_pc_in_shim(__builtin_return_address(0)))
    return real(number, a[0], a[1], a[2], a[3], a[4], a[5]);
  ssize_t unwinder;
  if (number == SYS_write && /* an int argument: its upper half is not set */
      ac_pc_in_unwinder((uintptr_t)__builtin_return_address(0)) &&
      ac_unwinder_write((int)a[0], (const void *)a[1], &unwinder))
    return unwinder;
  if (ac_closes_descriptors(number) && !AC_FROM_OWN_LIBRARY()) ac_fd_gate_wait();
  bool forks = forks_a_process(number, a);
  if (forks) ac_before_foreign_clone();
  long r = real(number, a[0], a[1], a[2], a[3], a[4], a[5]);
  if (forks) ac_after_foreign_clone(r == 0);
  return r;
}
