/* sink_exit.c - the end of a process, as the sink sees it: its summary,
 * its last record (exit, or halt under --on-error halt) and, under plain
 * LD_PRELOAD, its final report and ATTACHCHECK_ERROR_EXITCODE's status.
 *
 * The end waits for every destructor: libraries whose destructors run after
 * the shim's may still make findings, so it is the last exit handler's work
 * (ac_report_finish). A record that comes after it is not in the report, and
 * sink.c says so. The state read here is sink.c's, shared through
 * sink_internal.h.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "report.h"
#include "sink_internal.h"
#include "sys.h"

/* The exit handler is registered once: a forked child inherits it, and
 * this with it. */
static bool finish_registered;

/* Whether this process writes its own report at exit (plain LD_PRELOAD). */
bool sink_standalone(void) {
  const struct ac_options *o = ac_sink.opts;
  return o && !(o->session_dir && *o->session_dir) &&
         ((o->json && *o->json) || (o->sarif && *o->sarif) || (o->html && *o->html));
}

/* Under plain LD_PRELOAD, with the report written: what did not reach it,
 * as the report says it. */
static void say_incomplete(const json_t *report) {
  const json_t *inc = json_object_get(json_object_get(report, "process"), "incomplete");
  if (!inc) return;
  json_int_t lost = json_integer_value(json_object_get(inc, "lost_records"));
  json_int_t unjudged = json_integer_value(json_object_get(inc, "unjudged_accesses"));
  char text[300];
  if (json_is_true(json_object_get(inc, "cut"))) {
    snprintf(text, sizeof text,
             "error: the report is incomplete: %lld record%s of this process could not be "
             "written (%s); findings may be missing from it",
             (long long)lost, lost == 1 ? "" : "s", ac_json_str(inc, "why"));
    sink_say_on_stderr(text);
  }
  if (unjudged) {
    snprintf(text, sizeof text,
             "error: the report is incomplete: the page guard let %lld CPU access%s of this "
             "process through unjudged; findings may be missing from it",
             (long long)unjudged, unjudged == 1 ? "" : "es");
    sink_say_on_stderr(text);
  }
}

/* Under plain LD_PRELOAD several processes of a run may name one report.
 * Replacing one that another of them wrote since this process started would
 * lose its findings in silence, so such a file is not replaced (a report of
 * an earlier run is): its path goes to taken. */
static bool report_taken_by_run(char *taken, size_t len) {
  const struct ac_options *o = ac_sink.opts;
  const struct timespec *at = &ac_sink.loaded_at;
  const char *patterns[] = {o->json, o->sarif, o->html};
  char err[256];
  struct stat st;
  for (size_t i = 0; i < sizeof patterns / sizeof *patterns; i++) {
    if (!patterns[i] || !*patterns[i] ||
        !ac_expand_path(patterns[i], (int)getpid(), taken, len, err, sizeof err) ||
        ac_sys_lstat(taken, &st) != 0 || !S_ISREG(st.st_mode))
      continue;
    if (st.st_mtim.tv_sec > at->tv_sec ||
        (st.st_mtim.tv_sec == at->tv_sec && st.st_mtim.tv_nsec >= at->tv_nsec))
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
  if (!ac_sink.cuda_seen && !ac_sink.finding_streamed) {
    ac_records_remove(&ac_sink.stream);
    return;
  }
  if (ac_records_flush(&ac_sink.stream)) sink_say_append(AC_RECORDS_WRITTEN);
  size_t len = 0;
  char *unwritten = ac_records_unwritten(&ac_sink.stream, &len);
  struct ac_summary sum;
  char err[PATH_MAX + 200], text[sizeof err + sizeof ac_sink.stream.path + 200];
  json_t *report = ac_merge_own_stream(ac_sink.stream.created ? ac_sink.stream.out.path : NULL,
                                       unwritten, len, &sum);
  free(unwritten);
  char taken[PATH_MAX];
  bool free_to_write = !ac_sink.opts->overwrite || !report_taken_by_run(taken, sizeof taken);
  if (!free_to_write)
    snprintf(err, sizeof err,
             "%s was written by another process of this run (%%p in the name gives each "
             "process its own report)",
             taken);
  if (report && free_to_write &&
      ac_write_final_reports(report, ac_sink.opts, (int)getpid(), err, sizeof err)) {
    ac_records_remove(&ac_sink.stream); /* everything it held is in the reports now */
    say_incomplete(report);
  } else {
    snprintf(text, sizeof text, "error: cannot write the report: %s (the records are in %s%s)",
             report ? err : "out of memory", sink_stream_name(),
             ac_sink.stream.waiting ? "; those that waited in memory are lost" : "");
    sink_say_on_stderr(text);
  }
  json_decref(report);
}

/* Under plain LD_PRELOAD, this process's summary (the CLI prints the run's):
 * only from a process that used CUDA or had a finding, as its report. */
static void print_own_summary(void) {
  const struct ac_options *o = ac_sink.opts;
  if (!o || (o->session_dir && *o->session_dir) || !(ac_sink.cuda_seen || ac_sink.finding_streamed))
    return;
  char *text = NULL;
  size_t len = 0;
  FILE *mem = open_memstream(&text, &len);
  if (!mem) return;
  ac_summary_note_options(&ac_sink.tally, o->guard_pages == AC_GUARD_OFF, !o->guard);
  ac_summary_write(mem, &ac_sink.tally, ac_sink.prefix, "in this process");
  fclose(mem);
  sink_write_text(text, len);
  free(text);
}

/* Under the CLI: records that never reached the stream (the CLI reads the
 * stream's cut name and fails the run; this line says why). */
static void say_unwritten(void) {
  const struct ac_records *s = &ac_sink.stream;
  char text[sizeof s->path + 300];
  if (ac_records_flush(&ac_sink.stream)) {
    sink_say_append(AC_RECORDS_WRITTEN);
    return;
  }
  snprintf(text, sizeof text,
           "error: %lu record%s of this process could not be written to %s (%s): findings are "
           "missing from the report",
           s->waiting + s->lost, s->waiting + s->lost == 1 ? "" : "s", sink_stream_name(),
           strerror(s->error));
  sink_say_on_stderr(text);
}

void ac_report_halt(const char *rule) {
  sink_lock();
  if (ac_sink.opts && !ac_sink.finished) {
    print_own_summary();
    if (ac_sink.stream_started)
      sink_append(json_pack("{s:s, s:i, s:s}", "type", "halt", "pid", (int)getpid(), "rule", rule));
    if (sink_standalone())
      write_standalone_report();
    else if (ac_sink.stream_started)
      say_unwritten();
    ac_sink.finished = true;
  }
  sink_unlock();
}

/* The exit record and, without the CLI, the final report. */
static void finish_now(void) {
  if (!ac_sink.opts || ac_sink.finished) return;
  print_own_summary(); /* after every destructor: its findings counted too */
  if (!ac_sink.have_stream) {
    ac_sink.finished = true;
    return;
  }
  if (ac_sink.stream_started)
    sink_append(json_pack("{s:s, s:i}", "type", "exit", "pid", (int)getpid()));
  if (sink_standalone())
    write_standalone_report();
  else if (ac_sink.stream_started)
    say_unwritten();
  ac_sink.finished = true;
}

/* ATTACHCHECK_ERROR_EXITCODE under plain LD_PRELOAD (under the CLI the CLI
 * decides the run's status): a process with error findings that no
 * suppression matched, exiting with status 0, exits with N instead. A
 * program exiting with another status keeps it: its own failure is the one
 * to see. */
static bool error_exit_applies(int status) {
  const struct ac_options *o = ac_sink.opts;
  return o && o->error_exitcode && !(o->session_dir && *o->session_dir) && ac_sink.errors_found &&
         status == 0;
}

/* The last exit handler (status: what the process is exiting with, -1 when
 * not known). To change the status it flushes the program's stdio buffers,
 * as exit() would after the handlers, and leaves with _exit - as ASan's
 * exitcode does. */
static void finish_at_last(int status, void *unused) {
  (void)unused;
  sink_lock();
  finish_now();
  bool fail = error_exit_applies(status);
  sink_unlock();
  if (!fail) return;
  fflush(NULL);
  _exit((int)ac_sink.opts->error_exitcode);
}

/* Called from the shim's destructor. Libraries whose destructors run after
 * the shim's may still make findings, so the exit record and the report wait
 * for them: in an exit handler registered now and owned by no library
 * (on_exit has no dso handle), which glibc runs after every destructor - the
 * last handler, and the one told the exit status. Where it cannot be
 * registered (exit handlers already done) they are written now, the status
 * unknown and left alone. */
void ac_report_finish(void) {
  sink_lock();
  bool later = finish_registered || on_exit(finish_at_last, NULL) == 0;
  finish_registered = true;
  sink_unlock();
  if (!later) finish_at_last(-1, NULL);
}
