/* sys.h - raw system calls for the code that runs inside the shim.
 *
 * The shim exports read, write, pread, ... wrappers (shim/interceptors_io.c)
 * that check the program's buffers against the page guard and take the
 * model lock; being linked -Bsymbolic, any plain read() or write() in the
 * shim's own code would bind to them. The report code's own I/O (the record
 * stream, the log, report files, suppression files) must never go through
 * them - a fork handler that reads while the model lock is held would hang -
 * so it uses these, made with syscall(2) as the sanitizers' internal_write
 * is. Each retries on EINTR; ac_sys_write_all also on short writes.
 */
#ifndef AC_SYS_H
#define AC_SYS_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <time.h>

ssize_t ac_sys_read(int fd, void *buf, size_t n);
ssize_t ac_sys_write(int fd, const void *buf, size_t n);
/* Writes all n bytes (or fails: errno says why, ENOSPC for a short write). */
bool ac_sys_write_all(int fd, const void *buf, size_t n);
ssize_t ac_sys_pwrite(int fd, const void *buf, size_t n, off_t offset);
int ac_sys_open(const char *path, int flags, mode_t mode);
int ac_sys_close(int fd);
int ac_sys_fstat(int fd, struct stat *st);
void ac_sys_sleep_ms(int ms);
int ac_sys_unlink(const char *path);
/* fcntl(fd, F_DUPFD_CLOEXEC, min). */
int ac_sys_dup_at_least(int fd, int min);
int ac_sys_ftruncate(int fd, off_t length);
/* lstat: the link itself, never what it points to. */
int ac_sys_lstat(const char *path, struct stat *st);
int ac_sys_mkdir(const char *path, mode_t mode);
int ac_sys_rmdir(const char *path);
int ac_sys_rename(const char *from, const char *to);
/* n random bytes (getrandom(2), not through the shim's own wrapper). */
bool ac_sys_random(void *buf, size_t n);
/* Reads the whole of a regular file of at most max bytes into a new buffer
 * (NUL-terminated; *len without the NUL). Never blocks on a FIFO and never
 * reads without bound: anything but a regular file, or a larger one, is
 * refused with a one-line reason in err. */
char *ac_sys_read_small_file(const char *path, size_t max, size_t *len, char *err, size_t errlen);
/* One read of at most size - 1 bytes of path (a /proc file) into buf, then a
 * NUL: the bytes read, or -1. No allocation: async-signal-safe. The
 * descriptor gate is held while the descriptor is open (fd_gate.h). */
ssize_t ac_sys_read_once(const char *path, char *buf, size_t size);
/* CLOCK_MONOTONIC in seconds (async-signal-safe). */
double ac_sys_now_seconds(void);
/* A private futex on word: wake up to n waiters; wait while *word is seen,
 * at most timeout (NULL: no limit). Async-signal-safe, no errno promised. */
void ac_sys_futex_wake(void *word, int n);
void ac_sys_futex_wait(void *word, unsigned seen, const struct timespec *timeout);

#endif
