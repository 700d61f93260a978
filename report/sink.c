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
 * at exit the report says what never reached it.
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <uthash.h>
#include <unistd.h>

#include "report.h"
#include "sys.h"

struct seen {
  uint64_t key;      /* rule, problem and return addresses: this process's */
  char portable[17]; /* rule, problem and (module, offset) of each frame: the same in every
                        process */
  bool counted;      /* not suppressed: its occurrences count in the summary */
  UT_hash_handle hh;
};

static const struct ac_options *opts;
static struct ac_options own_opts; /* the options, with absolute report paths */
static char abs_json[PATH_MAX], abs_sarif[PATH_MAX], abs_html[PATH_MAX], abs_log[PATH_MAX],
    abs_session[PATH_MAX];
/* Under plain LD_PRELOAD only a process that used CUDA or had findings
 * writes a final report: a shell or an `ls` of the run would otherwise claim
 * the report's name with an empty report first. */
static bool cuda_seen, finding_streamed;
static struct seen *seen;
static struct ac_records stream;
static bool have_stream;    /* the stream has a place */
static bool stream_started; /* and holds this process's record */
static bool wait_said, drop_said, caught_up_said, late_said;
static bool finish_registered, finished;
/* Error findings this process made that no suppression matched: under plain
 * LD_PRELOAD they decide ATTACHCHECK_ERROR_EXITCODE's status at exit. */
static unsigned long errors_found;
static struct ac_suppressions suppressions;
/* When the process loaded the shim (a forked child keeps its parent's), on
 * the coarse clock the kernel stamps files with. */
static struct timespec loaded_at;

/* The sink lock (base/locks.inc); whether this thread holds it tells a
 * message said from inside the sink. */
static void lock_sink(void) {
  ac_lock(AC_LOCK_sink);
}

static void unlock_sink(void) {
  ac_unlock(AC_LOCK_sink);
}

/* Where the text goes: the log file (named again in a forked child, whose %p
 * differs) or stderr as the program started with it. */
static struct ac_output log_out = {.fd = -1}, err_out = {.fd = -1};
static bool have_log, log_failure_told;
static unsigned long printed_count;
/* What every line starts with: the process's id in it, so the blocks of
 * several processes (forked workers, ranks) can be told apart. */
static char prefix[48] = AC_PREFIX;
/* This process's findings, for its summary under plain LD_PRELOAD. */
static struct ac_summary tally;

const char *ac_report_prefix(void) {
  return prefix;
}

static void name_prefix(void) {
  snprintf(prefix, sizeof prefix, "==" AC_TOOL_NAME ":%d== ", (int)getpid());
}

/* A line on stderr itself, whatever the options: for what cannot go to the
 * log (the log's own failure, a fatal start-up failure). */
static void say_on_stderr(const char *text) {
  char line[1200];
  int n = snprintf(line, sizeof line, "%s%s\n", prefix, text);
  if (n > (int)sizeof line - 1) n = (int)sizeof line - 1;
  if (n > 0) ac_output_write(&err_out, line, (size_t)n);
}

static void append(json_t *record);

/* Text that could not go where it was asked to: said on stderr, and
 * recorded in the stream so the CLI's status says it too. */
static void output_lost(const char *text) {
  say_on_stderr(text);
  append(json_pack("{s:s, s:i, s:s, s:s}", "type", "output_error", "pid", (int)getpid(), "what",
                   "log", "message", text));
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

static void write_text(const char *text, size_t len) {
  int saved = errno;
  if (have_log) {
    if (!ac_output_write(&log_out, text, len)) log_failed(errno);
  } else if (!opts || opts->print_stderr) {
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
  if (!opts || !opts->log_file || !*opts->log_file) return;
  if (ac_expand_path(opts->log_file, (int)getpid(), path, sizeof path, err, sizeof err) &&
      ac_output_open(&log_out, path, err, sizeof err)) {
    have_log = true;
    return;
  }
  char text[sizeof err + 100];
  snprintf(text, sizeof text, "error: cannot open the log file: %s; %s", err,
           opts->print_stderr ? "findings go to stderr" : "findings are only in the reports");
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
  ac_records_forget(&stream); /* a forked child's: the parent's */
  have_stream = ac_jsonl_place(opts, (int)getpid(), &place, err, sizeof err);
  if (!have_stream && err[0])
    snprintf(text, sizeof text, "error: cannot name the report: %s; findings are only printed",
             err);
  have_stream = have_stream && place_usable(&place, text, sizeof text);
  if (have_stream) ac_records_init(&stream, &place, (int)getpid());
  if (text[0]) say_on_stderr(text);
}

/* Under the CLI the stream starts as the process loads (the CLI counts the
 * processes the shim reached). Under plain LD_PRELOAD it starts with the
 * first record worth keeping: a process that never gets one (a shell that
 * ends with _exit, skipping the exit handlers) leaves no file behind. */
static void start_stream(void) {
  stream_started = true;
  append(ac_jsonl_process_record(opts));
}

static const char *stream_name(void) {
  return stream.created ? stream.path : stream.place.where;
}

/* Whether this process writes its own report at exit (plain LD_PRELOAD). */
static bool standalone(void) {
  return opts && !(opts->session_dir && *opts->session_dir) &&
         ((opts->json && *opts->json) || (opts->sarif && *opts->sarif) ||
          (opts->html && *opts->html));
}

/* What the stream did with a record, each said once: that records wait, that
 * some were dropped, that those that waited were written after all; and,
 * after the report was written, that a record is not in it. */
static void say_append(enum ac_records_result result) {
  char text[sizeof stream.path + 300];
  if (result == AC_RECORDS_WRITTEN && wait_said && !caught_up_said && !stream.lost) {
    caught_up_said = true;
    say_on_stderr("the records that waited were written to the record stream after all: none "
                  "is lost");
  }
  if (result != AC_RECORDS_WRITTEN && !wait_said) {
    wait_said = true;
    snprintf(text, sizeof text,
             "error: cannot write the record stream %s: %s; its records wait in memory until it "
             "can be written (a crash now would lose them)",
             stream_name(), strerror(stream.error));
    say_on_stderr(text);
  }
  if (result == AC_RECORDS_LOST && !drop_said) {
    drop_said = true;
    say_on_stderr("error: too many records wait for the record stream: the next ones are "
                  "dropped, counted, and the report will say so");
  }
  if (finished && standalone() && !late_said) {
    late_said = true;
    snprintf(text, sizeof text,
             "error: a record came after the report was written (from an exit handler that ran "
             "after attachcheck's): it is in %s, not in the report",
             stream_name());
    say_on_stderr(text);
  }
}

static void append(json_t *record) {
  if (!record) return;
  if (have_stream && !stream_started) start_stream();
  size_t len;
  char *line = have_stream ? ac_jsonl_line(record, &len) : NULL;
  if (line) say_append(ac_records_append(&stream, line, len));
  free(line);
  json_decref(record);
}

void ac_report_message(enum ac_message_level level, const char *text) {
  char line[1200];
  int n = snprintf(line, sizeof line, "%s%s\n", prefix, text);
  if (n > (int)sizeof line - 1) n = (int)sizeof line - 1;
  if (n <= 0) return;
  bool locked = !ac_lock_held(AC_LOCK_sink);
  if (locked) lock_sink();
  if (level == AC_MESSAGE_FATAL) {
    if (have_log) write_text(line, (size_t)n);
    ac_output_write(&err_out, line, (size_t)n);
  } else {
    write_text(line, (size_t)n);
  }
  if (locked) unlock_sink();
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
  ac_text_write_finding(mem, record, prefix);
  char line[700];
  if (opts && opts->gen_suppressions && ac_suppression_suggest(record, line, sizeof line))
    fprintf(mem, "%ssuppress with: %s\n%s\n", prefix, line, prefix);
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
                     "%sprint limit of %ld findings reached: the rest are only in the reports\n",
                     prefix, opts->print_limit);
    write_text(line, (size_t)n);
  }
  return false;
}

/* Whether a finding's text is printed at all: to the log when there is one,
 * else on stderr unless --print-stderr off. */
static bool text_wanted(void) {
  return have_log || !opts || opts->print_stderr;
}

/* The outputs, the stream and its first record; in a forked child again (its
 * own stream, its own %p log). */
static void start_outputs(void) {
  cuda_seen = finding_streamed = stream_started = false;
  wait_said = drop_said = caught_up_said = late_said = finished = false;
  open_stream();
  if (have_stream && opts->session_dir && *opts->session_dir) start_stream();
  open_text_output();
  load_suppressions(opts);
}

void ac_report_announce(const struct ac_options *o) {
  clock_gettime(CLOCK_REALTIME_COARSE, &loaded_at);
  lock_sink();
  name_prefix();
  ac_output_adopt_stderr(&err_out);
  opts = with_absolute_paths(o);
  ac_symbolize_set_strip_prefix(opts->strip_paths);
  start_outputs();
  unlock_sink();
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
  errors_found = 0;
  if (!opts) return;
  lock_sink();
  name_prefix();
  memset(&tally, 0, sizeof tally);
  start_outputs();
  unlock_sink();
}

void ac_report_cuda_init(int result, const struct ac_cuda_facts *facts) {
  json_t *devices = json_array();
  for (int i = 0; i < facts->device_count; i++)
    json_array_append_new(devices, ac_json_text(facts->device_names[i]));
  char version[32] = "";
  if (facts->driver_version)
    snprintf(version, sizeof version, "%d.%d", facts->driver_version / 1000,
             facts->driver_version % 1000 / 10);
  lock_sink();
  cuda_seen = true;
  append(json_pack("{s:s, s:i, s:i, s:s, s:o}", "type", "cuda_init", "pid", (int)getpid(), "result",
                   result, "driver_version", version, "devices", devices));
  unlock_sink();
}

bool ac_report_finding(const struct ac_finding *f) {
  uint64_t key = ac_finding_key(f);
  lock_sink();
  finding_streamed = true;
  struct seen *s;
  HASH_FIND(hh, seen, &key, sizeof key, s);
  if (s) { /* counted, not written again */
    tally.occurrences += s->counted;
    append(
        json_pack("{s:s, s:i, s:s}", "type", "repeat", "pid", (int)getpid(), "key", s->portable));
    bool error = s->counted && ac_rule_info(f->rule)->severity == AC_SEV_ERROR;
    unlock_sink();
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
  ac_summary_count(&tally, record, suppressed);
  s = malloc(sizeof *s);
  if (s) {
    s->key = key;
    s->counted = !suppressed;
    memcpy(s->portable, portable, sizeof portable);
    HASH_ADD(hh, seen, key, sizeof s->key, s);
  }
  bool error = !suppressed && ac_rule_info(f->rule)->severity == AC_SEV_ERROR;
  if (error) errors_found++;
  if (text_wanted() && !suppressed && within_print_limit()) print_finding(record);
  append(record);
  unlock_sink();
  return error;
}

/* Under plain LD_PRELOAD, with the report written: what did not reach it,
 * as the report says it. */
static void say_incomplete(const json_t *report) {
  const json_t *inc = json_object_get(json_object_get(report, "process"), "incomplete");
  if (!inc) return;
  json_int_t lost = json_integer_value(json_object_get(inc, "lost_records"));
  char text[300];
  snprintf(text, sizeof text,
           "error: the report is incomplete: %lld record%s of this process could not be written "
           "(%s); findings may be missing from it",
           (long long)lost, lost == 1 ? "" : "s", ac_json_str(inc, "why"));
  say_on_stderr(text);
}

/* Under plain LD_PRELOAD several processes of a run may name one report.
 * Replacing one that another of them wrote since this process started would
 * lose its findings in silence, so such a file is not replaced (a report of
 * an earlier run is): its path goes to taken. */
static bool report_taken_by_run(char *taken, size_t len) {
  const char *patterns[] = {opts->json, opts->sarif, opts->html};
  char err[256];
  struct stat st;
  for (size_t i = 0; i < sizeof patterns / sizeof *patterns; i++) {
    if (!patterns[i] || !*patterns[i] ||
        !ac_expand_path(patterns[i], (int)getpid(), taken, len, err, sizeof err) ||
        ac_sys_lstat(taken, &st) != 0 || !S_ISREG(st.st_mode))
      continue;
    if (st.st_mtim.tv_sec > loaded_at.tv_sec ||
        (st.st_mtim.tv_sec == loaded_at.tv_sec && st.st_mtim.tv_nsec >= loaded_at.tv_nsec))
      return true;
  }
  return false;
}

/* Under plain LD_PRELOAD: the final report of this process, from its stream
 * and the records that still wait in memory.
 * A process that neither used CUDA nor had a finding (the shell of a wrapper
 * script, an `ls` it runs) writes none: it would take the report's name with
 * an empty report before the program that uses CUDA could write its own. */
static void write_standalone_report(void) {
  if (!cuda_seen && !finding_streamed) {
    ac_records_remove(&stream);
    return;
  }
  if (ac_records_flush(&stream)) say_append(AC_RECORDS_WRITTEN);
  size_t len = 0;
  char *unwritten = ac_records_unwritten(&stream, &len);
  struct ac_summary sum;
  char err[PATH_MAX + 200], text[sizeof err + sizeof stream.path + 200];
  json_t *report =
      ac_merge_own_stream(stream.created ? stream.out.path : NULL, unwritten, len, &sum);
  free(unwritten);
  char taken[PATH_MAX];
  bool free_to_write = !opts->overwrite || !report_taken_by_run(taken, sizeof taken);
  if (!free_to_write)
    snprintf(err, sizeof err,
             "%s was written by another process of this run (%%p in the name gives each "
             "process its own report)",
             taken);
  if (report && free_to_write &&
      ac_write_final_reports(report, opts, (int)getpid(), err, sizeof err)) {
    ac_records_remove(&stream); /* everything it held is in the reports now */
    say_incomplete(report);
  } else {
    snprintf(text, sizeof text, "error: cannot write the report: %s (the records are in %s%s)",
             report ? err : "out of memory", stream_name(),
             stream.waiting ? "; those that waited in memory are lost" : "");
    say_on_stderr(text);
  }
  json_decref(report);
}

/* Under plain LD_PRELOAD, this process's summary (the CLI prints the run's):
 * only from a process that used CUDA or had a finding, as its report. */
static void print_own_summary(void) {
  if (!opts || (opts->session_dir && *opts->session_dir) || !(cuda_seen || finding_streamed))
    return;
  char *text = NULL;
  size_t len = 0;
  FILE *mem = open_memstream(&text, &len);
  if (!mem) return;
  ac_summary_note_options(&tally, opts->guard_pages == AC_GUARD_OFF, !opts->guard);
  ac_summary_write(mem, &tally, prefix, "in this process");
  fclose(mem);
  write_text(text, len);
  free(text);
}

/* Under the CLI: records that never reached the stream (the CLI reads the
 * stream's cut name and fails the run; this line says why). */
static void say_unwritten(void) {
  char text[sizeof stream.path + 300];
  if (ac_records_flush(&stream)) {
    say_append(AC_RECORDS_WRITTEN);
    return;
  }
  snprintf(text, sizeof text,
           "error: %lu record%s of this process could not be written to %s (%s): findings are "
           "missing from the report",
           stream.waiting + stream.lost, stream.waiting + stream.lost == 1 ? "" : "s",
           stream_name(), strerror(stream.error));
  say_on_stderr(text);
}

void ac_report_halt(const char *rule) {
  lock_sink();
  if (opts && !finished) {
    print_own_summary();
    if (stream_started)
      append(json_pack("{s:s, s:i, s:s}", "type", "halt", "pid", (int)getpid(), "rule", rule));
    if (standalone())
      write_standalone_report();
    else if (stream_started)
      say_unwritten();
    finished = true;
  }
  unlock_sink();
}

/* The exit record and, without the CLI, the final report. */
static void finish_now(void) {
  if (!opts || finished) return;
  print_own_summary(); /* after every destructor: its findings counted too */
  if (!have_stream) {
    finished = true;
    return;
  }
  if (stream_started) append(json_pack("{s:s, s:i}", "type", "exit", "pid", (int)getpid()));
  if (standalone())
    write_standalone_report();
  else if (stream_started)
    say_unwritten();
  finished = true;
}

/* ATTACHCHECK_ERROR_EXITCODE under plain LD_PRELOAD (under the CLI the CLI
 * decides the run's status): a process with error findings that no
 * suppression matched, exiting with status 0, exits with N instead. A
 * program exiting with another status keeps it: its own failure is the one
 * to see. */
static bool error_exit_applies(int status) {
  return opts && opts->error_exitcode && !(opts->session_dir && *opts->session_dir) &&
         errors_found && status == 0;
}

/* The last exit handler (status: what the process is exiting with, -1 when
 * not known). To change the status it flushes the program's stdio buffers,
 * as exit() would after the handlers, and leaves with _exit - as ASan's
 * exitcode does. */
static void finish_at_last(int status, void *unused) {
  (void)unused;
  lock_sink();
  finish_now();
  bool fail = error_exit_applies(status);
  unlock_sink();
  if (!fail) return;
  fflush(NULL);
  _exit((int)opts->error_exitcode);
}

/* Called from the shim's destructor. Libraries whose destructors run after
 * the shim's may still make findings, so the exit record and the report wait
 * for them: in an exit handler registered now and owned by no library
 * (on_exit has no dso handle), which glibc runs after every destructor - the
 * last handler, and the one told the exit status. Where it cannot be
 * registered (exit handlers already done) they are written now, the status
 * unknown and left alone. */
void ac_report_finish(void) {
  lock_sink();
  bool later = finish_registered || on_exit(finish_at_last, NULL) == 0;
  finish_registered = true;
  unlock_sink();
  if (!later) finish_at_last(-1, NULL);
}
