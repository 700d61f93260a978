/* interceptors_io.c - system calls that read or write a buffer.
 *
 * The kernel answers a protected buffer with EFAULT, not SIGSEGV, so the page
 * guard would turn a program's read(fd, managed, n) into an error it never
 * had. Only a buggy program hands the kernel memory it may not touch, and a
 * correct one memory on a page shared with such memory; each wrapper checks
 * the buffer first (the CPU access is judged and the pages lifted: fault.c),
 * pins its pages so that no transition on another thread closes them during
 * the call (pins.c), and then makes the call, which then succeeds. What no
 * wrapper sees - a raw syscall(2), a path or a struct handed to the kernel
 * by other calls - still fails with EFAULT when the buffer is busy memory
 * (docs/design.md lists them).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "libc_real.h"
#include "shim.h"

#define REAL(Name) __typeof__(&Name) real_##Name = AC_LIBC_REAL(Name);

static void check_iov(struct ac_guard_pins *pins, const char *via, const struct iovec *iov, int n,
                      bool cpu_writes) {
  for (int i = 0; iov && i < n; i++)
    ac_guard_check_buffer(pins, via, iov[i].iov_base, iov[i].iov_len, cpu_writes);
}

/* The call made with its buffers pinned until it returns; errno is the call's. */
#define PINNED(pins, call)                                                                         \
  ({                                                                                               \
    __typeof__(call) result_ = (call);                                                             \
    ac_guard_unpin(&(pins));                                                                       \
    result_;                                                                                       \
  })

AC_EXPORT ssize_t read(int fd, void *buf, size_t n) {
  REAL(read);
  struct ac_guard_pins pins = {0, {0}};
  ssize_t unwinder;
  if (AC_UNLIKELY(ac_pc_in_unwinder((uintptr_t)__builtin_return_address(0))) &&
      ac_unwinder_read(fd, &unwinder))
    return unwinder; /* libunwind's check of its own pipe (interceptors_own.c) */
  ac_guard_check_buffer(&pins, "read(2)", buf, n, true);
  return PINNED(pins, real_read(fd, buf, n));
}

AC_EXPORT ssize_t write(int fd, const void *buf, size_t n) {
  REAL(write);
  struct ac_guard_pins pins = {0, {0}};
  ssize_t unwinder;
  if (AC_UNLIKELY(ac_pc_in_unwinder((uintptr_t)__builtin_return_address(0))) &&
      ac_unwinder_write(fd, buf, &unwinder))
    return unwinder; /* libunwind's probe of an address (interceptors_own.c) */
  ac_guard_check_buffer(&pins, "write(2)", buf, n, false);
  return PINNED(pins, real_write(fd, buf, n));
}

AC_EXPORT ssize_t pread(int fd, void *buf, size_t n, off_t off) {
  REAL(pread);
  struct ac_guard_pins pins = {0, {0}};
  ac_guard_check_buffer(&pins, "pread(2)", buf, n, true);
  return PINNED(pins, real_pread(fd, buf, n, off));
}

AC_EXPORT ssize_t pread64(int fd, void *buf, size_t n, off64_t off) {
  REAL(pread64);
  struct ac_guard_pins pins = {0, {0}};
  ac_guard_check_buffer(&pins, "pread(2)", buf, n, true);
  return PINNED(pins, real_pread64(fd, buf, n, off));
}

AC_EXPORT ssize_t pwrite(int fd, const void *buf, size_t n, off_t off) {
  REAL(pwrite);
  struct ac_guard_pins pins = {0, {0}};
  ac_guard_check_buffer(&pins, "pwrite(2)", buf, n, false);
  return PINNED(pins, real_pwrite(fd, buf, n, off));
}

AC_EXPORT ssize_t pwrite64(int fd, const void *buf, size_t n, off64_t off) {
  REAL(pwrite64);
  struct ac_guard_pins pins = {0, {0}};
  ac_guard_check_buffer(&pins, "pwrite(2)", buf, n, false);
  return PINNED(pins, real_pwrite64(fd, buf, n, off));
}

AC_EXPORT ssize_t readv(int fd, const struct iovec *iov, int n) {
  REAL(readv);
  struct ac_guard_pins pins = {0, {0}};
  check_iov(&pins, "readv(2)", iov, n, true);
  return PINNED(pins, real_readv(fd, iov, n));
}

AC_EXPORT ssize_t writev(int fd, const struct iovec *iov, int n) {
  REAL(writev);
  struct ac_guard_pins pins = {0, {0}};
  check_iov(&pins, "writev(2)", iov, n, false);
  return PINNED(pins, real_writev(fd, iov, n));
}

AC_EXPORT ssize_t recv(int fd, void *buf, size_t n, int flags) {
  REAL(recv);
  struct ac_guard_pins pins = {0, {0}};
  ac_guard_check_buffer(&pins, "recv(2)", buf, n, true);
  return PINNED(pins, real_recv(fd, buf, n, flags));
}

AC_EXPORT ssize_t recvfrom(int fd, void *buf, size_t n, int flags, struct sockaddr *addr,
                           socklen_t *len) {
  REAL(recvfrom);
  struct ac_guard_pins pins = {0, {0}};
  ac_guard_check_buffer(&pins, "recvfrom(2)", buf, n, true);
  return PINNED(pins, real_recvfrom(fd, buf, n, flags, addr, len));
}

AC_EXPORT ssize_t send(int fd, const void *buf, size_t n, int flags) {
  REAL(send);
  struct ac_guard_pins pins = {0, {0}};
  ac_guard_check_buffer(&pins, "send(2)", buf, n, false);
  return PINNED(pins, real_send(fd, buf, n, flags));
}

AC_EXPORT ssize_t sendto(int fd, const void *buf, size_t n, int flags, const struct sockaddr *addr,
                         socklen_t len) {
  REAL(sendto);
  struct ac_guard_pins pins = {0, {0}};
  ac_guard_check_buffer(&pins, "sendto(2)", buf, n, false);
  return PINNED(pins, real_sendto(fd, buf, n, flags, addr, len));
}

AC_EXPORT ssize_t preadv(int fd, const struct iovec *iov, int n, off_t off) {
  REAL(preadv);
  struct ac_guard_pins pins = {0, {0}};
  check_iov(&pins, "preadv(2)", iov, n, true);
  return PINNED(pins, real_preadv(fd, iov, n, off));
}

AC_EXPORT ssize_t pwritev(int fd, const struct iovec *iov, int n, off_t off) {
  REAL(pwritev);
  struct ac_guard_pins pins = {0, {0}};
  check_iov(&pins, "pwritev(2)", iov, n, false);
  return PINNED(pins, real_pwritev(fd, iov, n, off));
}

static void check_msg(struct ac_guard_pins *pins, const char *via, const struct msghdr *msg,
                      bool cpu_writes) {
  if (!msg) return;
  check_iov(pins, via, msg->msg_iov, (int)msg->msg_iovlen, cpu_writes);
  ac_guard_check_buffer(pins, via, msg->msg_control, msg->msg_controllen, cpu_writes);
}

AC_EXPORT ssize_t recvmsg(int fd, struct msghdr *msg, int flags) {
  REAL(recvmsg);
  struct ac_guard_pins pins = {0, {0}};
  check_msg(&pins, "recvmsg(2)", msg, true);
  return PINNED(pins, real_recvmsg(fd, msg, flags));
}

AC_EXPORT ssize_t sendmsg(int fd, const struct msghdr *msg, int flags) {
  REAL(sendmsg);
  struct ac_guard_pins pins = {0, {0}};
  check_msg(&pins, "sendmsg(2)", msg, false);
  return PINNED(pins, real_sendmsg(fd, msg, flags));
}

AC_EXPORT ssize_t getrandom(void *buf, size_t n, unsigned flags) {
  REAL(getrandom);
  struct ac_guard_pins pins = {0, {0}};
  ac_guard_check_buffer(&pins, "getrandom(2)", buf, n, true);
  return PINNED(pins, real_getrandom(buf, n, flags));
}

/* stdio reaches the kernel through glibc's internal read and write, which no
 * interposed symbol sees: the buffer is checked at the stdio call. */
AC_EXPORT size_t fread(void *buf, size_t size, size_t n, FILE *f) {
  REAL(fread);
  struct ac_guard_pins pins = {0, {0}};
  ac_guard_check_buffer(&pins, "fread(3)", buf, size * n, true);
  return PINNED(pins, real_fread(buf, size, n, f));
}

AC_EXPORT size_t fwrite(const void *buf, size_t size, size_t n, FILE *f) {
  REAL(fwrite);
  struct ac_guard_pins pins = {0, {0}};
  ac_guard_check_buffer(&pins, "fwrite(3)", buf, size * n, false);
  return PINNED(pins, real_fwrite(buf, size, n, f));
}
