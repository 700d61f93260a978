/* cli.h - what the files of the front end share: the exit statuses, the
 * command line (args.c), the summary line (cli.c), running the program
 * (launch.c), an incomplete report said (shortfall.c) and the report command
 * (report_cmd.c).
 */
#ifndef AC_CLI_H
#define AC_CLI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <sys/types.h>

#include "report.h"

enum {
#define AC_EXIT(Name, Code, Meaning) Name = Code,
#include "exit_status.inc"
#undef AC_EXIT
  EXIT_OUTPUT_LOST = EXIT_USAGE, /* a report or the log could not be written */
};

/* ---- args.c ---- */
/* Where a usage error sends the user: "attachcheck --help" unless a command
 * has its own. */
extern const char *ac_cli_help;
/* One line on stderr, "attachcheck: ..." and where the help is; status 2. */
_Noreturn __attribute__((format(printf, 1, 2))) void ac_cli_usage_error(const char *fmt, ...);
/* Whether argv[i] is an option (else an operand: the program, a file). */
bool ac_cli_is_option(const char *arg);
/* Parses the option at argv[i] and its value (--name value or --name=value:
 * every option takes one); returns the option's index and moves *i past it.
 * An unknown option or a bad value is a usage error naming it as typed. */
size_t ac_cli_parse_option(int argc, char **argv, int *i, struct ac_options *o);
/* How the user gave an option: as typed on the command line ("--print_limit"),
 * else its ATTACHCHECK_* variable. */
const char *ac_cli_option_shown(size_t index);

/* ---- cli.c ---- */
/* The summary line of a run or of merged reports (with its newline). */
void ac_cli_summary_line(const struct ac_summary *sum, char *line, size_t len);
/* Two outputs (reports, the log) on one file would lose one of them after the
 * whole run has been spent: a usage error, before it. */
void ac_cli_check_distinct_outputs(const struct ac_options *o);

/* ---- shortfall.c ---- */
/* The one line for a report some of whose processes are incomplete. */
void ac_cli_say_incomplete(const json_t *report);

/* ---- launch.c ---- */
/* Runs the program argv and waits for it: its status as a shell gives it
 * (128+N for signal N, said in a line); *started is false when it could not
 * be run at all (status 127). *pid is its process id, *killed_by the signal
 * that ended it or 0. */
int ac_cli_run_program(char **argv, bool *started, pid_t *pid, int *killed_by);

/* ---- manual.c (also --help and --man, declared in report.h) ---- */
void ac_manual_print_report_help(FILE *out);

/* ---- report_cmd.c ---- */
/* attachcheck report [options] FILE.json...: argv[0] is "report". */
int ac_report_command(int argc, char **argv);

#endif
