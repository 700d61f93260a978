/* output.c - the shim's outputs (the log file, stderr, the record stream),
 * kept safe from the program's own descriptors and out of its range.
 *
 * A program may close every descriptor (daemons close all >= 3, some close 2)
 * and open its own files, which then take the numbers the shim was using:
 * the next finding would be written into the program's data. So before every
 * write an output's identity (device and inode) is checked against the file
 * that was opened. A log that is no longer there is opened again by its
 * (absolute) path; a file the process made itself (the record stream) is
 * opened again only while its name still holds that same file; stderr is
 * written to fd 2 only while fd 2 is still the stderr the program started
 * with, else to a copy of that stderr made at start-up, else nowhere. A
 * descriptor found reused is the program's: it is never closed.
 *
 * Where the descriptors live. RLIMIT_NOFILE bounds the numbers the program's
 * open() can get: every number from the soft limit up is outside its range.
 * The shim raises the soft limit for the moment of a copy (never past the hard
 * limit) and keeps its descriptors there, so a program under a limit of 16
 * opens as many files as without it. Where the hard limit leaves no room
 * above, or the soft limit is past 65536, a descriptor is kept high inside a
 * range of 1024 or more (a program that needs the last of a thousand
 * descriptors is rare) and not kept at all in a smaller one: the log and the
 * stream are then opened for each write and closed again, and there is no
 * copy of stderr.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "fd_gate.h"
#include "report.h"
#include "sys.h"

/* The smallest range the shim keeps a descriptor inside of, when it cannot
 * keep it above; how far above the soft limit it looks for a number; and the
 * highest soft limit it goes above (a descriptor at number N makes the kernel
 * grow the process's table to N entries: 512 KiB of it at this one, and a
 * range this large is not one a program runs out of). */
#define ROOMY_RANGE 1024
#define ROOM_ABOVE 64
#define HIGHEST_ABOVE 65536

enum placement { PLACE_ABOVE_LIMIT, PLACE_HIGH_IN_RANGE, PLACE_NOWHERE };

static enum placement placement_for(const struct rlimit *lim) {
  if (lim->rlim_cur == RLIM_INFINITY || lim->rlim_cur > HIGHEST_ABOVE) return PLACE_HIGH_IN_RANGE;
  if (lim->rlim_max == RLIM_INFINITY || lim->rlim_max > lim->rlim_cur) return PLACE_ABOVE_LIMIT;
  return lim->rlim_cur >= ROOMY_RANGE ? PLACE_HIGH_IN_RANGE : PLACE_NOWHERE;
}

static int prlimit_nofile(const struct rlimit *set, struct rlimit *old) {
  return (int)syscall(SYS_prlimit64, 0, RLIMIT_NOFILE, set, old);
}

/* The lowest number kept inside the range: high, but under the limit. */
static int high_in_range(const struct rlimit *lim) {
  if (lim->rlim_cur == RLIM_INFINITY) return 1000;
  rlim_t floor = lim->rlim_cur * 3 / 4;
  return floor > 4096 ? 4096 : floor < 3 ? 3 : (int)floor;
}

/* A copy of fd at the soft limit or above. The limit is put back at once,
 * unless the program changed it meanwhile (then the program's value stays). */
static int copy_above_limit(int fd, const struct rlimit *lim) {
  struct rlimit raised = *lim, now;
  rlim_t room = lim->rlim_max == RLIM_INFINITY ? ROOM_ABOVE : lim->rlim_max - lim->rlim_cur;
  raised.rlim_cur += room < ROOM_ABOVE ? room : ROOM_ABOVE;
  if (prlimit_nofile(&raised, NULL) != 0) return -1;
  int copy = ac_sys_dup_at_least(fd, (int)lim->rlim_cur);
  int saved = errno;
  if (prlimit_nofile(lim, &now) == 0 && now.rlim_cur != raised.rlim_cur) prlimit_nofile(&now, NULL);
  errno = saved;
  return copy;
}

/* A copy of fd where the program's descriptors never come, or -1 where there
 * is no such place (fd stays open either way). */
static int copy_out_of_range(int fd) {
  struct rlimit lim;
  if (prlimit_nofile(NULL, &lim) != 0) return -1;
  switch (placement_for(&lim)) {
  case PLACE_ABOVE_LIMIT:
    return copy_above_limit(fd, &lim);
  case PLACE_HIGH_IN_RANGE:
    return ac_sys_dup_at_least(fd, high_in_range(&lim));
  default:
    return -1;
  }
}

int ac_output_move_out_of_range(int fd) {
  if (fd < 0) return fd;
  int copy = copy_out_of_range(fd);
  if (copy < 0) return fd;
  ac_sys_close(fd);
  return copy;
}

static bool is_same_file(int fd, dev_t dev, ino_t ino) {
  struct stat st;
  return fd >= 0 && ac_sys_fstat(fd, &st) == 0 && st.st_dev == dev && st.st_ino == ino;
}

static bool remember(struct ac_output *out, int fd) {
  struct stat st;
  if (ac_sys_fstat(fd, &st) != 0) return false;
  out->dev = st.st_dev;
  out->ino = st.st_ino;
  out->known = true;
  return true;
}

/* fd, just opened and remembered: kept out of the program's range where it
 * can be (the returned number), else used for this write only (*passing). */
static int keep(struct ac_output *out, int fd, bool *passing) {
  int high = copy_out_of_range(fd);
  *passing = high < 0;
  if (*passing) return fd;
  ac_sys_close(fd);
  out->fd = high;
  return high;
}

/* The stream again by its name, only while the name still holds the file
 * this process made (it never adopts another). */
static int reopen_own(const struct ac_output *out) {
  int fd = ac_sys_open(out->path, O_WRONLY | O_APPEND | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK, 0);
  if (fd < 0 || is_same_file(fd, out->dev, out->ino)) return fd;
  ac_sys_close(fd); /* opened just now: ours to close */
  errno = ESTALE;
  return -1;
}

static int reopen(struct ac_output *out) {
  if (out->exclusive) return reopen_own(out);
  char err[64];
  int fd = ac_open_log_file(out->path, err, sizeof err);
  if (fd >= 0 && !remember(out, fd)) {
    ac_sys_close(fd);
    fd = -1;
  }
  return fd;
}

/* The descriptor that is still the output's file; -1 if there is none.
 * *passing: opened for this write only, to be closed after it - with the
 * descriptor gate held until then (ac_output_write leaves it). */
static int current_fd(struct ac_output *out, bool *passing) {
  *passing = false;
  if (!out->path[0]) { /* stderr: fd 2 while it is the same file, else the copy */
    if (out->known && is_same_file(STDERR_FILENO, out->dev, out->ino)) return STDERR_FILENO;
    if (out->known && is_same_file(out->fd, out->dev, out->ino)) return out->fd;
    errno = EBADF;
    return -1;
  }
  if (out->fd >= 0 && is_same_file(out->fd, out->dev, out->ino)) return out->fd;
  /* Closed, or the number now holds a file of the program's: forget it (not
   * ours to close) and open the file again. */
  out->fd = -1;
  ac_fd_gate_enter();
  int fd = reopen(out);
  if (fd >= 0) fd = keep(out, fd, passing);
  if (!*passing) ac_fd_gate_leave();
  return fd;
}

/* Undoes the part of a record a failed write left at the end of a file of
 * the process's own, so the next record starts on a line of its own. */
static void undo_partial(int fd, size_t written) {
  int saved = errno;
  struct stat st;
  if (ac_sys_fstat(fd, &st) == 0 && (size_t)st.st_size >= written)
    ac_sys_ftruncate(fd, st.st_size - (off_t)written);
  errno = saved;
}

static bool write_whole(int fd, const char *text, size_t len, bool undo) {
  size_t done = 0;
  while (done < len) {
    ssize_t r = ac_sys_write(fd, text + done, len - done);
    if (r > 0) {
      done += (size_t)r;
      continue;
    }
    if (r == 0) errno = ENOSPC; /* no progress: never spin */
    if (undo && done) undo_partial(fd, done);
    return false;
  }
  return true;
}

/* Each of the three below holds the descriptor gate (fd_gate.h) while a
 * descriptor of its own may lie in the program's range: from an open to the
 * move, or for the whole of a write made through a descriptor that could
 * not be moved. */
static bool open_held(struct ac_output *out, const char *path, char *err, size_t errlen) {
  *out = (struct ac_output){.fd = -1};
  int fd = ac_open_log_file(path, err, errlen);
  if (fd < 0) return false;
  snprintf(out->path, sizeof out->path, "%s", path);
  bool passing;
  if (remember(out, fd)) {
    fd = keep(out, fd, &passing);
    if (passing) ac_sys_close(fd); /* opened again for each write */
    return true;
  }
  snprintf(err, errlen, "%s: %s", path, strerror(errno));
  ac_sys_close(fd);
  return false;
}

bool ac_output_open(struct ac_output *out, const char *path, char *err, size_t errlen) {
  ac_output_close(out);
  ac_fd_gate_enter();
  bool ok = open_held(out, path, err, errlen);
  ac_fd_gate_leave();
  return ok;
}

static bool create_held(struct ac_output *out, const char *path) {
  *out = (struct ac_output){.fd = -1, .exclusive = true};
  int fd = ac_sys_open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_APPEND | O_CLOEXEC, 0600);
  if (fd < 0) return false;
  snprintf(out->path, sizeof out->path, "%s", path);
  bool passing, ok = remember(out, fd);
  if (ok) fd = keep(out, fd, &passing);
  if (!ok || passing) ac_sys_close(fd);
  return ok;
}

bool ac_output_create(struct ac_output *out, const char *path) {
  ac_output_close(out);
  ac_fd_gate_enter();
  bool ok = create_held(out, path);
  ac_fd_gate_leave();
  return ok;
}

bool ac_output_rename(struct ac_output *out, const char *to) {
  if (ac_sys_rename(out->path, to) != 0) return false;
  snprintf(out->path, sizeof out->path, "%s", to);
  return true;
}

void ac_output_adopt_stderr(struct ac_output *out) {
  *out = (struct ac_output){.fd = -1};
  if (!remember(out, STDERR_FILENO)) return; /* closed: stderr is nowhere */
  out->fd = copy_out_of_range(STDERR_FILENO);
}

bool ac_output_write(struct ac_output *out, const char *text, size_t len) {
  int saved = errno;
  bool passing;
  int fd = current_fd(out, &passing);
  bool ok = fd >= 0 && write_whole(fd, text, len, out->exclusive);
  if (passing) {
    int error = errno;
    ac_sys_close(fd);
    ac_fd_gate_leave();
    errno = error;
  }
  if (ok) errno = saved; /* the program's errno is not ours to change */
  return ok;
}

void ac_output_close(struct ac_output *out) {
  if (out->fd >= 0 && out->known && is_same_file(out->fd, out->dev, out->ino))
    ac_sys_close(out->fd);
  out->fd = -1;
}
