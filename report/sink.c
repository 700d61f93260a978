/* sink.c - where the shim's findings go.
 *
 * A finding is identified by its rule and its call stack: the first time, it
 * is printed on stderr and streamed in full; after that only a "repeat"
 * record is streamed, so the final report can count occurrences without
 * repeating the stack. One lock serialises the outputs; it is never held
 * while the program's driver call runs.
 */
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uthash.h>
#include <unistd.h>

#include "report.h"

struct seen {
  uint64_t key;      /* rule and return addresses: this process's */
  char portable[17]; /* rule and (module, offset) of each frame: the same in every process */
  UT_hash_handle hh;
};

static pthread_mutex_t sink_lock = PTHREAD_MUTEX_INITIALIZER;
static const struct ac_options *opts;
static struct seen *seen;
static char stream_path[4096];
static bool have_stream;
static int stream_pid;
static struct ac_suppressions suppressions;

static uint64_t finding_key(const struct ac_finding *f) {
  uint64_t h = 1469598103934665603ull; /* FNV-1a */
  const unsigned char *p = (const unsigned char *)&f->rule;
  for (size_t i = 0; i < sizeof f->rule; i++)
    h = (h ^ p[i]) * 1099511628211ull;
  p = (const unsigned char *)f->stack.pc;
  for (size_t i = 0; i < (size_t)f->stack.depth * sizeof f->stack.pc[0]; i++)
    h = (h ^ p[i]) * 1099511628211ull;
  return h;
}

/* The key the reports use: the same finding from the same code in another
 * process - a fork, or another rank loaded at other addresses - has the same
 * key, so the merge makes one finding of them. */
static void portable_key(const json_t *record, char out[17]) {
  uint64_t h = ac_hash_text(AC_HASH_START, ac_json_str(record, "rule"));
  size_t i;
  const json_t *frame;
  json_array_foreach(json_object_get(record, "stack"), i, frame) {
    h = ac_hash_text(ac_hash_text(ac_hash_text(h, "|"), ac_json_str(frame, "module")), "+");
    h = ac_hash_text(h, ac_json_str(frame, "offset"));
  }
  snprintf(out, 17, "%016" PRIx64, h);
}

static void open_stream(void) {
  char err[512];
  stream_pid = (int)getpid();
  have_stream = ac_jsonl_path(opts, stream_pid, stream_path, sizeof stream_path, err, sizeof err);
  if (!have_stream && err[0])
    fprintf(stderr,
            "==attachcheck== error: cannot name the report: %s; findings go to stderr only\n", err);
}

/* Where the text of findings goes: stderr, or --log-file (named again in a
 * forked child, whose %p differs). */
static int text_fd = STDERR_FILENO;
static unsigned long printed_count;

static void open_text_output(void) {
  char path[4096], err[600];
  if (text_fd != STDERR_FILENO) close(text_fd);
  text_fd = STDERR_FILENO;
  printed_count = 0;
  if (!opts || !opts->log_file || !*opts->log_file) return;
  int fd = -1;
  if (ac_expand_path(opts->log_file, (int)getpid(), path, sizeof path, err, sizeof err))
    fd = ac_open_log_file(path, err, sizeof err);
  if (fd >= 0)
    text_fd = fd;
  else
    fprintf(stderr, "==attachcheck== error: cannot open the log file: %s; findings go to stderr\n",
            err);
}

static void write_text(const char *text, size_t len) {
  while (len > 0) {
    ssize_t n = write(text_fd, text, len);
    if (n <= 0) return; /* nowhere else to tell */
    text += n, len -= (size_t)n;
  }
}

static void append(json_t *record) {
  if (!record) return;
  if (have_stream && !ac_jsonl_append(stream_path, record)) {
    fprintf(stderr, "==attachcheck== cannot write %s; findings go to stderr only\n", stream_path);
    have_stream = false;
  }
  json_decref(record);
}

/* Once per process (a forked child keeps its parent's). A bad file is said
 * once and none of it is used: everything stays reported. */
static void load_suppressions(const struct ac_options *o) {
  static bool loaded;
  char err[512];
  if (loaded) return;
  loaded = true;
  if (!ac_suppressions_load(&suppressions, o->suppressions, err, sizeof err)) {
    ac_suppressions_free(&suppressions);
    fprintf(stderr, "==attachcheck== error: %s; no finding is suppressed\n", err);
  }
}

/* Marks a suppressed record; returns whether it was. */
static bool apply_suppressions(json_t *record, const struct ac_finding *f) {
  const char *rule = ac_rule_info(f->rule)->id;
  const struct ac_suppression *s =
      ac_suppressions_match(&suppressions, rule, json_object_get(record, "stack"));
  if (!s) return false;
  char line[600];
  snprintf(line, sizeof line, "%s:%s", s->rule, s->pattern);
  json_object_set_new(record, "suppressed", json_pack("{s:s, s:s}", "by", s->source, "line", line));
  return true;
}

static void print_finding(const struct ac_finding *f, const json_t *record) {
  char *text = NULL;
  size_t len = 0;
  FILE *mem = open_memstream(&text, &len);
  if (!mem) return;
  ac_text_write_finding(mem, f);
  char line[700];
  if (opts && opts->gen_suppressions && record &&
      ac_suppression_suggest(ac_rule_info(f->rule)->id, json_object_get(record, "stack"), line,
                             sizeof line))
    fprintf(mem, "==attachcheck== suppress with: %s\n==attachcheck== \n", line);
  fclose(mem);
  write_text(text, len);
  free(text);
}

/* Under --print-limit, whether this finding may still be printed. */
static bool within_print_limit(void) {
  if (!opts || !opts->print_limit || printed_count < (unsigned long)opts->print_limit) {
    printed_count++;
    return true;
  }
  if (printed_count++ == (unsigned long)opts->print_limit) {
    char line[200];
    int n = snprintf(line, sizeof line,
                     "==attachcheck== print limit of %ld findings reached: the rest are only in "
                     "the reports\n",
                     opts->print_limit);
    write_text(line, (size_t)n);
  }
  return false;
}

void ac_report_announce(const struct ac_options *o) {
  pthread_mutex_lock(&sink_lock);
  opts = o;
  ac_symbolize_set_strip_prefix(o->strip_paths);
  load_suppressions(o);
  open_stream();
  open_text_output();
  if (have_stream) append(ac_jsonl_process_record(o));
  pthread_mutex_unlock(&sink_lock);
}

void ac_report_fork_prepare(void) {
  pthread_mutex_lock(&sink_lock);
}
void ac_report_fork_parent(void) {
  pthread_mutex_unlock(&sink_lock);
}

void ac_report_fork_child(void) {
  pthread_mutex_unlock(&sink_lock);
  struct seen *s, *tmp;
  HASH_ITER(hh, seen, s, tmp) {
    HASH_DEL(seen, s);
    free(s);
  }
  if (opts) ac_report_announce(opts);
}

void ac_report_cuda_init(int result, const struct ac_cuda_facts *facts) {
  json_t *devices = json_array();
  for (int i = 0; i < facts->device_count; i++)
    json_array_append_new(devices, ac_json_text(facts->device_names[i]));
  char version[32] = "";
  if (facts->driver_version)
    snprintf(version, sizeof version, "%d.%d", facts->driver_version / 1000,
             facts->driver_version % 1000 / 10);
  pthread_mutex_lock(&sink_lock);
  append(json_pack("{s:s, s:i, s:i, s:s, s:o}", "type", "cuda_init", "pid", (int)getpid(), "result",
                   result, "driver_version", version, "devices", devices));
  pthread_mutex_unlock(&sink_lock);
}

void ac_report_finding(const struct ac_finding *f) {
  uint64_t key = finding_key(f);
  pthread_mutex_lock(&sink_lock);
  struct seen *s;
  HASH_FIND(hh, seen, &key, sizeof key, s);
  if (s) { /* counted, not written again */
    append(
        json_pack("{s:s, s:i, s:s}", "type", "repeat", "pid", (int)getpid(), "key", s->portable));
    pthread_mutex_unlock(&sink_lock);
    return;
  }
  json_t *record = ac_json_finding(f);
  char portable[17] = "";
  if (record) portable_key(record, portable);
  s = malloc(sizeof *s);
  if (s) {
    s->key = key;
    memcpy(s->portable, portable, sizeof portable);
    HASH_ADD(hh, seen, key, sizeof s->key, s);
  }
  bool suppressed = false;
  if (record) {
    json_object_set_new(record, "key", json_string(portable));
    json_object_set_new(record, "type", json_string("finding"));
    json_object_set_new(record, "pid", json_integer(getpid()));
    suppressed = apply_suppressions(record, f);
  }
  if ((!opts || opts->print_stderr) && !suppressed && within_print_limit())
    print_finding(f, record);
  append(record);
  pthread_mutex_unlock(&sink_lock);
}

void ac_report_finish(void) {
  pthread_mutex_lock(&sink_lock);
  if (!opts || !have_stream) {
    pthread_mutex_unlock(&sink_lock);
    return;
  }
  append(json_pack("{s:s, s:i}", "type", "exit", "pid", (int)getpid()));
  bool standalone = !(opts->session_dir && *opts->session_dir) &&
                    ((opts->json && *opts->json) || (opts->sarif && *opts->sarif));
  if (standalone) {
    const char *paths[1] = {stream_path};
    struct ac_summary sum;
    char err[512];
    json_t *report = ac_merge_streams(paths, 1, &sum);
    if (report && ac_write_final_reports(report, opts, (int)getpid(), err, sizeof err))
      unlink(stream_path); /* everything it held is in the reports now */
    else
      fprintf(stderr, "==attachcheck== cannot write the report: %s (the records are in %s)\n",
              report ? err : "out of memory", stream_path);
    json_decref(report);
  }
  pthread_mutex_unlock(&sink_lock);
}
