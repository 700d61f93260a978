/* interceptors_unwinder.c - libunwind's own system calls, answered without a
 * descriptor; and syscall(2), which it makes them through.
 *
 * libunwind checks that an address is readable before it reads a frame it
 * is unsure of by writing one byte of it into a pipe of its own (a write the
 * kernel refuses with EFAULT where the byte is unreadable). That pipe lives
 * in the program's lowest free descriptors: a program under a small
 * RLIMIT_NOFILE got fewer files than bare, and one that closed every
 * descriptor and opened its own data file in the numbers the pipe had would
 * have had a byte of the shim's unwinding read from it and written into it.
 * The shim loads libunwind itself, so libunwind's calls to pipe2, read and
 * syscall bind to the shim's exports, and those made from libunwind's code
 * are answered here: pipe2 gives no descriptor (-1, -1), read of that pipe
 * says it is empty, and the write is a probe of the byte that needs none -
 * FUTEX_WAIT with a zero timeout reads the word as the thread itself would,
 * through its page protection and its protection keys, and fails with EFAULT
 * exactly where the write did. Every other call of the program's is the
 * C library's, untouched.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <stdarg.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

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

AC_EXPORT int pipe2(int fds[2], int flags) {
  static __typeof__(&pipe2) real;
  if (AC_UNLIKELY(!real)) real = (__typeof__(&pipe2))ac_real_dlsym(RTLD_NEXT, "pipe2");
  if (ac_pc_in_unwinder((uintptr_t)__builtin_return_address(0))) {
    fds[0] = fds[1] = -1;
    return 0;
  }
  return real(fds, flags);
}

/* Six arguments are read whatever the caller passed, as the C library's own
 * syscall() does: the sixth comes from the caller's stack, where a call
 * with fewer left something of its frame, read and passed on unused - which
 * AddressSanitizer would take for an underflow. */
__attribute__((no_sanitize("address"))) AC_EXPORT long syscall(long number, ...) {
  static long (*real)(long, ...);
  if (AC_UNLIKELY(!real)) real = (long (*)(long, ...))ac_real_dlsym(RTLD_NEXT, "syscall");
  va_list ap;
  va_start(ap, number);
  long a[6];
  for (int i = 0; i < 6; i++)
    a[i] = va_arg(ap, long);
  va_end(ap);
  if (number == SYS_write && (int)a[0] == -1 && /* an int argument: its upper half is not set */
      ac_pc_in_unwinder((uintptr_t)__builtin_return_address(0))) {
    if (readable((const void *)a[1])) return 1;
    errno = EFAULT;
    return -1;
  }
  return real(number, a[0], a[1], a[2], a[3], a[4], a[5]);
}
