/* sys.c - raw system calls for the report code inside the shim (sys.h says
 * why they must not go through the shim's exported read/write wrappers). */
#define _GNU_SOURCE
#include "sys.h"

#include "fd_gate.h"

#include <errno.h>
#include <linux/futex.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

ssize_t ac_sys_read(int fd, void *buf, size_t n) {
  ssize_t r;
  do
    r = syscall(SYS_read, fd, buf, n);
  while (r < 0 && errno == EINTR);
  return r;
}

ssize_t ac_sys_write(int fd, const void *buf, size_t n) {
  ssize_t r;
  do
    r = syscall(SYS_write, fd, buf, n);
  while (r < 0 && errno == EINTR);
  return r;
}

bool ac_sys_write_all(int fd, const void *buf, size_t n) {
  const char *p = buf;
  while (n > 0) {
    ssize_t r = ac_sys_write(fd, p, n);
    if (r < 0) return false;
    if (r == 0) return errno = ENOSPC, false; /* no progress: never spin */
    p += r, n -= (size_t)r;
  }
  return true;
}

ssize_t ac_sys_pwrite(int fd, const void *buf, size_t n, off_t offset) {
  ssize_t r;
  do
    r = syscall(SYS_pwrite64, fd, buf, n, offset);
  while (r < 0 && errno == EINTR);
  return r;
}

int ac_sys_open(const char *path, int flags, mode_t mode) {
  long r;
  do
    r = syscall(SYS_openat, AT_FDCWD, path, flags, mode);
  while (r < 0 && errno == EINTR);
  return (int)r;
}

#ifdef __SANITIZE_THREAD__
/* ThreadSanitizer follows descriptors through the calls it intercepts: a
 * close made here, raw, would leave it believing the number still belongs
 * to whoever opened it, and the program's next descriptor of that number
 * would look like a race on it. Its syscall hook tells it. */
void __sanitizer_syscall_pre_impl_close(long fd);
#endif

/* close is not retried: on Linux the descriptor is gone even after EINTR. */
int ac_sys_close(int fd) {
#ifdef __SANITIZE_THREAD__
  __sanitizer_syscall_pre_impl_close(fd);
#endif
  return (int)syscall(SYS_close, fd);
}

/* One sleep, not resumed after a signal: callers poll what they wait for. */
void ac_sys_sleep_ms(int ms) {
  struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
  syscall(SYS_nanosleep, &ts, NULL);
}

int ac_sys_fstat(int fd, struct stat *st) {
  return (int)syscall(SYS_fstat, fd, st);
}

int ac_sys_unlink(const char *path) {
  return (int)syscall(SYS_unlinkat, AT_FDCWD, path, 0);
}

int ac_sys_dup_at_least(int fd, int min) {
  return (int)syscall(SYS_fcntl, fd, F_DUPFD_CLOEXEC, min);
}

int ac_sys_ftruncate(int fd, off_t length) {
  return (int)syscall(SYS_ftruncate, fd, length);
}

int ac_sys_lstat(const char *path, struct stat *st) {
  return (int)syscall(SYS_newfstatat, AT_FDCWD, path, st, AT_SYMLINK_NOFOLLOW);
}

int ac_sys_mkdir(const char *path, mode_t mode) {
  return (int)syscall(SYS_mkdirat, AT_FDCWD, path, mode);
}

int ac_sys_rmdir(const char *path) {
  return (int)syscall(SYS_unlinkat, AT_FDCWD, path, AT_REMOVEDIR);
}

/* renameat2 with no flags: the one rename every architecture has (aarch64
 * has no plain renameat). */
int ac_sys_rename(const char *from, const char *to) {
  return (int)syscall(SYS_renameat2, AT_FDCWD, from, AT_FDCWD, to, 0);
}

bool ac_sys_random(void *buf, size_t n) {
  char *p = buf;
  while (n > 0) {
    long r = syscall(SYS_getrandom, p, n, 0);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return false;
    p += r, n -= (size_t)r;
  }
  return true;
}

static char *read_fd(int fd, const char *path, size_t size, size_t *len, char *err, size_t errlen) {
  char *text = malloc(size + 1);
  if (!text) return snprintf(err, errlen, "%s: out of memory", path), NULL;
  size_t got = 0;
  while (got < size) { /* the file may shrink meanwhile; never read past size */
    ssize_t r = ac_sys_read(fd, text + got, size - got);
    if (r < 0) {
      snprintf(err, errlen, "cannot read %s: %s", path, strerror(errno));
      free(text);
      return NULL;
    }
    if (r == 0) break;
    got += (size_t)r;
  }
  text[got] = 0;
  *len = got;
  return text;
}

ssize_t ac_sys_read_once(const char *path, char *buf, size_t size) {
  ac_fd_gate_enter(); /* the descriptor lies in the program's range (fd_gate.h) */
  int fd = ac_sys_open(path, O_RDONLY | O_CLOEXEC, 0);
  ssize_t n = fd < 0 ? -1 : ac_sys_read(fd, buf, size - 1);
  if (fd >= 0) ac_sys_close(fd);
  ac_fd_gate_leave();
  buf[n > 0 ? n : 0] = 0;
  return n;
}

char *ac_sys_read_small_file(const char *path, size_t max, size_t *len, char *err, size_t errlen) {
  /* O_NONBLOCK: opening a FIFO must not wait for a writer. */
  ac_fd_gate_enter(); /* the descriptor lies in the program's range (fd_gate.h) */
  int fd = ac_sys_open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY, 0);
  if (fd < 0) {
    ac_fd_gate_leave();
    return snprintf(err, errlen, "cannot read %s: %s", path, strerror(errno)), NULL;
  }
  struct stat st;
  char *text = NULL;
  if (ac_sys_fstat(fd, &st) != 0)
    snprintf(err, errlen, "cannot read %s: %s", path, strerror(errno));
  else if (!S_ISREG(st.st_mode))
    snprintf(err, errlen, "cannot read %s: not a regular file", path);
  else if ((unsigned long long)st.st_size > max)
    snprintf(err, errlen, "cannot read %s: larger than %zu bytes", path, max);
  else
    text = read_fd(fd, path, (size_t)st.st_size, len, err, errlen);
  ac_sys_close(fd);
  ac_fd_gate_leave();
  return text;
}

double ac_sys_now_seconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

void ac_sys_futex_wake(void *word, int n) {
  syscall(SYS_futex, word, FUTEX_WAKE_PRIVATE, n, NULL, NULL, 0);
}

void ac_sys_futex_wait(void *word, unsigned seen, const struct timespec *timeout) {
  syscall(SYS_futex, word, FUTEX_WAIT_PRIVATE, seen, timeout, NULL, 0);
}
