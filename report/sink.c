/* sink.c - where the shim's findings go.
 *
 * A finding is identified by its rule and its call stack: the first time, it
 * is printed on stderr and streamed in full; after that only a "repeat"
 * record is streamed, so the final report can count occurrences without
 * repeating the stack. One lock serialises the outputs; it is never held
 * while the program's driver call runs.
 *
 * Every line the shim writes goes out here (ac_report_message too), to one
 * place: the log file when there is one, else stderr unless --print-stderr
 * off - through outputs the program cannot take over (output.c) and raw
 * system calls (sys.h). Report paths are made absolute when the process
 * starts, so a chdir of the program cannot split its reports.
 *
 * A record the stream cannot take waits in memory (stream.c) and is said once;
 * at exit the report says what never reached it. The end of a process - its
 * summary, its last record, its final report - is sink_exit.c's; what the
 * two share is one struct (sink_internal.h).
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <uthash.h>
#include <unistd.h>

#include "report.h"
#include "sink_internal.h"

struct seen {
  uint64_t key;      /* rule, problem and return addresses: this process's */
  char portable[17]; /* rule, problem and (module, offset) of each frame: the same in every
                        process */
  bool counted;      /* not suppressed: its occurrences count in the summary */
  UT_hash_handle hh;
};

/* What sink_exit.c shares (sink_internal.h). Lines say the CLI's prefix
 * until the process names itself in ac_report_announce. */
struct ac_sink_state ac_sink = {.prefix = AC_PREFIX};

static struct ac_options own_opts; /* the options, with absolute report paths */
static char abs_json[PATH_MAX], abs_sarif[PATH_MAX], abs_html[PATH_MAX], abs_log[PATH_MAX],
    abs_session[PATH_MAX];
static struct seen *seen;
static bool wait_said, drop_said, caught_up_said, late_said;
static struct ac_suppressions suppressions;

/* Where the text goes: the log file (named again in a forked child, whose %p
 * differs) or stderr as the program started with it. */
static struct ac_output log_out = {.fd = -1}, err_out = {.fd = -1};
static bool have_log, log_failure_told;
static unsigned long printed_count;

const char *ac_report_prefix(void) {
  return ac_sink.prefix;
}

static void name_prefix(void) {
  snprintf(ac_sink.prefix, sizeof ac_sink.prefix, "==" AC_TOOL_NAME ":%d== ", (int)getpid());
}

/* A line on stderr itself, whatever the options: for what cannot go to the
 * log (the log's own failure, a fatal start-up failure). */
void sink_say_on_stderr(const char *text) {
  char line[1200];
  int n = snprintf(line, sizeof line, "%s%s\n", ac_sink.prefix, text);
  if (n > (int)sizeof line - 1) n = (int)sizeof line - 1;
  if (n > 0) ac_output_write(&err_out, line, (size_t)n);
}

/* Text that could not go where it was asked to: said on stderr, and
 * recorded in the stream so the CLI's status says it too. */
static void output_lost(const char *text) {
  sink_say_on_stderr(text);
  sink_append(json_pack("{s:s, s:i, s:s, s:s}", "type", "output_error", "pid", (int)getpid(),
                        "what", "log", "message", text));
}

/* The log cannot be written (a full disk, /dev/full): said once. */
static void log_failed(int error) {
  if (log_failure_told) return;
  log_failure_told = true;
  char text[PATH_MAX + 200];
  snprintf(text, sizeof text,
           "error: cannot write the log file %s: %s; findings are missing from it (the reports "
           "keep them)",
           log_out.path, strerror(error));
  output_lost(text);
}

void sink_write_text(const char *text, size_t len) {
  int saved = errno;
  if (have_log) {
    if (!ac_output_write(&log_out, text, len)) log_failed(errno);
  } else if (!ac_sink.opts || ac_sink.opts->print_stderr) {
    ac_output_write(&err_out, text, len);
  }
  errno = saved;
}

static void open_text_output(void) {
  char path[PATH_MAX], err[PATH_MAX + 100];
  ac_output_close(&log_out);
  have_log = false;
  log_failure_told = false;
  printed_count = 0;
  if (!ac_sink.opts || !ac_sink.opts->log_file || !*ac_sink.opts->log_file) return;
  if (ac_expand_path(ac_sink.opts->log_file, (int)getpid(), path, sizeof path, err, sizeof err) &&
      ac_output_open(&log_out, path, err, sizeof err)) {
    have_log = true;
    return;
  }
  char text[sizeof err + 100];
  snprintf(text, sizeof text, "error: cannot open the log file: %s; %s", err,
           ac_sink.opts->print_stderr ? "findings go to stderr"
                                      : "findings are only in the reports");
  output_lost(text);
}

/* A session folder others could write is not used: their records could get
 * into the report, and they could read these. */
static bool place_usable(const struct ac_records_place *place, char *text, size_t len) {
  char why[600];
  if (place->make_folder || ac_folder_is_private(place->where, why, sizeof why)) return true;
  snprintf(text, len, "error: the session folder is not private: %s; findings are only printed",
           why);
  return false;
}

static void open_stream(void) {
  char err[512], text[1200] = "";
  struct ac_records_place place;
  ac_records_forget(&ac_sink.stream); /* a forked child's: the parent's */
  ac_sink.have_stream = ac_jsonl_place(ac_sink.opts, (int)getpid(), &place, err, sizeof err);
  if (!ac_sink.have_stream && err[0])
    snprintf(text, sizeof text, "error: cannot name the report: %s; findings are only printed",
             err);
  ac_sink.have_stream = ac_sink.have_stream && place_usable(&place, text, sizeof text);
  if (ac_sink.have_stream) ac_records_init(&ac_sink.stream, &place, (int)getpid());
  if (text[0]) sink_say_on_stderr(text);
}

/* Under the CLI the stream starts as the process loads (the CLI counts the
 * processes the shim reached). Under plain LD_PRELOAD it starts with the
 * first record worth keeping: a process that never gets one (a shell that
 * ends with _exit, skipping the exit handlers) leaves no file behind. */
static void start_stream(void) {
  ac_sink.stream_started = true;
  sink_append(ac_jsonl_process_record(ac_sink.opts));
}

const char *sink_stream_name(void) {
  return ac_sink.stream.created ? ac_sink.stream.path : ac_sink.stream.place.where;
}

/* What the stream did with a record, each said once: that records wait, that
 * some were dropped, that those that waited were written after all; and,
 * after the report was written, that a record is not in it. */
void sink_say_append(enum ac_records_result result) {
  char text[sizeof ac_sink.stream.path + 300];
  if (result == AC_RECORDS_WRITTEN && wait_said && !caught_up_said && !ac_sink.stream.lost) {
    caught_up_said = true;
    sink_say_on_stderr("the records that waited were written to the record stream after all: none "
                       "is lost");
  }
  if (result != AC_RECORDS_WRITTEN && !wait_said) {
    wait_said = true;
    snprintf(text, sizeof text,
             "error: cannot write the record stream %s: %s; its records wait in memory until it "
             "can be written (a crash now would lose them)",
             sink_stream_name(), strerror(ac_sink.stream.error));
    sink_say_on_stderr(text);
  }
  if (result == AC_RECORDS_LOST && !drop_said) {
    drop_said = true;
    sink_say_on_stderr("error: too many records wait for the record stream: the next ones are "
                       "dropped, counted, and the report will say so");
  }
  if (ac_sink.finished && sink_standalone() && !late_said) {
    late_said = true;
    snprintf(text, sizeof text,
             "error: a record came after the report was written (from an exit handler that ran "
             "after attachcheck's): it is in %s, not in the report",
             sink_stream_name());
    sink_say_on_stderr(text);
  }
}

void sink_append(json_t *record) {
  if (!record) return;
  if (ac_sink.have_stream && !ac_sink.stream_started) start_stream();
  size_t len;
  char *line = ac_sink.have_stream ? ac_jsonl_line(record, &len) : NULL;
  if (line) sink_say_append(ac_records_append(&ac_sink.stream, line, len));
  free(line);
  json_decref(record);
}

void ac_report_message(enum ac_message_level level, const char *text) {
  char line[1200];
  int n = snprintf(line, sizeof line, "%s%s\n", ac_sink.prefix, text);
  if (n > (int)sizeof line - 1) n = (int)sizeof line - 1;
  if (n <= 0) return;
  bool locked = !ac_lock_held(AC_LOCK_sink);
  if (locked) sink_lock();
  if (level == AC_MESSAGE_FATAL) {
    if (have_log) sink_write_text(line, (size_t)n);
    ac_output_write(&err_out, line, (size_t)n);
  } else {
    sink_write_text(line, (size_t)n);
  }
  if (locked) sink_unlock();
}

/* The options with every report path absolute (against the folder the
 * process started in), for this process and - through the environment -
 * for the programs it runs. */
static const struct ac_options *with_absolute_paths(const struct ac_options *o) {
  static const struct {
    size_t offset;
    char *buf;
    const char *env;
  } paths[] = {
      {offsetof(struct ac_options, json), abs_json, "ATTACHCHECK_JSON"},
      {offsetof(struct ac_options, sarif), abs_sarif, "ATTACHCHECK_SARIF"},
      {offsetof(struct ac_options, html), abs_html, "ATTACHCHECK_HTML"},
      {offsetof(struct ac_options, log_file), abs_log, "ATTACHCHECK_LOG_FILE"},
      {offsetof(struct ac_options, session_dir), abs_session, "ATTACHCHECK_SESSION_DIR"},
  };
  own_opts = *o;
  for (size_t i = 0; i < sizeof paths / sizeof *paths; i++) {
    const char **field = (const char **)((char *)&own_opts + paths[i].offset);
    if (!*field || !**field || !ac_absolute_pattern(*field, paths[i].buf, PATH_MAX) ||
        strcmp(*field, paths[i].buf) == 0)
      continue;
    *field = paths[i].buf;
    const char *env = getenv(paths[i].env);
    if (env && *env && *env != '/') setenv(paths[i].env, paths[i].buf, 1);
  }
  return &own_opts;
}

/* Once per process (a forked child keeps its parent's). A bad file is said
 * once and none of it is used: everything stays reported. */
static void load_suppressions(const struct ac_options *o) {
  static bool loaded;
  char err[512], text[600];
  if (loaded) return;
  loaded = true;
  if (!ac_suppressions_load(&suppressions, o->suppressions, err, sizeof err)) {
    ac_suppressions_free(&suppressions);
    snprintf(text, sizeof text, "error: %s; no finding is suppressed", err);
    ac_report_message(AC_MESSAGE_INFO, text);
  }
}

/* Marks a suppressed record; returns whether it was. */
static bool apply_suppressions(json_t *record) {
  const struct ac_suppression *s = ac_suppressions_match(&suppressions, record);
  if (!s) return false;
  char line[700];
  snprintf(line, sizeof line, "%s%s%s:%s", s->rule, s->problem[0] ? "/" : "", s->problem,
           s->pattern);
  json_object_set_new(record, "suppressed", json_pack("{s:s, s:s}", "by", s->source, "line", line));
  return true;
}

static void print_finding(const json_t *record) {
  char *text = NULL;
  size_t len = 0;
  if (!record) return;
  FILE *mem = open_memstream(&text, &len);
  if (!mem) return;
  ac_text_write_finding(mem, record, ac_sink.prefix);
  char line[700];
  if (ac_sink.opts && ac_sink.opts->gen_suppressions &&
      ac_suppression_suggest(record, line, sizeof line))
    fprintf(mem, "%ssuppress with: %s\n%s\n", ac_sink.prefix, line, ac_sink.prefix);
  fclose(mem);
  sink_write_text(text, len);
  free(text);
}

/* Under --print-limit, whether this finding may still be printed. */
static bool within_print_limit(void) {
  if (!ac_sink.opts || !ac_sink.opts->print_limit ||
      printed_count < (unsigned long)ac_sink.opts->print_limit) {
    printed_count++;
    return true;
  }
  if (printed_count++ == (unsigned long)ac_sink.opts->print_limit) {
    char line[200];
    int n = snprintf(line, sizeof line,
                     "%sprint limit of %ld findings reached: the rest are only in the reports\n",
                     ac_sink.prefix, ac_sink.opts->print_limit);
    sink_write_text(line, (size_t)n);
  }
  return false;
}

/* Whether a finding's text is printed at all: to the log when there is one,
 * else on stderr unless --print-stderr off. */
static bool text_wanted(void) {
  return have_log || !ac_sink.opts || ac_sink.opts->print_stderr;
}

/* The outputs, the stream and its first record; in a forked child again (its
 * own stream, its own %p log). */
static void start_outputs(void) {
  ac_sink.cuda_seen = ac_sink.finding_streamed = ac_sink.stream_started = false;
  wait_said = drop_said = caught_up_said = late_said = ac_sink.finished = false;
  open_stream();
  if (ac_sink.have_stream && ac_sink.opts->session_dir && *ac_sink.opts->session_dir)
    start_stream();
  open_text_output();
  load_suppressions(ac_sink.opts);
}

void ac_report_announce(const struct ac_options *o) {
  clock_gettime(CLOCK_REALTIME_COARSE, &ac_sink.loaded_at);
  sink_lock();
  name_prefix();
  ac_output_adopt_stderr(&err_out);
  ac_sink.opts = with_absolute_paths(o);
  ac_symbolize_set_strip_prefix(ac_sink.opts->strip_paths);
  start_outputs();
  sink_unlock();
}

/* Runs in the child once the lock table made every lock anew: only raw
 * system calls here (sys.h), nothing that could reach the shim's own
 * read/write wrappers. */
void ac_report_fork_child(void) {
  struct seen *s, *tmp;
  HASH_ITER(hh, seen, s, tmp) {
    HASH_DEL(seen, s);
    free(s);
  }
  /* The parent's findings are the parent's: a forked worker that made none
   * leaves with its own status (ATTACHCHECK_ERROR_EXITCODE). */
  ac_sink.errors_found = 0;
  if (!ac_sink.opts) return;
  sink_lock();
  name_prefix();
  memset(&ac_sink.tally, 0, sizeof ac_sink.tally);
  start_outputs();
  sink_unlock();
}

void ac_report_unjudged(unsigned long n, const char *why) {
  char text[400];
  snprintf(text, sizeof text,
           "error: %lu CPU access%s to managed memory went unjudged (%s): findings may be "
           "missing",
           n, n == 1 ? "" : "es", why);
  ac_report_message(AC_MESSAGE_FATAL, text);
  sink_lock();
  sink_append(json_pack("{s:s, s:i, s:I, s:s}", "type", "unjudged", "pid", (int)getpid(),
                        "accesses", (json_int_t)n, "why", why));
  sink_unlock();
}

void ac_report_repair(const char *rule, bool made, unsigned waits, double seconds,
                      const char *why) {
  if (!made) {
    char text[400];
    snprintf(text, sizeof text,
             "warning: a repair%s%s was given up (%s): the program went on "
             "unrepaired%s",
             rule ? " of " : "", rule ? rule : "", why,
             rule ? "" : ", and repair is off for the rest of the process");
    ac_report_message(AC_MESSAGE_INFO, text);
  }
  json_t *r = json_pack("{s:s, s:i, s:b, s:I, s:f}", "type", "repair", "pid", (int)getpid(), "made",
                        made, "waits", (json_int_t)waits, "seconds", seconds);
  if (rule) json_object_set_new(r, "rule", json_string(rule));
  if (why) json_object_set_new(r, "why", json_string(why));
  sink_lock();
  sink_append(r);
  sink_unlock();
}

void ac_report_cuda_init(int result, const struct ac_cuda_facts *facts) {
  json_t *devices = json_array();
  for (int i = 0; i < facts->device_count; i++)
    json_array_append_new(devices, ac_json_text(facts->device_names[i]));
  char version[32] = "";
  if (facts->driver_version)
    snprintf(version, sizeof version, "%d.%d", facts->driver_version / 1000,
             facts->driver_version % 1000 / 10);
  sink_lock();
  ac_sink.cuda_seen = true;
  sink_append(json_pack("{s:s, s:i, s:i, s:s, s:o}", "type", "cuda_init", "pid", (int)getpid(),
                        "result", result, "driver_version", version, "devices", devices));
  sink_unlock();
}

bool ac_report_finding(const struct ac_finding *f) {
  uint64_t key = ac_finding_key(f);
  sink_lock();
  ac_sink.finding_streamed = true;
  struct seen *s;
  HASH_FIND(hh, seen, &key, sizeof key, s);
  if (s) { /* counted, not written again */
    ac_sink.tally.occurrences += s->counted;
    sink_append(json_pack("{s:s, s:i, s:s, s:I}", "type", "repeat", "pid", (int)getpid(), "key",
                          s->portable, "thread", (json_int_t)f->thread));
    bool error = s->counted && ac_rule_info(f->rule)->severity == AC_SEV_ERROR;
    sink_unlock();
    return error;
  }
  json_t *record = ac_json_finding(f);
  char portable[17] = "";
  if (record) ac_finding_portable_key(record, f, portable);
  bool suppressed = false;
  if (record) {
    json_object_set_new(record, "key", json_string(portable));
    json_object_set_new(record, "type", json_string("finding"));
    json_object_set_new(record, "pid", json_integer(getpid()));
    suppressed = apply_suppressions(record);
  }
  ac_summary_count(&ac_sink.tally, record, suppressed);
  s = malloc(sizeof *s);
  if (s) {
    s->key = key;
    s->counted = !suppressed;
    memcpy(s->portable, portable, sizeof portable);
    HASH_ADD(hh, seen, key, sizeof s->key, s);
  }
  bool error = !suppressed && ac_rule_info(f->rule)->severity == AC_SEV_ERROR;
  if (error) ac_sink.errors_found++;
  if (text_wanted() && !suppressed && within_print_limit()) print_finding(record);
  sink_append(record);
  sink_unlock();
  return error;
}
