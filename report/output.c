/* output.c - the shim's text outputs (the log file and stderr), kept safe
 * from the program's own descriptors.
 *
 * A program may close every descriptor (daemons close all >= 3, some close 2)
 * and open its own files, which then take the numbers the shim was using:
 * the next finding would be written into the program's data. So each output
 * is kept at a high number (far from the low ones the program gets), and
 * before every write its identity (device and inode) is checked against the
 * file that was opened. A log that is no longer there is opened again by its
 * (absolute) path; stderr is written to fd 2 only while fd 2 is still the
 * stderr the program started with, else to a copy of that stderr made at
 * start-up, else nowhere. A descriptor found reused is the program's: it is
 * never closed.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "report.h"
#include "sys.h"

/* The lowest number the outputs are moved to: high, but under the limit. */
static int high_fd_floor(void) {
  struct rlimit lim;
  if (getrlimit(RLIMIT_NOFILE, &lim) != 0 || lim.rlim_cur == RLIM_INFINITY) return 1000;
  rlim_t floor = lim.rlim_cur * 3 / 4;
  return floor > 4096 ? 4096 : floor < 3 ? 3 : (int)floor;
}

/* fd, moved to a high number (fd itself if that cannot be done). */
static int move_high(int fd) {
  int high = ac_sys_dup_at_least(fd, high_fd_floor());
  if (high < 0) return fd;
  ac_sys_close(fd);
  return high;
}

static bool is_same_file(int fd, dev_t dev, ino_t ino) {
  struct stat st;
  return fd >= 0 && ac_sys_fstat(fd, &st) == 0 && st.st_dev == dev && st.st_ino == ino;
}

static bool remember(struct ac_output *out, int fd) {
  struct stat st;
  if (ac_sys_fstat(fd, &st) != 0) return false;
  out->fd = fd;
  out->dev = st.st_dev;
  out->ino = st.st_ino;
  return true;
}

bool ac_output_open(struct ac_output *out, const char *path, char *err, size_t errlen) {
  ac_output_close(out);
  int fd = ac_open_log_file(path, err, errlen);
  if (fd < 0) return false;
  fd = move_high(fd);
  snprintf(out->path, sizeof out->path, "%s", path);
  if (remember(out, fd)) return true;
  snprintf(err, errlen, "%s: %s", path, strerror(errno));
  ac_sys_close(fd);
  return false;
}

void ac_output_adopt_stderr(struct ac_output *out) {
  out->fd = -1;
  out->path[0] = 0;
  struct stat st;
  if (ac_sys_fstat(STDERR_FILENO, &st) != 0) return; /* closed: stderr is nowhere */
  int copy = ac_sys_dup_at_least(STDERR_FILENO, high_fd_floor());
  if (copy >= 0 && !remember(out, copy)) ac_sys_close(copy);
}

/* The descriptor that is still the output's file; -1 if there is none. */
static int current_fd(struct ac_output *out) {
  if (!out->path[0]) { /* stderr: fd 2 while it is the same file, else the copy */
    if (out->fd < 0) return -1;
    if (is_same_file(STDERR_FILENO, out->dev, out->ino)) return STDERR_FILENO;
    return is_same_file(out->fd, out->dev, out->ino) ? out->fd : -1;
  }
  if (out->fd >= 0 && is_same_file(out->fd, out->dev, out->ino)) return out->fd;
  /* Closed, or the number now holds a file of the program's: forget it (not
   * ours to close) and open the log again, appending. */
  out->fd = -1;
  char err[64];
  int fd = ac_open_log_file(out->path, err, sizeof err);
  if (fd < 0) return -1;
  fd = move_high(fd);
  if (!remember(out, fd)) {
    ac_sys_close(fd);
    return -1;
  }
  return fd;
}

bool ac_output_write(struct ac_output *out, const char *text, size_t len) {
  int saved = errno;
  int fd = current_fd(out);
  bool ok = fd >= 0 && ac_sys_write_all(fd, text, len);
  if (fd < 0) errno = EBADF;
  if (ok) errno = saved; /* the program's errno is not ours to change */
  return ok;
}

void ac_output_close(struct ac_output *out) {
  if (out->fd >= 0 && is_same_file(out->fd, out->dev, out->ino)) ac_sys_close(out->fd);
  out->fd = -1;
}
