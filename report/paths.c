/* paths.c - the names and the creation of report files.
 *
 * A report path may hold %p (the process's pid: under the CLI the program's,
 * the root of the run; under plain LD_PRELOAD each process's own), %q{NAME}
 * (the value of environment variable NAME, e.g. an MPI rank) and %% (a
 * percent sign). A report file is never reached through a symbolic link and
 * never replaces an existing file unless --overwrite says so; it is written
 * to a new temporary file beside it and renamed into place, so a reader sees
 * either no report or a whole one.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fd_gate.h"
#include "report.h"
#include "sys.h"

bool ac_expand_path(const char *pattern, int pid, char *out, size_t len, char *err, size_t errlen) {
  size_t n = 0;
  for (const char *p = pattern; *p; p++) {
    char piece[32];
    const char *add = piece;
    size_t add_len;
    if (*p != '%') {
      piece[0] = *p, add_len = 1;
    } else if (p[1] == '%') {
      piece[0] = '%', add_len = 1, p++;
    } else if (p[1] == 'p') {
      add_len = (size_t)snprintf(piece, sizeof piece, "%d", pid), p++;
    } else if (p[1] == 'q' && p[2] == '{') {
      const char *close = strchr(p + 3, '}');
      if (!close) return snprintf(err, errlen, "%s: %%q{ without its }", pattern), false;
      char name[128];
      size_t name_len = (size_t)(close - (p + 3));
      if (name_len == 0 || name_len >= sizeof name)
        return snprintf(err, errlen, "%s: %%q{} needs a variable name", pattern), false;
      memcpy(name, p + 3, name_len);
      name[name_len] = 0;
      add = getenv(name);
      if (!add)
        return snprintf(err, errlen, "%s: %%q{%s}: %s is not set", pattern, name, name), false;
      add_len = strlen(add);
      p = close;
    } else {
      return snprintf(err, errlen, "%s: unknown %%%c (use %%p, %%q{NAME} or %%%%)", pattern,
                      p[1] ? p[1] : ' '),
             false;
    }
    if (n + add_len >= len) return snprintf(err, errlen, "%s: path too long", pattern), false;
    memcpy(out + n, add, add_len);
    n += add_len;
  }
  out[n] = 0;
  return true;
}

bool ac_report_path_usable(const char *path, bool overwrite, char *why, size_t len) {
  char folder[4096];
  struct stat st;
  snprintf(folder, sizeof folder, "%s", path);
  char *slash = strrchr(folder, '/');
  if (!slash)
    snprintf(folder, sizeof folder, ".");
  else if (slash == folder)
    folder[1] = 0;
  else
    *slash = 0;
  if (stat(folder, &st) != 0 || !S_ISDIR(st.st_mode))
    return snprintf(why, len, "folder %s does not exist", folder), false;
  if (access(folder, W_OK) != 0)
    return snprintf(why, len, "folder %s is not writable", folder), false;
  if (lstat(path, &st) == 0) {
    if (S_ISLNK(st.st_mode))
      return snprintf(why, len,
                      "%s is a symbolic link (report files are never written through "
                      "one)",
                      path),
             false;
    if (!S_ISREG(st.st_mode)) return snprintf(why, len, "%s is not a regular file", path), false;
    if (!overwrite)
      return snprintf(why, len, "%s already exists (--overwrite on replaces it)", path), false;
  }
  return true;
}

/* A file beside path: path + suffix when that name fits (NAME_MAX), else a
 * short hidden name of its own in the same folder, made from a hash of the
 * report's name (a valid 250-character report name must not lose its
 * report because its temporary or stream name would be too long). */
bool ac_sibling_name(const char *path, const char *suffix, char *out, size_t len) {
  const char *slash = strrchr(path, '/');
  const char *base = slash ? slash + 1 : path;
  int n;
  if (strlen(base) + strlen(suffix) <= NAME_MAX) {
    n = snprintf(out, len, "%s%s", path, suffix);
  } else {
    char hash[17];
    snprintf(hash, sizeof hash, "%016llx", (unsigned long long)ac_hash_text(AC_HASH_START, base));
    n = snprintf(out, len, "%.*s.attachcheck-%s%s", (int)(base - path), path, hash, suffix);
  }
  return n >= 0 && (size_t)n < len;
}

/* pattern made absolute against the current folder (whose own '%' signs are
 * escaped, so the result is still a pattern). */
/* Whether pattern expands to an absolute path: it starts with '/', or with
 * %q{NAME} whose value does (%q{HOME}/report.json). */
static bool is_absolute_pattern(const char *pattern) {
  if (pattern[0] == '/') return true;
  const char *close = strncmp(pattern, "%q{", 3) == 0 ? strchr(pattern, '}') : NULL;
  char name[128];
  if (!close || (size_t)(close - pattern - 3) >= sizeof name) return false;
  snprintf(name, sizeof name, "%.*s", (int)(close - pattern - 3), pattern + 3);
  const char *value = getenv(name);
  return value && value[0] == '/';
}

bool ac_absolute_pattern(const char *pattern, char *out, size_t len) {
  if (!pattern || !*pattern || is_absolute_pattern(pattern)) {
    int n = snprintf(out, len, "%s", pattern ? pattern : "");
    return n >= 0 && (size_t)n < len;
  }
  char cwd[4096];
  if (!getcwd(cwd, sizeof cwd)) return false;
  size_t n = 0;
  for (const char *c = cwd; *c; c++) {
    if (n + 3 >= len) return false;
    if (*c == '%') out[n++] = '%';
    out[n++] = *c;
  }
  int m = snprintf(out + n, len - n, "%s%s", n > 1 ? "/" : "", pattern);
  return m >= 0 && (size_t)m < len - n;
}

static bool write_file(const char *text, size_t n, const char *path, bool overwrite, char *err,
                       size_t errlen);

/* The n bytes of text into a new temporary file, with raw writes (sys.h). */
static bool write_temporary(const char *text, size_t n, const char *tmp, char *err, size_t errlen) {
  ac_fd_gate_enter(); /* the descriptor lies in the program's range (fd_gate.h) */
  int fd = ac_sys_open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (fd < 0) {
    ac_fd_gate_leave();
    return snprintf(err, errlen, "%s: %s", tmp, strerror(errno)), false;
  }
  bool ok = ac_sys_write_all(fd, text, n);
  int saved = errno;
  if (ac_sys_close(fd) != 0 && ok) ok = false, saved = errno;
  ac_fd_gate_leave();
  if (!ok) {
    ac_sys_unlink(tmp);
    snprintf(err, errlen, "%s: %s", tmp, strerror(saved ? saved : EIO));
  }
  return ok;
}

bool ac_write_report_file(json_t *report, const char *path, bool overwrite, char *err,
                          size_t errlen) {
  char *text = json_dumps(report, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
  if (!text) return snprintf(err, errlen, "%s: out of memory", path), false;
  size_t n = strlen(text);
  text[n] = '\n'; /* json_dumps leaves room for its terminator; reuse it */
  bool ok = write_file(text, n + 1, path, overwrite, err, errlen);
  free(text);
  return ok;
}

bool ac_write_text_file(const char *text, const char *path, bool overwrite, char *err,
                        size_t errlen) {
  return write_file(text, strlen(text), path, overwrite, err, errlen);
}

/* n bytes of text as the file at path: a new temporary file, then renamed
 * into place (never replacing an existing file unless overwrite). */
static bool write_file(const char *text, size_t n, const char *path, bool overwrite, char *err,
                       size_t errlen) {
  if (!ac_report_path_usable(path, overwrite, err, errlen)) return false;
  char tmp[4200], suffix[48];
  snprintf(suffix, sizeof suffix, ".tmp.%d", (int)getpid());
  if (!ac_sibling_name(path, suffix, tmp, sizeof tmp))
    return snprintf(err, errlen, "%s: path too long", path), false;
  if (!write_temporary(text, n, tmp, err, errlen)) return false;
  /* Claim the name without replacing anything unless told to: a file that
   * appeared meanwhile is not ours to replace. */
  int r =
      overwrite ? rename(tmp, path) : renameat2(AT_FDCWD, tmp, AT_FDCWD, path, RENAME_NOREPLACE);
  if (r != 0 && !overwrite && errno == EINVAL) { /* a file system without RENAME_NOREPLACE */
    r = link(tmp, path);
    if (r == 0) ac_sys_unlink(tmp);
  }
  if (r != 0) {
    int saved = errno;
    ac_sys_unlink(tmp);
    return snprintf(err, errlen, "%s: %s", path,
                    saved == EEXIST ? "already exists (--overwrite on replaces it)"
                                    : strerror(saved)),
           false;
  }
  return true;
}

int ac_open_log_file(const char *path, char *err, size_t errlen) {
  int fd =
      ac_sys_open(path, O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY, 0644);
  if (fd < 0)
    snprintf(err, errlen, "%s: %s", path,
             errno == ELOOP ? "is a symbolic link (not followed)" : strerror(errno));
  return fd;
}

bool ac_folder_is_private(const char *path, char *why, size_t len) {
  struct stat st;
  if (ac_sys_lstat(path, &st) != 0)
    return snprintf(why, len, "%s: %s", path, strerror(errno)), false;
  if (!S_ISDIR(st.st_mode))
    return snprintf(why, len, "%s is not a folder (a link or a file in its place)", path), false;
  if (st.st_uid != geteuid())
    return snprintf(why, len, "%s belongs to user %u, not to this one", path, (unsigned)st.st_uid),
           false;
  if (st.st_mode & 077)
    return snprintf(why, len, "%s is open to other users (mode %04o)", path,
                    (unsigned)(st.st_mode & 07777)),
           false;
  return true;
}

/* Six characters no other user can guess, for the name of a private folder. */
static bool random_tail(char out[7]) {
  static const char digits[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
  unsigned char r[6];
  if (!ac_sys_random(r, sizeof r)) return false;
  for (int i = 0; i < 6; i++)
    out[i] = digits[r[i] % (sizeof digits - 1)];
  out[6] = 0;
  return true;
}

bool ac_make_private_folder(const char *prefix, char *out, size_t len) {
  for (int attempt = 0; attempt < 100; attempt++) {
    char tail[7];
    if (!random_tail(tail)) return false;
    int n = snprintf(out, len, "%s%s", prefix, tail);
    if (n < 0 || (size_t)n >= len) return errno = ENAMETOOLONG, false;
    /* mkdir never takes a name that is there, a planted link included. */
    if (ac_sys_mkdir(out, 0700) == 0) return true;
    if (errno != EEXIST) return false;
  }
  return false;
}
