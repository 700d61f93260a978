/* report.h - where findings go: stderr text now, a JSON Lines stream flushed
 * record by record (so a crash loses nothing), and the final JSON report
 * built from those streams at exit or by the CLI.
 *
 *   sink.c        de-duplication, locking, dispatch to the outputs below
 *   sink_exit.c   the end of a process: its summary, last record, report, exit status
 *   sink_internal.h  what sink.c and sink_exit.c share
 *   finding_key.c  what makes two findings one: rule, problem, stack
 *   summary.c     the summary: counts, occurrences, the checks that did not run
 *   text.c        the human-readable block on stderr, from a finding's record
 *   json_finding.c  a finding as a JSON object (the schema of docs/report-schema.md)
 *   jsonl.c       the records of the per-process stream, and where it goes
 *   stream.c      the stream itself: private, exclusive, nothing lost in silence
 *   merge.c       the final JSON report from one or more streams, or from saved reports
 *   sarif.c       the final report as SARIF 2.1.0
 *   html.c        the final report as a self-contained HTML page with a timeline
 *   html_finding.c  one finding of that page in full
 *   html_internal.h  what html.c and html_finding.c share
 *   frames.c      which frame of a stack is the program's own
 *   suppressions.c  RULE:PATTERN lines that silence findings
 *   paths.c       report file names (%p, %q{ENV}) and their safe creation
 *   symbolize.c   (module, offset, function, file, line) of a return address
 *   source.c      the text of a source line (SARIF fingerprints, the reports)
 *   output.c      the log, stderr and the stream, safe from a program's descriptors
 *   rule_pages.c  the rule pages (docs/rules) embedded, for SARIF and HTML
 *   embed.cmake, html_style.css, html_script.js  the HTML page's parts, embedded
 * Their raw system calls and the options are the floor below, base/.
 */
#ifndef AC_REPORT_H
#define AC_REPORT_H

#include "locks.h"

#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>
#include <sys/types.h>

#include "fd_gate.h"
#include "finding.h"
#include "options.h"

#define AC_TOOL_NAME "attachcheck"
/* AC_TOOL_VERSION comes from the build: project(attachcheck VERSION ...) in
 * CMakeLists.txt is the one place the version is written. */
#ifndef AC_TOOL_VERSION
#error "AC_TOOL_VERSION is defined by the build (CMakeLists.txt, project())"
#endif
#define AC_SCHEMA_VERSION 2

/* ---- sink.c, sink_exit.c (used by the shim) ---- */
/* Announces this process in the session (records it as loaded). Light enough
 * for a constructor: one small write. */
void ac_report_announce(const struct ac_options *o);
/* Records f: printed, streamed, counted. True when it is an error finding no
 * suppression matched (what --on-error halt stops at). */
bool ac_report_finding(const struct ac_finding *f);
/* --on-error halt, before the process stops at the finding of rule: the
 * summary, a halt record in place of the exit record and, without the CLI,
 * the final reports. Nothing is written after it. */
void ac_report_halt(const char *rule);
/* n CPU accesses the page guard let through without judging them (why says
 * why): said as an error, and recorded, so that the report calls the
 * process incomplete - a finding may be missing - and the run fails. */
void ac_report_unjudged(unsigned long n, const char *why);
/* --on-error repair: a repair of a finding of rule (NULL: not one finding's)
 * was made - the access waited for busy work, waits synchronisations in
 * seconds - or not (why says why: said as a warning). Recorded, so that the
 * report counts the process's repairs. */
void ac_report_repair(const char *rule, bool made, unsigned waits, double seconds, const char *why);
#define AC_MAX_DEVICES_DESCRIBED 16
struct ac_cuda_facts {
  int driver_version; /* cuDriverGetVersion: 13000 for 13.0; 0 if unknown */
  int device_count;
  char device_names[AC_MAX_DEVICES_DESCRIBED][128];
};
void ac_report_cuda_init(int result, const struct ac_cuda_facts *facts);
/* At exit: the exit record, and the final JSON when the shim runs without the
 * CLI and a JSON report was asked for. */
void ac_report_finish(void);
/* Every line the shim says besides findings goes through here, to where the
 * findings' text goes: the log file when there is one, else stderr unless
 * --print-stderr off. A fatal line (the shim cannot check anything) goes to
 * stderr in any case. text is one line without the "==attachcheck== " prefix
 * or the newline. */
/* What every line attachcheck writes for people starts with: the CLI's own;
 * the shim's names its process (ac_report_prefix). */
#define AC_PREFIX "==attachcheck== "
/* "==attachcheck:PID== ": this process's, so the blocks of forked workers or
 * ranks can be told apart. */
const char *ac_report_prefix(void);

enum ac_message_level { AC_MESSAGE_INFO, AC_MESSAGE_FATAL };
void ac_report_message(enum ac_message_level level, const char *text);
/* In a forked child (the lock table made the locks anew): a stream and an
 * announcement of its own. */
void ac_report_fork_child(void);

/* ---- text.c ---- */
/* A finding's record (ac_json_finding's object) as the readable block, each
 * line starting with prefix, then its one line for editors and CI logs
 * (FILE:LINE:COL: SEVERITY: RULE NAME in FUNCTION). */
void ac_text_write_finding(FILE *out, const json_t *finding, const char *prefix);
/* One sentence of what happened, by the finding's kind: the call, the kernel
 * and its argument, the copy's operand, the access. */
void ac_text_what(const json_t *finding, char *buf, size_t len);
/* The one line alone, without a newline: false when the finding has no stack. */
bool ac_text_location_line(const json_t *finding, char *buf, size_t len);
/* A launch's "<<<(grid), (block)>>>" from its record's kernel; "" without one. */
void ac_launch_shape(const json_t *kernel, char *buf, size_t len);

/* ---- json_finding.c ---- */
/* A finding as a JSON object (without its key: the sink adds it, made from
 * the symbolised stack). */
json_t *ac_json_finding(const struct ac_finding *f);
json_t *ac_json_stack(const struct ac_stack *s);
/* "kernel", "copy", "set" or "memory operation". */
const char *ac_work_operation_name(enum ac_work_operation op);
/* A JSON string of s, which need not be UTF-8 (paths, argv): bytes that are
 * not ASCII become '?' when s is not valid UTF-8. */
json_t *ac_json_text(const char *s);
/* object[key] as a string, "" when it is absent or not a string. */
const char *ac_json_str(const json_t *object, const char *key);

/* ---- finding_key.c ---- */
/* The finding's key within this process (rule, problem, return addresses). */
uint64_t ac_finding_key(const struct ac_finding *f);
/* Its key in the reports, the same in every process running the same code
 * (rule, problem, module and offset of each frame of record's stack): 16 hex
 * digits. */
void ac_finding_portable_key(const json_t *record, const struct ac_finding *f, char out[17]);

/* ---- frames.c (frames of a JSON report) ---- */
/* FNV-1a: a hash of text that is the same in every process and every run
 * (keys and fingerprints are made of it). Start from AC_HASH_START. */
#define AC_HASH_START 1469598103934665603ull
uint64_t ac_hash_text(uint64_t h, const char *s);
uint64_t ac_hash_bytes(uint64_t h, const void *bytes, size_t n);
/* Whether a frame is in the program's own code: not the driver, the CUDA
 * runtime (as a library or linked in), the C library or the loader. */
bool ac_frame_is_programs_own(const json_t *frame);
/* The first such frame of a stack (its first frame if none is). */
const json_t *ac_primary_frame(const json_t *stack);

/* ---- suppressions.c ---- */
struct ac_suppression {
  char rule[48];     /* id, name or "*" */
  char problem[48];  /* after RULE/: a glob over the finding's problem ("arg1"), or "" */
  char pattern[512]; /* glob over a frame's function, file or module */
  char source[320];  /* "file:line" it came from */
};
struct ac_suppressions {
  struct ac_suppression *items;
  size_t count, cap;
};
/* Adds the lines of text (named file in messages); on a bad line, adds none
 * of this text and says which line in err. */
bool ac_suppressions_parse(struct ac_suppressions *set, const char *text, size_t len,
                           const char *file, char *err, size_t errlen);
/* Loads each file of a ':'-separated list. */
bool ac_suppressions_load(struct ac_suppressions *set, const char *paths, char *err, size_t errlen);
void ac_suppressions_free(struct ac_suppressions *set);
/* The first suppression matching a finding (its record: rule, stack, problem). */
const struct ac_suppression *ac_suppressions_match(const struct ac_suppressions *set,
                                                   const json_t *finding);
/* The narrowest line that suppresses this finding in the next run, and no
 * other (for --gen-suppressions). */
bool ac_suppression_suggest(const json_t *finding, char *buf, size_t len);
/* Which of its work's operands a finding is about: "arg1", "variable",
 * "source", "destination", "address"; "" for a finding of another kind. */
void ac_finding_problem(const json_t *finding, char *buf, size_t len);

/* ---- rule_pages.c ---- */
/* The rule's page of docs/rules (markdown, embedded at build time), or NULL. */
const char *ac_rule_page(const char *id);
/* The page with its relative links made absolute against docs_url (the
 * published docs/ folder), or reduced to their text without one (malloc'd). */
char *ac_rule_page_markdown(const char *id, const char *docs_url);
/* The page as plain text: links reduced to their text, no bold (malloc'd). */
char *ac_rule_page_text(const char *id);
/* The rule's description: its page's first paragraph of prose, on one line. */
bool ac_rule_description(const char *id, char *buf, size_t len);
/* docs_url/rules/ID.md, or NULL without docs_url (malloc'd). */
char *ac_rule_page_url(const char *id, const char *docs_url);
/* docs_url/path (path within docs/), or NULL without docs_url (malloc'd). */
char *ac_docs_link(const char *docs_url, const char *path);

/* ---- source.c ---- */
#define AC_SOURCE_LINE_MAX 240
/* The text of line `line` of the source file at path, whitespace normalised
 * (runs made one space, ends trimmed); false when it cannot be read or is blank. */
bool ac_source_line(const char *path, int line, char *out, size_t len);

/* ---- symbolize.c ---- */
struct ac_frame {
  const void *pc;
  const char *module;   /* path, "" if unknown */
  unsigned long offset; /* pc - module base */
  const char *function; /* NULL if unknown; demangled */
  unsigned long function_offset;
  const char *file;        /* source file of the call, NULL without debug information */
  const char *source_path; /* the same before --strip-paths, to read it */
  int line, column;        /* 0 when unknown */
  char function_buf[256], file_buf[512];
};
void ac_symbolize(const void *pc, struct ac_frame *out);
/* Loads libdw now, from the thread that starts checking: a library loaded
 * later, from the reporter thread, would be read through a descriptor in the
 * program's range while the program may be closing every descriptor. */
void ac_symbolize_start(void);
/* Source paths in reports lose everything up to and including prefix. */
void ac_symbolize_set_strip_prefix(const char *prefix);

/* ---- jsonl.c ---- */
/* Where this process's stream goes: the session folder (under the CLI), or a
 * private folder to make beside the report, named after it: <json>.<pid>.
 * and six random characters (<sarif>... when only SARIF is asked for,
 * <html>... when only HTML). */
struct ac_records_place {
  char where[4096]; /* the folder, or the start of the folder's name */
  bool make_folder;
};
bool ac_jsonl_place(const struct ac_options *o, int pid, struct ac_records_place *place, char *err,
                    size_t errlen);
/* A record as one line, newline included (malloc'd; NULL when out of memory). */
char *ac_jsonl_line(json_t *record, size_t *len);
json_t *ac_jsonl_process_record(const struct ac_options *o);

/* ---- merge.c ---- */
/* The checks a run may have gone without, each said in the summary (a run
 * that checked less must not look as clean as one that checked all):
 *   AC_UNCHECKED(Enum, json name, what the summary says) */
#define AC_UNCHECKED_LIST(AC_UNCHECKED)                                                            \
  AC_UNCHECKED(AC_UNCHECKED_CPU_ACCESS, "cpu_access",                                              \
               "CPU accesses to managed memory (AC201, AC202): --guard-pages off")                 \
  AC_UNCHECKED(AC_UNCHECKED_GUARD, "guard",                                                        \
               "calls that crash the driver were forwarded (--guard off)")                         \
  AC_UNCHECKED(AC_UNCHECKED_SOURCE, "source_lines",                                                \
               "source lines: the program's own frames have no debug information (build with "     \
               "-g)")
#define AC_UNCHECKED_BIT(Enum, Name, Text) Enum##_BIT,
enum { AC_UNCHECKED_LIST(AC_UNCHECKED_BIT) AC_UNCHECKED_COUNT };
#undef AC_UNCHECKED_BIT

struct ac_summary {
  int errors, warnings, notes; /* distinct findings by severity, not counting suppressed ones */
  int suppressed;              /* distinct findings a suppression matched */
  long long occurrences;       /* how often the findings not suppressed occurred */
  int processes;               /* processes that loaded the shim */
  int cuda_processes;          /* processes that initialised CUDA */
  int dropped_records;         /* unreadable (truncated) records */
  int output_errors;           /* text a process could not write (its log file) */
  int incomplete_processes;    /* processes whose records did not all arrive (cut or torn) */
  unsigned not_checked;        /* 1 << AC_UNCHECKED_*_BIT: what did not run */
};
/* ---- summary.c ---- */
/* Counts one distinct finding (a record, with its count when merged). */
void ac_summary_count(struct ac_summary *sum, const json_t *finding, bool suppressed);
/* What options a process ran with switched off (guard_pages, guard). */
void ac_summary_note_options(struct ac_summary *sum, bool guard_pages_off, bool guard_off);
/* The summary's lines, each starting with prefix: the counts (where: "in
 * this process", or NULL for the processes counted), then what was not
 * checked. */
void ac_summary_write(FILE *out, const struct ac_summary *sum, const char *prefix,
                      const char *where);
/* The not-checked list, as the JSON summary carries it. */
json_t *ac_summary_not_checked(const struct ac_summary *sum);

/* Reads the streams (the CLI's: a stream's cut name, or a stream without a
 * record, says records are missing) and builds the final report; *summary
 * gets the counts. */
json_t *ac_merge_streams(const char *const *paths, int count, struct ac_summary *summary);
/* The same for the shim at exit: its own stream (NULL when none was made) and
 * the records it could not write (lines, as ac_records_unwritten gives). */
json_t *ac_merge_own_stream(const char *path, const char *unwritten, size_t len,
                            struct ac_summary *summary);
/* Saved final reports (several runs, ranks, machines) as one: a finding of
 * the same key is one finding, its counts added and its processes listed,
 * as within one run; the processes are all of theirs. */
json_t *ac_merge_reports(json_t *const *reports, size_t count, struct ac_summary *summary);
/* ---- sarif.c ---- */
/* The merged report (ac_merge_streams) as a SARIF 2.1.0 log. */
json_t *ac_sarif_from_report(const json_t *report);

/* ---- html.c ---- */
/* The merged report as one self-contained HTML page (malloc'd, NUL-terminated;
 * NULL when out of memory). */
char *ac_html_from_report(const json_t *report);

/* Writes the reports the options ask for (--json, --sarif, --html; %p is pid); false
 * with the first failure in err. */
bool ac_write_final_reports(json_t *report, const struct ac_options *o, int pid, char *err,
                            size_t errlen);

/* ---- elfdeps.c (the CLI's look at a program the shim never reached) ---- */
struct ac_elf_facts {
  bool known;   /* a 64-bit x86-64 ELF file it could read */
  bool dynamic; /* has an interpreter: LD_PRELOAD applies */
  bool setuid;  /* setuid or setgid: the loader ignores LD_PRELOAD */
};
bool ac_elf_facts(const char *path, struct ac_elf_facts *facts);

/* ---- manual.c (the CLI's --help and man page, from one source) ---- */
void ac_manual_print_help(FILE *out);
void ac_manual_print_man(FILE *out);

/* ---- output.c ---- */
/* An output the program cannot take over by reusing its descriptor, kept out
 * of the program's range of descriptors where it can be. */
struct ac_output {
  int fd;         /* held out of the program's range; -1 when none is */
  bool known;     /* dev and ino are the file it was opened as */
  bool exclusive; /* a file this process made: reopened only while its name holds it */
  dev_t dev;
  ino_t ino;
  char path[4096]; /* opened again by this when fd is no longer that file; "" for stderr */
};
/* Opens path (absolute) for appending, never through a symbolic link. */
bool ac_output_open(struct ac_output *out, const char *path, char *err, size_t errlen);
/* Makes a new file at path (O_EXCL, O_NOFOLLOW, mode 0600); false, errno set. */
bool ac_output_create(struct ac_output *out, const char *path);
/* Renames the output's file (it keeps being written). */
bool ac_output_rename(struct ac_output *out, const char *to);
/* Takes the current fd 2 as stderr (a copy of it, for when fd 2 changes). */
void ac_output_adopt_stderr(struct ac_output *out);
/* Writes all of text; false (errno set) when it could not. A file of the
 * process's own gets all of it or nothing. */
bool ac_output_write(struct ac_output *out, const char *text, size_t len);
void ac_output_close(struct ac_output *out);
/* fd itself moved where the program's descriptors never come (the copy is
 * returned and fd closed), or fd where there is no such place: for the
 * descriptors libdw keeps open (symbolize.c, the shim's open wrapper). */
int ac_output_move_out_of_range(int fd);
/* Evaluates open_expr - a call that gives a new descriptor or -1 - with the
 * descriptor gate held (base/fd_gate.h) and moves what it gives out of the
 * program's range: the number is the program's only while the gate is held. */
#define AC_OPEN_OUT_OF_RANGE(open_expr)                                                            \
  __extension__({                                                                                  \
    ac_fd_gate_enter();                                                                            \
    int moved_ = ac_output_move_out_of_range(open_expr);                                           \
    ac_fd_gate_leave();                                                                            \
    moved_;                                                                                        \
  })

/* ---- stream.c ---- */
/* The name a stream takes while records are missing from it. */
#define AC_RECORDS_CUT_SUFFIX ".cut.jsonl"
struct ac_records_wait;
struct ac_records {
  struct ac_output out;
  struct ac_records_place place;
  int pid;
  char folder[4096]; /* the private folder it is in */
  dev_t folder_dev;  /* that folder, when this process made it */
  ino_t folder_ino;
  char path[4096];                      /* its name while whole */
  bool created, cut;                    /* the file is made; it has its cut name */
  struct ac_records_wait *first, *last; /* records not written yet, in order */
  size_t waiting_bytes;
  unsigned long waiting, written;
  unsigned long lost, lost_said; /* records dropped; how many a lost record says */
  int error;                     /* why the last write failed */
};
enum ac_records_result { AC_RECORDS_WRITTEN, AC_RECORDS_WAITING, AC_RECORDS_LOST };
/* Nothing is made until the first record. */
void ac_records_init(struct ac_records *s, const struct ac_records_place *place, int pid);
/* One record (a line): written, waiting in memory, or dropped (counted). */
enum ac_records_result ac_records_append(struct ac_records *s, const char *text, size_t len);
/* Writes what waits; true when nothing does any more. */
bool ac_records_flush(struct ac_records *s);
/* The records that could not be written, as lines, and a lost record when
 * some were dropped (malloc'd; NULL when out of memory). */
char *ac_records_unwritten(const struct ac_records *s, size_t *len);
/* Deletes the stream and the folder it made; the waiting records go too. */
void ac_records_remove(struct ac_records *s);
/* In a forked child: the parent's stream is not the child's to write. */
void ac_records_forget(struct ac_records *s);

/* ---- paths.c ---- */
/* pattern with %p (pid), %q{NAME} (environment) and %% expanded. */
bool ac_expand_path(const char *pattern, int pid, char *out, size_t len, char *err, size_t errlen);
/* Whether a report may be written at path: its folder is writable, and the
 * path is not a symbolic link, not something other than a file, and (unless
 * overwrite) does not exist. */
bool ac_report_path_usable(const char *path, bool overwrite, char *why, size_t len);
/* Writes report to path: a new temporary file, then renamed into place
 * (never replacing an existing file unless overwrite). */
bool ac_write_report_file(json_t *report, const char *path, bool overwrite, char *err,
                          size_t errlen);
/* The same for text already made (the HTML report). */
bool ac_write_text_file(const char *text, const char *path, bool overwrite, char *err,
                        size_t errlen);
/* A file beside path: path + suffix, or a short name in the same folder
 * when that would be longer than a file name may be. */
bool ac_sibling_name(const char *path, const char *suffix, char *out, size_t len);
/* pattern (a report path, %-escapes and all) made absolute against the
 * current folder, so a program's chdir cannot move its reports. */
bool ac_absolute_pattern(const char *pattern, char *out, size_t len);
/* Opens a text log for appending, never through a symbolic link; -1 with err. */
int ac_open_log_file(const char *path, char *err, size_t errlen);
/* Whether path is a folder only this user may use: not a link, this user's,
 * no permission for anyone else (why says which, when not). */
bool ac_folder_is_private(const char *path, char *why, size_t len);
/* Makes a new private folder: prefix and six random characters, mode 0700. */
bool ac_make_private_folder(const char *prefix, char *out, size_t len);

#endif
