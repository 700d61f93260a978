/* stream.c - the per-process record stream, where nothing is lost in silence.
 *
 * Each process appends its records (jsonl.c makes them) to a file of its own
 * in a private folder - a folder of this user's that no other may enter: the
 * CLI's session folder (checked before use), or, under plain LD_PRELOAD, one
 * the process makes beside the report (mode 0700, a name no one can guess).
 * The file is made with O_CREAT | O_EXCL | O_NOFOLLOW, mode 0600: never a
 * file that was there, never through a link, so no other user's records can
 * get into a report and no one else can read these. Its descriptor is kept out
 * of the program's range where it can be (output.c).
 *
 * A record that cannot be written (no descriptor left, a full disk) waits in
 * memory, in order, and is written before the next record and at exit, when
 * the program may have closed its files or room may have been made. While
 * records wait, the file is named *.cut.jsonl: a process that dies then (or
 * leaves with _exit) leaves a stream whose very name says records are
 * missing - a rename needs neither a descriptor nor room. Past STREAM_MEMORY
 * bytes waiting, records are dropped and counted; once the file takes records
 * again a "lost" record says how many, and it keeps its cut name.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report.h"
#include "sys.h"

#define STREAM_MEMORY (4u << 20)
#define NAMES_PER_PID 100 /* an exec'd program keeps its pid: its stream is another file */

struct ac_records_wait {
  struct ac_records_wait *next;
  size_t len;
  char text[];
};

void ac_records_init(struct ac_records *s, const struct ac_records_place *place, int pid) {
  *s = (struct ac_records){.out = {.fd = -1}, .place = *place, .pid = pid};
}

/* The name the stream has while records are missing: x.jsonl -> x.cut.jsonl. */
static void cut_name(const char *path, char *out, size_t len) {
  size_t n = strlen(path) - strlen(".jsonl");
  snprintf(out, len, "%.*s%s", (int)n, path, AC_RECORDS_CUT_SUFFIX);
}

/* Whether path still names the file or folder it named when made. */
static bool still_is(const char *path, dev_t dev, ino_t ino) {
  struct stat st;
  return ac_sys_lstat(path, &st) == 0 && st.st_dev == dev && st.st_ino == ino;
}

static bool make_folder(struct ac_records *s) {
  struct stat st;
  if (!ac_make_private_folder(s->place.where, s->folder, sizeof s->folder)) return false;
  if (ac_sys_lstat(s->folder, &st) == 0) s->folder_dev = st.st_dev, s->folder_ino = st.st_ino;
  return true;
}

static bool find_folder(struct ac_records *s) {
  char why[600];
  if (s->folder[0]) return true;
  if (s->place.make_folder) return make_folder(s);
  if (!ac_folder_is_private(s->place.where, why, sizeof why)) return errno = EPERM, false;
  snprintf(s->folder, sizeof s->folder, "%s", s->place.where);
  return true;
}

/* The file, made new: <pid>.jsonl, or <pid>.<n>.jsonl where an earlier
 * program of the same pid (before an exec) has the first name. */
static bool create(struct ac_records *s) {
  if (!find_folder(s)) return false;
  for (int n = 0; n < NAMES_PER_PID; n++) {
    char path[sizeof s->path];
    int len = n ? snprintf(path, sizeof path, "%s/%d.%d.jsonl", s->folder, s->pid, n)
                : snprintf(path, sizeof path, "%s/%d.jsonl", s->folder, s->pid);
    if (len < 0 || (size_t)len >= sizeof path) return errno = ENAMETOOLONG, false;
    if (ac_output_create(&s->out, path)) {
      snprintf(s->path, sizeof s->path, "%s", path);
      s->created = true;
      s->cut = false;
      return true;
    }
    if (errno != EEXIST) return false;
  }
  return false;
}

/* Names the stream for what it holds: whole, or cut (records missing). */
static void name_cut(struct ac_records *s, bool cut) {
  if (!s->created || s->cut == cut) return;
  char cut_path[sizeof s->path];
  cut_name(s->path, cut_path, sizeof cut_path);
  if (ac_output_rename(&s->out, cut ? cut_path : s->path)) s->cut = cut;
}

/* One line into the file. The file gone, or another in its place (a
 * program's clean-up): the records it held are lost, and a new one is made. */
static bool write_line(struct ac_records *s, const char *text, size_t len) {
  if (!s->created && !create(s)) return false;
  if (ac_output_write(&s->out, text, len)) {
    s->written++;
    return true;
  }
  if (errno == ENOENT || errno == ESTALE) {
    s->lost += s->written;
    s->written = 0;
    s->created = false;
    s->cut = false;
  }
  return false;
}

/* The lost record: how many records this stream cannot hold. */
static int lost_line(const struct ac_records *s, char *buf, size_t len) {
  return snprintf(buf, len, "{\"type\":\"lost\",\"pid\":%d,\"records\":%lu,\"why\":\"%s\"}\n",
                  s->pid, s->lost, strerror(s->error));
}

static bool say_lost(struct ac_records *s) {
  char line[256];
  if (s->lost_said == s->lost) return true;
  int n = lost_line(s, line, sizeof line);
  if (n <= 0 || !write_line(s, line, (size_t)n)) return false;
  s->lost_said = s->lost;
  return true;
}

static bool write_waiting(struct ac_records *s) {
  while (s->first) {
    struct ac_records_wait *w = s->first;
    if (!write_line(s, w->text, w->len)) return false;
    s->first = w->next;
    if (!s->first) s->last = NULL;
    s->waiting_bytes -= w->len;
    s->waiting--;
    free(w);
  }
  return say_lost(s);
}

static bool wait_in_memory(struct ac_records *s, const char *text, size_t len) {
  struct ac_records_wait *w =
      s->waiting_bytes + len <= STREAM_MEMORY ? malloc(sizeof *w + len) : NULL;
  if (!w) {
    s->lost++;
    return false;
  }
  *w = (struct ac_records_wait){.len = len};
  memcpy(w->text, text, len);
  if (s->last)
    s->last->next = w;
  else
    s->first = w;
  s->last = w;
  s->waiting_bytes += len;
  s->waiting++;
  return true;
}

enum ac_records_result ac_records_append(struct ac_records *s, const char *text, size_t len) {
  if (write_waiting(s) && write_line(s, text, len)) {
    if (!s->lost) name_cut(s, false);
    return AC_RECORDS_WRITTEN;
  }
  s->error = errno;
  bool kept = wait_in_memory(s, text, len);
  if (!s->created) create(s); /* to carry the cut name, where it can be made */
  name_cut(s, true);
  return kept ? AC_RECORDS_WAITING : AC_RECORDS_LOST;
}

bool ac_records_flush(struct ac_records *s) {
  if (!s->first && s->lost_said == s->lost) return true;
  if (write_waiting(s)) {
    if (!s->lost) name_cut(s, false);
    return true;
  }
  s->error = errno;
  return false;
}

char *ac_records_unwritten(const struct ac_records *s, size_t *len) {
  char lost[256];
  int n = s->lost > s->lost_said ? lost_line(s, lost, sizeof lost) : 0;
  char *text = malloc(s->waiting_bytes + (size_t)(n > 0 ? n : 0) + 1);
  if (!text) return NULL;
  size_t at = 0;
  for (const struct ac_records_wait *w = s->first; w; w = w->next) {
    memcpy(text + at, w->text, w->len);
    at += w->len;
  }
  if (n > 0) memcpy(text + at, lost, (size_t)n), at += (size_t)n;
  text[at] = 0;
  *len = at;
  return text;
}

static void drop_waiting(struct ac_records *s) {
  while (s->first) {
    struct ac_records_wait *w = s->first;
    s->first = w->next;
    free(w);
  }
  s->last = NULL;
  s->waiting = 0;
  s->waiting_bytes = 0;
}

/* Only what the process made, checked again just before: in a folder others
 * may write, another file could have been put at the name meanwhile. */
void ac_records_remove(struct ac_records *s) {
  ac_output_close(&s->out);
  if (s->created && still_is(s->out.path, s->out.dev, s->out.ino)) ac_sys_unlink(s->out.path);
  if (s->place.make_folder && s->folder[0] && still_is(s->folder, s->folder_dev, s->folder_ino))
    ac_sys_rmdir(s->folder);
  drop_waiting(s);
  struct ac_records_place place = s->place;
  ac_records_init(s, &place, s->pid);
}

void ac_records_forget(struct ac_records *s) {
  ac_output_close(&s->out);
  drop_waiting(s);
  s->created = false;
}
