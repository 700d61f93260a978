/* merge.c - the final JSON report, built from record streams.
 *
 * The same code serves the shim at exit (its own stream, and the records that
 * still wait in its memory) and the CLI after the program ends (one stream per
 * process, also when a process crashed). A line that is not a complete record
 * - a process killed mid-write - is counted in summary.dropped_records and
 * skipped; every complete record is kept. A process whose records did not all
 * arrive is marked incomplete, so a report that misses findings never looks
 * clean: its stream was torn (a partial line), or cut (a record could not be
 * written - the CLI reads it from the stream's cut name, from a stream with
 * no record at all, and from a "lost" record), or its page guard let CPU
 * accesses through unjudged (an "unjudged" record).
 *
 * Saved final reports (attachcheck report) merge the same way: their
 * findings by key, their processes kept apart by host and pid.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "fd_gate.h"
#include "report.h"
#include "sys.h"

struct merge {
  json_t *processes; /* pid (as text) -> process object */
  json_t *findings;  /* key -> finding object */
  json_t *order;     /* keys in first-seen order */
  struct ac_summary *sum;
  bool judge_names; /* a stream's name and emptiness tell of lost records (the CLI's streams) */
};

/* What one stream held. */
struct stream_facts {
  int records, torn;
  json_int_t pid; /* of its first record; else from its name */
};

static json_t *process_of(struct merge *m, json_int_t pid) {
  char key[24];
  snprintf(key, sizeof key, "%lld", (long long)pid);
  json_t *p = json_object_get(m->processes, key);
  if (!p) {
    p = json_pack("{s:I, s:b, s:b}", "pid", pid, "cuda_initialized", 0, "exited", 0);
    json_object_set_new(m->processes, key, p);
  }
  return p;
}

/* The same finding from the same code in several processes (forked workers,
 * MPI ranks) is one finding that lists them all. */
static void note_process(json_t *finding, json_int_t pid) {
  json_t *pids = json_object_get(finding, "processes");
  size_t i;
  json_t *p;
  json_array_foreach(pids, i, p) if (json_integer_value(p) == pid) return;
  json_array_append_new(pids, json_integer(pid));
}

/* The threads a finding's occurrences were made on, by "pid/thread": the
 * same access by several threads (a pool running one function) is one
 * finding that says how many. Kept aside while records come in (threads_seen)
 * and said as "threads" when more than one (note_threads). */
static void note_thread(json_t *finding, json_int_t pid, const json_t *thread) {
  if (!json_is_integer(thread)) return;
  json_t *seen = json_object_get(finding, "threads_seen");
  if (!seen) json_object_set_new(finding, "threads_seen", seen = json_object());
  char key[48];
  snprintf(key, sizeof key, "%lld/%lld", (long long)pid, (long long)json_integer_value(thread));
  json_object_set_new(seen, key, json_true());
}

static void note_threads(json_t *finding) {
  json_t *seen = json_object_get(finding, "threads_seen");
  if (!seen) return;
  if (json_object_size(seen) > 1)
    json_object_set_new(finding, "threads", json_integer((json_int_t)json_object_size(seen)));
  json_object_del(finding, "threads_seen");
}

/* The process's "incomplete" object, made on first use. */
static json_t *incomplete_of(json_t *proc) {
  json_t *inc = json_object_get(proc, "incomplete");
  if (!inc) {
    inc = json_pack("{s:b, s:i}", "cut", 0, "torn_records", 0);
    json_object_set_new(proc, "incomplete", inc);
  }
  return inc;
}

static void add_count(json_t *object, const char *key, json_int_t n) {
  json_object_set_new(object, key,
                      json_integer(json_integer_value(json_object_get(object, key)) + n));
}

/* Records a process could not write: known from its lost record. */
/* A repair record: the process's repairs, made and given up (with the
 * first reason). */
static void take_repair(json_t *proc, const json_t *r) {
  json_t *rep = json_object_get(proc, "repairs");
  if (!rep)
    json_object_set_new(proc, "repairs", rep = json_pack("{s:i, s:i}", "made", 0, "given_up", 0));
  bool made = json_is_true(json_object_get(r, "made"));
  add_count(rep, made ? "made" : "given_up", 1);
  const char *why = ac_json_str(r, "why");
  if (!made && *why && !json_object_get(rep, "why"))
    json_object_set_new(rep, "why", json_string(why));
}

static void take_lost(json_t *proc, const json_t *r) {
  json_t *inc = incomplete_of(proc);
  json_object_set_new(inc, "cut", json_true());
  add_count(inc, "lost_records", json_integer_value(json_object_get(r, "records")));
  if (*ac_json_str(r, "why")) json_object_set_new(inc, "why", json_string(ac_json_str(r, "why")));
}

static void take_record(struct merge *m, json_t *r) {
  const char *type = json_string_value(json_object_get(r, "type"));
  json_int_t pid = json_integer_value(json_object_get(r, "pid"));
  if (!type) {
    m->sum->dropped_records++;
    return;
  }
  json_t *proc = process_of(m, pid);
  if (strcmp(type, "process") == 0) {
    json_object_update_missing(proc, r);
    json_object_del(proc, "type");
  } else if (strcmp(type, "cuda_init") == 0) {
    json_object_set_new(proc, "cuda_initialized", json_true());
    json_t *version = json_object_get(r, "driver_version"), *gpus = json_object_get(r, "devices");
    if (version) json_object_set(proc, "cuda_driver_version", version);
    if (gpus) json_object_set(proc, "gpus", gpus);
  } else if (strcmp(type, "output_error") == 0) {
    /* Text the process could not write (its log): the run must not pass as
     * if everything had been said. */
    json_t *errors = json_object_get(proc, "output_errors");
    if (!errors) json_object_set_new(proc, "output_errors", errors = json_array());
    json_array_append_new(errors, json_string(ac_json_str(r, "message")));
    m->sum->output_errors++;
  } else if (strcmp(type, "lost") == 0) {
    take_lost(proc, r);
  } else if (strcmp(type, "unjudged") == 0) { /* accesses the page guard could not judge */
    json_t *inc = incomplete_of(proc);
    add_count(inc, "unjudged_accesses", json_integer_value(json_object_get(r, "accesses")));
    if (!*ac_json_str(inc, "why"))
      json_object_set_new(inc, "why", json_string(ac_json_str(r, "why")));
  } else if (strcmp(type, "repair") == 0) { /* --on-error repair made one, or gave it up */
    take_repair(proc, r);
  } else if (strcmp(type, "exit") == 0) {
    json_object_set_new(proc, "exited", json_true());
  } else if (strcmp(type, "halt") == 0) { /* --on-error halt stopped it at this rule's finding */
    json_object_set_new(proc, "halted_at", json_string(ac_json_str(r, "rule")));
  } else if (strcmp(type, "finding") == 0 || strcmp(type, "repeat") == 0) {
    const char *key = json_string_value(json_object_get(r, "key"));
    if (!key) return;
    json_t *f = json_object_get(m->findings, key);
    if (f) {
      json_int_t count = json_integer_value(json_object_get(f, "count"));
      json_object_set_new(f, "count", json_integer(count + 1));
      note_process(f, pid);
      note_thread(f, pid, json_object_get(r, "thread"));
    } else if (strcmp(type, "finding") == 0) {
      f = json_deep_copy(r);
      json_object_del(f, "type");
      json_object_set_new(f, "count", json_integer(1));
      json_object_set_new(f, "processes", json_array());
      note_process(f, pid);
      note_thread(f, pid, json_object_get(r, "thread"));
      json_object_set_new(m->findings, key, f);
      json_array_append_new(m->order, json_string(key));
    }
  }
}

static void read_lines(struct merge *m, FILE *in, struct stream_facts *facts) {
  char *line = NULL;
  size_t cap = 0;
  ssize_t n;
  while ((n = getline(&line, &cap, in)) > 0) {
    json_error_t error;
    json_t *r = line[n - 1] == '\n' ? json_loads(line, 0, &error) : NULL;
    if (json_is_object(r)) {
      if (!facts->records++ && json_is_integer(json_object_get(r, "pid")))
        facts->pid = json_integer_value(json_object_get(r, "pid"));
      take_record(m, r);
    } else {
      m->sum->dropped_records++;
      facts->torn++;
    }
    json_decref(r);
  }
  free(line);
}

/* The pid a stream's name starts with (<pid>.jsonl, <pid>.<n>.jsonl). */
static json_int_t pid_of_name(const char *path) {
  const char *base = strrchr(path, '/');
  return strtoll(base ? base + 1 : path, NULL, 10);
}

static bool has_suffix(const char *s, const char *suffix) {
  size_t n = strlen(s), k = strlen(suffix);
  return n >= k && strcmp(s + n - k, suffix) == 0;
}

/* Marks the process whose stream this was, when records are missing. */
static void judge_stream(struct merge *m, const char *path, const struct stream_facts *facts) {
  bool cut = m->judge_names && path && (has_suffix(path, AC_RECORDS_CUT_SUFFIX) || !facts->records);
  if (!cut && !facts->torn) return;
  json_t *inc = incomplete_of(process_of(m, facts->records ? facts->pid : pid_of_name(path)));
  if (cut) json_object_set_new(inc, "cut", json_true());
  add_count(inc, "torn_records", facts->torn);
}

/* A stream file: a regular file, never reached through a link. */
static FILE *open_stream(const char *path) {
  int fd = ac_sys_open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0);
  struct stat st;
  FILE *in = fd >= 0 && ac_sys_fstat(fd, &st) == 0 && S_ISREG(st.st_mode) ? fdopen(fd, "r") : NULL;
  if (!in && fd >= 0) ac_sys_close(fd);
  return in;
}

static void read_stream(struct merge *m, const char *path) {
  struct stream_facts facts = {0};
  ac_fd_gate_enter(); /* the descriptor lies in the program's range (fd_gate.h) */
  FILE *in = open_stream(path);
  if (in) {
    read_lines(m, in, &facts);
    fclose(in);
  }
  ac_fd_gate_leave();
  judge_stream(m, path, &facts);
}

/* Records the shim still holds in memory: lines, as in a stream. */
static void read_text(struct merge *m, const char *text, size_t len) {
  struct stream_facts facts = {0};
  FILE *in = len ? fmemopen((void *)text, len, "r") : NULL;
  if (!in) return;
  read_lines(m, in, &facts);
  fclose(in);
  judge_stream(m, NULL, &facts);
}

/* Whether a process ran with an option switched off. */
static bool option_off(const json_t *process, const char *name) {
  return strcmp(ac_json_str(json_object_get(process, "options"), name), "off") == 0;
}

static void count(struct merge *m, json_t *findings) {
  size_t i;
  json_t *f;
  json_array_foreach(findings, i, f)
      ac_summary_count(m->sum, f, json_is_object(json_object_get(f, "suppressed")));
  const char *pid;
  json_t *p;
  json_object_foreach(m->processes, pid, p) {
    m->sum->processes++;
    if (json_is_true(json_object_get(p, "cuda_initialized"))) m->sum->cuda_processes++;
    if (json_object_get(p, "incomplete")) m->sum->incomplete_processes++;
    ac_summary_note_options(m->sum, option_off(p, "guard_pages"), option_off(p, "guard"));
  }
}

/* A finding's place: its first process (in the order processes appeared),
 * then the model's tick - the order the model saw them in, not the order a
 * reporter thread happened to write them (a CPU access is reported late). */
struct place {
  size_t process, index;
  json_int_t tick;
  json_t *finding;
};

static int by_place(const void *x, const void *y) {
  const struct place *a = x, *b = y;
  if (a->process != b->process) return a->process < b->process ? -1 : 1;
  if (a->tick != b->tick) return a->tick < b->tick ? -1 : 1;
  return a->index < b->index ? -1 : a->index > b->index;
}

static size_t process_place(const struct merge *m, json_int_t pid) {
  size_t i = 0;
  const char *key;
  json_t *p;
  json_object_foreach(m->processes, key, p) {
    if (json_integer_value(json_object_get(p, "pid")) == pid) return i;
    i++;
  }
  return i;
}

/* The findings in the model's order. */
static json_t *ordered_findings(struct merge *m) {
  size_t n = json_array_size(m->order), i;
  struct place *places = calloc(n ? n : 1, sizeof *places);
  json_t *findings = json_array(), *key;
  if (!places) return findings;
  json_array_foreach(m->order, i, key) {
    json_t *f = json_object_get(m->findings, json_string_value(key));
    places[i] = (struct place){process_place(m, json_integer_value(json_object_get(f, "pid"))), i,
                               json_integer_value(json_object_get(f, "tick")), f};
  }
  qsort(places, n, sizeof *places, by_place);
  for (i = 0; i < n; i++) {
    note_threads(places[i].finding);
    json_array_append(findings, places[i].finding);
  }
  free(places);
  return findings;
}

/* When the report was made, as UTC ISO 8601. */
static json_t *now_utc(void) {
  char text[32];
  time_t t = time(NULL);
  struct tm tm;
  if (!gmtime_r(&t, &tm) || !strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &tm))
    return json_null();
  return json_string(text);
}

/* The report from what the merge took in. */
static json_t *assemble(struct merge *m) {
  json_t *findings = ordered_findings(m), *processes = json_array();
  const char *pid;
  json_t *p;
  json_object_foreach(m->processes, pid, p) json_array_append(processes, p);
  count(m, findings);
  const struct ac_summary *sum = m->sum;
  json_t *first = json_array_size(processes) ? json_array_get(processes, 0) : json_null();
  json_t *report = json_pack(
      "{s:i, s:{s:s, s:s}, s:o, s:O, s:o, s:{s:i, s:i, s:i, s:I, s:i, s:i, s:i, s:i, s:i, s:i, "
      "s:o}, s:o}",
      "schema_version", AC_SCHEMA_VERSION, "tool", "name", AC_TOOL_NAME, "version", AC_TOOL_VERSION,
      "created", now_utc(), "process", first, "processes", processes, "summary", "errors",
      sum->errors, "warnings", sum->warnings, "notes", sum->notes, "occurrences",
      (json_int_t)sum->occurrences, "suppressed", sum->suppressed, "processes", sum->processes,
      "cuda_processes", sum->cuda_processes, "dropped_records", sum->dropped_records,
      "output_errors", sum->output_errors, "incomplete_processes", sum->incomplete_processes,
      "not_checked", ac_summary_not_checked(sum), "findings", findings);
  json_decref(m->processes);
  json_decref(m->findings);
  json_decref(m->order);
  return report;
}

static json_t *merge(struct merge *m, const char *const *paths, int n, const char *text,
                     size_t len) {
  memset(m->sum, 0, sizeof *m->sum);
  for (int i = 0; i < n; i++)
    read_stream(m, paths[i]);
  read_text(m, text, len);
  return assemble(m);
}

json_t *ac_merge_streams(const char *const *paths, int n, struct ac_summary *sum) {
  struct merge m = {json_object(), json_object(), json_array(), sum, true};
  return merge(&m, paths, n, NULL, 0);
}

json_t *ac_merge_own_stream(const char *path, const char *unwritten, size_t len,
                            struct ac_summary *sum) {
  struct merge m = {json_object(), json_object(), json_array(), sum, false};
  return merge(&m, path ? &path : NULL, path ? 1 : 0, unwritten, len);
}

/* A finding of a saved report: one more occurrence of a finding already
 * taken (its count added, its processes listed), or a new one. One without
 * a key (it cannot be matched) stays apart. */
static void take_saved_finding(struct merge *m, const json_t *f, size_t report, size_t index) {
  char own_key[64];
  const char *key = json_string_value(json_object_get(f, "key"));
  if (!key) snprintf(own_key, sizeof own_key, "unkeyed.%zu.%zu", report, index), key = own_key;
  json_t *have = json_object_get(m->findings, key);
  if (!have) {
    json_object_set_new(m->findings, key, json_deep_copy(f));
    json_array_append_new(m->order, json_string(key));
    return;
  }
  json_int_t count = json_integer_value(json_object_get(have, "count")) +
                     json_integer_value(json_object_get(f, "count"));
  json_object_set_new(have, "count", json_integer(count));
  /* Saved reports are other processes', each finding made on one thread
   * or on "threads": their threads are added, as their counts are. */
  json_int_t threads = json_integer_value(json_object_get(have, "threads"));
  json_int_t more = json_integer_value(json_object_get(f, "threads"));
  json_object_set_new(have, "threads", json_integer((threads ? threads : 1) + (more ? more : 1)));
  if (!json_is_array(json_object_get(have, "processes")))
    json_object_set_new(have, "processes", json_array());
  size_t i;
  const json_t *pid;
  json_array_foreach(json_object_get(f, "processes"), i, pid)
      note_process(have, json_integer_value(pid));
}

/* A saved report's processes, kept apart by host and pid (ranks on several
 * machines may share a pid); the same process met twice is one. */
static void take_saved_processes(struct merge *m, const json_t *report) {
  size_t i;
  const json_t *p;
  json_array_foreach(json_object_get(report, "processes"), i, p) {
    char key[320];
    snprintf(key, sizeof key, "%s/%lld", ac_json_str(p, "host"),
             (long long)json_integer_value(json_object_get(p, "pid")));
    if (!json_object_get(m->processes, key))
      json_object_set_new(m->processes, key, json_deep_copy(p));
  }
}

json_t *ac_merge_reports(json_t *const *reports, size_t n, struct ac_summary *sum) {
  struct merge m = {json_object(), json_object(), json_array(), sum, false};
  memset(sum, 0, sizeof *sum);
  for (size_t r = 0; r < n; r++) {
    const json_t *saved = json_object_get(reports[r], "summary");
    sum->dropped_records += (int)json_integer_value(json_object_get(saved, "dropped_records"));
    sum->output_errors += (int)json_integer_value(json_object_get(saved, "output_errors"));
    take_saved_processes(&m, reports[r]);
    size_t i;
    const json_t *f;
    json_array_foreach(json_object_get(reports[r], "findings"), i, f)
        take_saved_finding(&m, f, r, i);
  }
  return assemble(&m);
}

/* One report made from the merged one (SARIF, HTML): text, or NULL when it
 * could not be made; freed here. The first failure goes to err. */
static bool write_made(char *text, const char *pattern, const struct ac_options *o, int pid,
                       bool ok, char *err, size_t errlen) {
  char path[4096], why[1024];
  bool written = text && ac_expand_path(pattern, pid, path, sizeof path, why, sizeof why) &&
                 ac_write_text_file(text, path, o->overwrite, why, sizeof why);
  if (!written && ok) snprintf(err, errlen, "%s", text ? why : "out of memory");
  free(text);
  return ok && written;
}

/* The SARIF log as text, as ac_write_report_file writes JSON. */
static char *sarif_text(const json_t *report) {
  json_t *sarif = ac_sarif_from_report(report);
  char *text = sarif ? json_dumps(sarif, JSON_INDENT(2) | JSON_PRESERVE_ORDER) : NULL;
  json_decref(sarif);
  char *line = text ? realloc(text, strlen(text) + 2) : NULL;
  if (!line) {
    free(text);
    return NULL;
  }
  strcat(line, "\n");
  return line;
}

bool ac_write_final_reports(json_t *report, const struct ac_options *o, int pid, char *err,
                            size_t errlen) {
  char path[4096];
  bool ok = true;
  if (o->json && *o->json) {
    ok = ac_expand_path(o->json, pid, path, sizeof path, err, errlen) &&
         ac_write_report_file(report, path, o->overwrite, err, errlen);
  }
  if (o->sarif && *o->sarif) ok = write_made(sarif_text(report), o->sarif, o, pid, ok, err, errlen);
  if (o->html && *o->html)
    ok = write_made(ac_html_from_report(report), o->html, o, pid, ok, err, errlen);
  return ok;
}
