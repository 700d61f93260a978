/* cli.c - the attachcheck front end.
 *
 *   attachcheck [options] [--] program [args...]
 *   attachcheck report [options] FILE.json...     (report_cmd.c)
 *
 * Checks its options before anything starts (a bad option, value or report
 * path is one line on stderr and exit status 2), preloads the shim that sits
 * beside it (../lib/libattachcheck.so), passes the options on as
 * ATTACHCHECK_* variables, runs the program, and afterwards builds the
 * report from the record streams every process left in a session folder -
 * also when the program crashed. Signals sent to the CLI alone are passed on
 * to the program (launch.c); ASan's check that its runtime comes first is
 * turned off.
 * Exit status: the program's own (128+N for a signal), --error-exitcode when
 * there were error findings, 2 when a report or the log could not be written,
 * 3 when the shim never loaded into any process, 5 when records of a process
 * did not all reach the report, 4 when no process initialised CUDA (unless
 * --require-cuda-init=no).
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli.h"
#include "grow.h"

static pid_t child;
static int killed_by; /* the signal that ended the program, 0 if it exited */

static void warn_line(const char *line) {
  fprintf(stderr, "attachcheck: warning: %s\n", line);
}

/* The CLI's own flags, which take no value and end it: -h, -V, --man. */
static bool run_own_flag(const char *a) {
  if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) ac_manual_print_help(stdout), exit(0);
  if (strcmp(a, "--version") == 0 || strcmp(a, "-V") == 0)
    printf("%s %s\n", AC_TOOL_NAME, AC_TOOL_VERSION), exit(0);
  if (strcmp(a, "--man") == 0) ac_manual_print_man(stdout), exit(0);
  return false;
}

/* Parses the options; returns the index of the program in argv: the first
 * argument that is no option, or the one after "--". */
static int parse_args(int argc, char **argv, struct ac_options *o) {
  int i = 1;
  while (i < argc) {
    const char *a = argv[i];
    if (strcmp(a, "--") == 0) return i + 1;
    if (!ac_cli_is_option(a)) return i;
    if (run_own_flag(a))
      i++;
    else
      ac_cli_parse_option(argc, argv, &i, o);
  }
  return i;
}

/* A report path given to the CLI, checked before the program starts: its
 * %-escapes expand (%p to a stand-in pid: the program's is not known yet, so
 * whether the real name exists cannot be told) and it can be written. */
static void check_report_path(const char *what, const char *pattern, bool overwrite) {
  char path[PATH_MAX], why[PATH_MAX + 128];
  if (!pattern || !*pattern) return;
  bool name_known = !strstr(pattern, "%p");
  if (!ac_expand_path(pattern, 0, path, sizeof path, why, sizeof why) ||
      !ac_report_path_usable(path, overwrite || !name_known, why, sizeof why))
    ac_cli_usage_error("cannot write the %s: %s", what, why);
}

void ac_cli_summary_line(const struct ac_summary *sum, char *line, size_t len) {
  FILE *mem = fmemopen(line, len, "w");
  if (!mem) {
    if (len) line[0] = '\0';
    return;
  }
  ac_summary_write(mem, sum, AC_PREFIX, NULL); /* the counts, then what was not checked */
  fclose(mem);
}

/* The summary line: on stderr, and at the end of the log when there is one;
 * false (said in one line) when the log could not be written. */
static bool print_summary(const struct ac_options *o, const struct ac_summary *sum) {
  char line[1024], path[PATH_MAX], why[PATH_MAX + 128];
  ac_cli_summary_line(sum, line, sizeof line);
  int n = (int)strlen(line);
  fputs(line, stderr);
  if (!o->log_file || !*o->log_file ||
      !ac_expand_path(o->log_file, (int)child, path, sizeof path, why, sizeof why))
    return true;
  int fd = ac_open_log_file(path, why, sizeof why);
  bool ok = fd >= 0 && write(fd, line, (size_t)n) == n;
  int error = errno;
  if (fd >= 0) close(fd);
  if (!ok && fd >= 0) snprintf(why, sizeof why, "%s: %s", path, strerror(error));
  if (!ok && sum->output_errors == 0) /* else a process said it already */
    fprintf(stderr, AC_PREFIX "error: cannot write the log file %s\n", why);
  return ok;
}

/* Whether path is a character device (/dev/null, /dev/tty, /dev/full): a log
 * may be one; it is neither checked as a file nor started empty. */
static bool is_character_device(const char *path) {
  struct stat st;
  return stat(path, &st) == 0 && S_ISCHR(st.st_mode);
}

/* The log every process appends to: started empty when it may be replaced. */
static void start_log_file(const struct ac_options *o) {
  char path[PATH_MAX], why[PATH_MAX + 128];
  if (!o->log_file || !*o->log_file) return;
  if (!strstr(o->log_file, "%p") &&
      ac_expand_path(o->log_file, 0, path, sizeof path, why, sizeof why) &&
      is_character_device(path))
    return;
  check_report_path("log file", o->log_file, o->overwrite);
  if (strstr(o->log_file, "%p")) return;
  if (!ac_expand_path(o->log_file, 0, path, sizeof path, why, sizeof why)) return;
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (fd < 0) ac_cli_usage_error("cannot write the log file: %s: %s", path, strerror(errno));
  close(fd);
}

/* The shim beside the CLI: ../lib/ in a build folder, ../lib/attachcheck/
 * where `cmake --install` or the package put it (cmake/packaging.cmake). */
static bool find_shim(char *buf, size_t len) {
  static const char *const places[] = {"../lib/libattachcheck.so",
                                       "../lib/attachcheck/libattachcheck.so"};
  char exe[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n <= 0) return false;
  exe[n] = 0;
  const char *folder = dirname(exe);
  for (size_t i = 0; i < sizeof places / sizeof *places; i++) {
    snprintf(buf, len, "%s/%s", folder, places[i]);
    char *real = realpath(buf, NULL);
    if (!real) continue;
    snprintf(buf, len, "%s", real);
    free(real);
    if (access(buf, R_OK) == 0) return true;
  }
  return false;
}

/* A program linked with AddressSanitizer as a shared library (gcc's default)
 * refuses to start unless ASan's runtime is the first library loaded, and
 * the shim is. Its check is turned off, for every process of the run (the
 * program may be started by a script or a launcher), appended to the user's
 * ASAN_OPTIONS so it wins and nothing else changes; a program without ASan
 * never reads it. It is safe: the shim defines no allocator, and forwards
 * what it wraps to the next definition, ASan's. Preloading the runtime first
 * instead would put it into every program the program runs, whose leak check
 * at exit would change their exit status. */
static void let_asan_start(void) {
  const char *old = getenv("ASAN_OPTIONS");
  char *options;
  if (asprintf(&options, "%s%sverify_asan_link_order=0", old ? old : "", old && *old ? ":" : "") <
      0)
    exit(1);
  setenv("ASAN_OPTIONS", options, 1);
  free(options);
}

static void export_options(const struct ac_options *o, const char *session, const char *shim) {
  for (size_t i = 0; i < ac_option_count; i++) {
    char cli[64], env[96], value[PATH_MAX];
    if (ac_option_table[i].scope != AC_SCOPE_SHIM) continue;
    ac_option_spell(i, cli, env, sizeof cli);
    ac_option_format(o, i, value, sizeof value);
    setenv(env, value, 1);
  }
  setenv("ATTACHCHECK_SESSION_DIR", session, 1);
  /* The shim writes the merged report through the CLI, not by itself, and
   * the run's status is the CLI's to decide. */
  unsetenv("ATTACHCHECK_JSON");
  unsetenv("ATTACHCHECK_SARIF");
  unsetenv("ATTACHCHECK_ERROR_EXITCODE");
  const char *old = getenv("LD_PRELOAD");
  char *preload;
  if (asprintf(&preload, "%s%s%s", shim, old && *old ? " " : "", old ? old : "") < 0) exit(1);
  setenv("LD_PRELOAD", preload, 1);
  free(preload);
}

/* The program's pid while it runs (0 before and after): signals go to it. */
/* Streams in the order the processes came: by pid, then a program exec'd
 * into a pid after the one before it (<pid>.jsonl, <pid>.1.jsonl, ...). */
static int compare_streams(const void *a, const void *b) {
  const char *x = strrchr(*(char *const *)a, '/'), *y = strrchr(*(char *const *)b, '/');
  char *xe, *ye;
  long xp = strtol(x + 1, &xe, 10), yp = strtol(y + 1, &ye, 10);
  long xn = *xe == '.' ? strtol(xe + 1, NULL, 10) : 0,
       yn = *ye == '.' ? strtol(ye + 1, NULL, 10) : 0;
  return xp != yp ? (xp > yp) - (xp < yp) : (xn > yn) - (xn < yn);
}

/* The record streams in the session folder, one per process (and one per
 * program a process exec'd). */
static int list_streams(const char *session, char ***paths) {
  DIR *d = opendir(session);
  int n = 0, cap = 0;
  *paths = NULL;
  if (!d) return 0;
  for (struct dirent *e; (e = readdir(d));) {
    size_t len = strlen(e->d_name);
    if (len < 7 || strcmp(e->d_name + len - 6, ".jsonl") != 0) continue;
    if (!AC_GROW(*paths, n, cap, 8)) break;
    if (asprintf(&(*paths)[n], "%s/%s", session, e->d_name) >= 0) n++;
  }
  closedir(d);
  if (n) qsort(*paths, (size_t)n, sizeof **paths, compare_streams);
  return n;
}

static void remove_session(const char *session, char **paths, int n) {
  for (int i = 0; i < n; i++) {
    unlink(paths[i]);
    free(paths[i]);
  }
  free(paths);
  rmdir(session);
}

/* The program's file as execvp would find it ("" when it cannot be found). */
static void find_program(const char *name, char *out, size_t len) {
  out[0] = 0;
  if (strchr(name, '/')) {
    snprintf(out, len, "%s", name);
    return;
  }
  const char *path = getenv("PATH");
  char *copy = strdup(path && *path ? path : "/usr/local/bin:/usr/bin:/bin"), *save = NULL;
  for (char *dir = copy ? strtok_r(copy, ":", &save) : NULL; dir;
       dir = strtok_r(NULL, ":", &save)) {
    snprintf(out, len, "%s/%s", *dir ? dir : ".", name);
    if (access(out, X_OK) == 0) break;
    out[0] = 0;
  }
  free(copy);
}

/* A --driver that is the shim itself would forward every call to itself;
 * one that cannot be loaded would leave the program over another driver (the
 * shim falls back to libcuda.so.1) or unchecked. Both are refused before the
 * run. It is loaded here as the program's processes would load it. */
static void check_driver(const struct ac_options *o, const char *shim) {
  struct stat d, s;
  const char *base = strrchr(o->driver, '/'), *shown = ac_cli_option_shown(AC_OPTION_INDEX_driver);
  base = base ? base + 1 : o->driver;
  bool same = strchr(o->driver, '/') && stat(o->driver, &d) == 0 && stat(shim, &s) == 0 &&
              d.st_dev == s.st_dev && d.st_ino == s.st_ino;
  if (same || strncmp(base, "libattachcheck", 14) == 0)
    ac_cli_usage_error("%s %s is attachcheck's own library, not the CUDA driver", shown, o->driver);
  if (strcmp(o->driver, ac_option_table[AC_OPTION_INDEX_driver].default_value) == 0) return;
  void *lib = dlopen(o->driver, RTLD_LAZY | RTLD_LOCAL);
  if (!lib) ac_cli_usage_error("%s %s cannot be loaded: %s", shown, o->driver, dlerror());
  bool is_driver = dlsym(lib, "cuInit") || dlsym(lib, "cuGetProcAddress_v2");
  dlclose(lib);
  if (!is_driver)
    ac_cli_usage_error("%s %s is not the CUDA driver (it has no cuInit)", shown, o->driver);
}

/* The file an output's name gives, to tell two outputs apart: %-escapes
 * expanded (%p as 0: one pattern, one file) and the folder resolved, so that
 * r.json and ./r.json are one. False when it cannot be told. */
static bool output_file(const char *pattern, char *out, size_t len) {
  char path[PATH_MAX], why[PATH_MAX + 128];
  if (!pattern || !*pattern || !ac_expand_path(pattern, 0, path, sizeof path, why, sizeof why))
    return false;
  char *slash = strrchr(path, '/'), *folder;
  if (slash) *slash = 0;
  folder = realpath(!slash ? "." : slash == path ? "/" : path, NULL);
  int n = folder ? snprintf(out, len, "%s/%s", folder, slash ? slash + 1 : path) : -1;
  free(folder);
  return n >= 0 && (size_t)n < len;
}

void ac_cli_check_distinct_outputs(const struct ac_options *o) {
  static const size_t options[] = {AC_OPTION_INDEX_json, AC_OPTION_INDEX_sarif,
                                   AC_OPTION_INDEX_html, AC_OPTION_INDEX_log_file};
  const char *patterns[] = {o->json, o->sarif, o->html, o->log_file};
  char files[4][PATH_MAX];
  bool known[4];
  for (size_t i = 0; i < 4; i++) {
    known[i] = output_file(patterns[i], files[i], sizeof files[i]);
    for (size_t j = 0; j < i; j++)
      if (known[i] && known[j] && strcmp(files[i], files[j]) == 0)
        ac_cli_usage_error("%s and %s name the same file, %s: each needs its own",
                           ac_cli_option_shown(options[j]), ac_cli_option_shown(options[i]),
                           files[i]);
  }
}

/* Paths the program's processes use, made absolute now: a program that
 * changes its folder must not move its log or lose its suppressions. */
static void make_paths_absolute(struct ac_options *o) {
  static char log[PATH_MAX], driver[PATH_MAX], suppressions[8192];
  if (ac_absolute_pattern(o->log_file, log, sizeof log)) o->log_file = log;
  if (strchr(o->driver, '/') && ac_absolute_pattern(o->driver, driver, sizeof driver))
    o->driver = driver;
  if (!o->suppressions || !*o->suppressions) return;
  char *copy = strdup(o->suppressions), *save = NULL;
  size_t n = 0;
  bool whole = copy != NULL; /* else (too long) the list is kept as given */
  for (char *p = copy ? strtok_r(copy, ":", &save) : NULL; p; p = strtok_r(NULL, ":", &save)) {
    char *real = realpath(p, NULL); /* it was read already: it exists */
    int m =
        snprintf(suppressions + n, sizeof suppressions - n, "%s%s", n ? ":" : "", real ? real : p);
    free(real);
    if (m < 0 || (size_t)m >= sizeof suppressions - n) {
      whole = false;
      break;
    }
    n += (size_t)m;
  }
  if (whole) o->suppressions = suppressions;
  free(copy);
}

/* Why no process loaded the shim, as far as the program's file tells. */
static void say_shim_never_loaded(const char *program) {
  char file[PATH_MAX];
  struct ac_elf_facts elf;
  find_program(program, file, sizeof file);
  bool known = file[0] && ac_elf_facts(file, &elf);
  const char *why =
      known && elf.setuid ? "it is setuid or setgid, and the loader ignores LD_PRELOAD for such "
                            "programs"
      : known && !elf.dynamic ? "it is statically linked, so nothing can be preloaded into it"
                              : "the possible causes: a statically linked or setuid program, a "
                                "program run through something that clears the environment "
                                "(env -i, sudo, a launcher), or a sanitizer or loader failure "
                                "before any library was loaded (see the messages above)";
  fprintf(stderr,
          AC_PREFIX "error: the shim never loaded into the program: nothing was checked; "
                    "%s\n",
          why);
}

/* --on-error repair: what the run's repairs came to, after the summary, so a
 * run that was repaired does not read as one that needed nothing. */
static void say_repairs(const json_t *report) {
  json_int_t made = 0, given_up = 0;
  size_t i;
  const json_t *proc;
  json_array_foreach(json_object_get(report, "processes"), i, proc) {
    const json_t *r = json_object_get(proc, "repairs");
    made += json_integer_value(json_object_get(r, "made"));
    given_up += json_integer_value(json_object_get(r, "given_up"));
  }
  if (made)
    fprintf(stderr,
            AC_PREFIX "repaired: %lld time%s the program was made to wait as the rules ask "
                      "(--on-error repair); the findings' repair: lines say where to fix it\n",
            (long long)made, made == 1 ? "" : "s");
  if (given_up)
    fprintf(stderr,
            AC_PREFIX "warning: %lld repair%s given up: the program went on unrepaired there\n",
            (long long)given_up, given_up == 1 ? " was" : "s were");
}

/* A program killed before the shim wrote its exit record: what the shim held
 * and had not written yet (a finding of its SIGSEGV handler's waiting for
 * the reporter thread) went with it. The summary must not read as complete. */
static void say_killed_unfinished(const json_t *report) {
  size_t i;
  const json_t *proc;
  json_array_foreach(json_object_get(report, "processes"), i, proc) {
    if (json_integer_value(json_object_get(proc, "pid")) != (json_int_t)child) continue;
    if (json_is_true(json_object_get(proc, "exited"))) return;
    if (json_object_get(proc, "halted_at")) {
      fprintf(stderr,
              AC_PREFIX "the program was halted at its first error (%s), as --on-error halt "
                        "asks: a debugger or the core dump shows the breach\n",
              ac_json_str(proc, "halted_at"));
      return;
    }
  }
  fprintf(stderr,
          AC_PREFIX "error: the program was killed (signal %d) before attachcheck finished its "
                    "records: any finding it had not written yet is missing from this report\n",
          killed_by);
}

/* The exit status from what the run left: a lost report or log first (a run
 * must not pass whose findings went nowhere), then the shim's absence, lost
 * records, CUDA's absence, the findings, and the program's own status. */
static int run_status(const struct ac_options *o, const struct ac_summary *sum, int status,
                      bool output_lost, const char *program) {
  if (output_lost) return EXIT_OUTPUT_LOST;
  if (sum->processes == 0) {
    say_shim_never_loaded(program);
    return EXIT_SHIM_NOT_LOADED;
  }
  if (sum->incomplete_processes) return EXIT_RECORDS_LOST;
  if (o->require_cuda_init && sum->cuda_processes == 0) {
    fprintf(stderr, AC_PREFIX "error: the program never initialised CUDA: nothing was "
                              "checked (--require-cuda-init=no accepts this)\n");
    return EXIT_NO_CUDA;
  }
  if (o->error_exitcode && sum->errors > 0) return (int)o->error_exitcode;
  return status;
}

static void make_session(char *session, size_t len) {
  const char *tmp = getenv("TMPDIR");
  char made[PATH_MAX];
  snprintf(made, sizeof made, "%s/attachcheck.XXXXXX", tmp && *tmp ? tmp : "/tmp");
  if (!mkdtemp(made)) ac_cli_usage_error("cannot make a session folder: %s", strerror(errno));
  char *real = realpath(made, NULL); /* a relative TMPDIR must not follow the program's chdir */
  snprintf(session, len, "%s", real ? real : made);
  free(real);
}

int main(int argc, char **argv) {
  struct ac_options o;
  if (argc > 1 && strcmp(argv[1], "report") == 0) return ac_report_command(argc - 1, argv + 1);
  ac_options_defaults(&o);
  ac_options_from_env(&o, warn_line);
  int prog = parse_args(argc, argv, &o);
  if (prog >= argc) ac_cli_usage_error("%s", "no program to run");
  char why[PATH_MAX + 64], shim[PATH_MAX], session[PATH_MAX];
  ac_cli_check_distinct_outputs(&o);
  check_report_path("JSON report", o.json, o.overwrite);
  check_report_path("SARIF report", o.sarif, o.overwrite);
  check_report_path("HTML report", o.html, o.overwrite);
  start_log_file(&o);
  struct ac_suppressions checked = {0};
  if (!ac_suppressions_load(&checked, o.suppressions, why, sizeof why))
    ac_cli_usage_error("%s", why);
  ac_suppressions_free(&checked);
  if (!find_shim(shim, sizeof shim))
    ac_cli_usage_error("%s",
                       "cannot find libattachcheck.so in ../lib or ../lib/attachcheck beside the "
                       "attachcheck binary");
  check_driver(&o, shim);
  make_paths_absolute(&o);
  make_session(session, sizeof session);

  export_options(&o, session, shim);
  let_asan_start();
  bool started;
  int status = ac_cli_run_program(argv + prog, &started, &child, &killed_by);

  char **paths;
  int n = list_streams(session, &paths);
  struct ac_summary sum;
  json_t *report = ac_merge_streams((const char *const *)paths, n, &sum);
  bool output_lost = sum.output_errors > 0;
  if (!report || !ac_write_final_reports(report, &o, (int)child, why, sizeof why)) {
    fprintf(stderr, AC_PREFIX "error: cannot write the report: %s\n",
            report ? why : "out of memory");
    output_lost = true;
  }
  remove_session(session, paths, n);
  if (started && !print_summary(&o, &sum)) output_lost = true;
  if (started && sum.incomplete_processes) ac_cli_say_incomplete(report);
  if (started && report) say_repairs(report);
  if (started && killed_by && report) say_killed_unfinished(report);
  json_decref(report);
  if (!started) return status;
  return run_status(&o, &sum, status, output_lost, argv[prog]);
}
