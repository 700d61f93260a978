/* sink_internal.h - what the sink's two files share: sink.c (each finding
 * and line as it comes: printed, streamed, counted) and sink_exit.c (the end
 * of a process: its summary, its last record, its final report and exit
 * status). One struct, so what the two halves both touch is in one place
 * rather than spread over statics. It is kept under the sink lock, but for
 * what ac_report_announce and ac_report_fork_child set up before taking it.
 * Private to report/.
 */
#ifndef AC_SINK_INTERNAL_H
#define AC_SINK_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <time.h>

#include "report.h"

struct ac_sink_state {
  const struct ac_options *opts;
  /* What every line starts with: the process's id in it, so the blocks of
   * several processes (forked workers, ranks) can be told apart. */
  char prefix[48];
  /* Under plain LD_PRELOAD only a process that used CUDA or had findings
   * writes a final report: a shell or an `ls` of the run would otherwise
   * claim the report's name with an empty report first. */
  bool cuda_seen, finding_streamed;
  struct ac_records stream;
  bool have_stream;    /* the stream has a place */
  bool stream_started; /* and holds this process's record */
  bool finished;       /* the last record and the report are written */
  /* Error findings this process made that no suppression matched: under
   * plain LD_PRELOAD they decide ATTACHCHECK_ERROR_EXITCODE's status at
   * exit. */
  unsigned long errors_found;
  /* This process's findings, for its summary under plain LD_PRELOAD. */
  struct ac_summary tally;
  /* When the process loaded the shim (a forked child keeps its parent's),
   * on the coarse clock the kernel stamps files with. */
  struct timespec loaded_at;
};
extern struct ac_sink_state ac_sink;

/* The sink lock (base/locks.inc); whether this thread holds it tells a
 * message said from inside the sink. */
static inline void sink_lock(void) {
  ac_lock(AC_LOCK_sink);
}

static inline void sink_unlock(void) {
  ac_unlock(AC_LOCK_sink);
}

/* ---- sink.c's, for sink_exit.c ---- */
/* A line on stderr itself, whatever the options. */
void sink_say_on_stderr(const char *text);
/* Text where the findings' text goes: the log, else stderr. */
void sink_write_text(const char *text, size_t len);
/* A record to the stream (taken: decref'd); NULL is ignored. */
void sink_append(json_t *record);
/* What the stream did with a record, said once each. */
void sink_say_append(enum ac_records_result result);
/* The stream's name for people: its file, or the folder it goes to. */
const char *sink_stream_name(void);

/* ---- sink_exit.c's, for sink.c ---- */
/* Whether this process writes its own report at exit (plain LD_PRELOAD). */
bool sink_standalone(void);

#endif
