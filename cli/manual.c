/* manual.c - the CLI's documentation, written once: `attachcheck --help` and
 * the man page (`attachcheck --man`, installed as attachcheck.1) are both
 * printed from the texts below and from the option table (options.inc), so
 * they cannot disagree.
 */
#include <stdio.h>
#include <string.h>

#include "cli.h"

static const char *const synopsis = "attachcheck [options] [--] program [args...]";
static const char *const report_synopsis =
    "attachcheck report [--json FILE] [--sarif FILE] [--html FILE] [--error-exitcode N] "
    "[--overwrite on|off] FILE.json...";

static const char *const description[] = {
    ("Runs program with the attachcheck shim preloaded and reports every breach of the CUDA "
     "stream-attach rules: single-attach to the NULL stream, partial attaches, attaches on a "
     "capturing stream, CPU access to managed memory while a stream that owns it is busy, kernels "
     "given memory attached to another stream, and the rest of the catalogue (docs/rules.md)."),
    ("Findings are printed on stderr as they happen (or to --log-file) and written, de-duplicated, "
     "to the JSON (--json), SARIF (--sarif) and HTML (--html, with a timeline of the streams) "
     "reports when the program ends, for every process of "
     "the run. The program's behaviour is unchanged, except that the calls that would crash the "
     "driver are refused (--guard)."),
    ("Each option can also be given to the shim under plain LD_PRELOAD as the environment variable "
     "shown; the CLI passes its options on that way."),
};

/* attachcheck report: what it does, for its --help and the man page. */
static const char *const report_description =
    ("Reads JSON reports saved by earlier runs (--json) - the ranks of a job on several machines, "
     "several runs of a test suite - and merges them as the processes of one run are merged: the "
     "same finding (the same rule and stack) from several reports is one finding that counts "
     "every occurrence and lists every process. Prints a text summary of the findings on stdout "
     "and writes the merged report as JSON, SARIF and HTML where asked. Exit status: 2 when a "
     "report cannot be read or written, 5 when a report says records of a process are missing, "
     "N of --error-exitcode when there are error findings, else 0. A program called report is "
     "run as attachcheck -- report.");

struct exit_status {
  const char *code, *meaning;
};
static const struct exit_status exit_statuses[] = {
    {"the program's", "the program's own status (128+N if it died of signal N)"},
    {"N", "the value of --error-exitcode when there were error findings (not suppressed)"},
#define AC_EXIT(Name, Code, Meaning) {#Code, Meaning},
#include "exit_status.inc"
#undef AC_EXIT
};

static const char *const examples[] = {
    "attachcheck ./app",
    "attachcheck --sarif app.sarif --strip-paths \"$PWD/\" --error-exitcode 1 ./app",
    "attachcheck --suppressions third-party.supp --json report.json ./app",
    "attachcheck --json all-ranks.json mpirun -n 4 ./app",
    "attachcheck --html report.html ./app",
    "mpirun -n 4 attachcheck --json report.%q{OMPI_COMM_WORLD_RANK}.json ./app",
    "attachcheck report --sarif all-ranks.sarif --error-exitcode 1 report.*.json",
    "LD_PRELOAD=libattachcheck.so ATTACHCHECK_JSON=report.%p.json ./app",
};

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

/* ---- --help ---- */

void ac_manual_print_help(FILE *out) {
  fprintf(out, "usage: %s\n       %s\n\n%s\n\noptions:\n", synopsis, report_synopsis,
          description[0]);
  ac_options_print_help(out);
  fprintf(out, "  --help, --version, --man (the manual page, in roff)\n\nexit status:\n");
  for (size_t i = 0; i < COUNT(exit_statuses); i++)
    fprintf(out, "  %-14s %s\n", exit_statuses[i].code, exit_statuses[i].meaning);
  fprintf(out, "\nexamples:\n");
  for (size_t i = 0; i < COUNT(examples); i++)
    fprintf(out, "  %s\n", examples[i]);
}

void ac_manual_print_report_help(FILE *out) {
  fprintf(out,
          "usage: %s\n\n%s\n\noptions: --json, --sarif, --html, --error-exitcode and "
          "--overwrite, as for a run (attachcheck --help)\n",
          report_synopsis, report_description);
}

/* ---- the man page ---- */

/* Text for roff: backslashes escaped, dashes as minus signs, and no line
 * starting with a control character. */
static void roff_text(FILE *out, const char *s) {
  if (*s == '.' || *s == '\'') fputs("\\&", out);
  for (; *s; s++) {
    if (*s == '\\')
      fputs("\\e", out);
    else if (*s == '-')
      fputs("\\-", out);
    else
      fputc(*s, out);
  }
}

static void roff_section(FILE *out, const char *name) {
  fprintf(out, ".SH %s\n", name);
}

static void roff_options(FILE *out) {
  for (size_t i = 0; i < ac_option_count; i++) {
    const struct ac_option_info *opt = &ac_option_table[i];
    char cli[64], env[96];
    if (strcmp(opt->name, "session_dir") == 0) continue; /* internal */
    ac_option_spell(i, cli, env, sizeof cli);
    fprintf(out, ".TP\n.BI \"");
    roff_text(out, "--");
    roff_text(out, cli);
    fprintf(out, " \" \"");
    roff_text(out, opt->metavar);
    fprintf(out, "\"\n");
    roff_text(out, opt->description);
    fprintf(out, "\n.br\nDefault: ");
    roff_text(out, *opt->default_value ? opt->default_value : "none");
    if (opt->scope == AC_SCOPE_SHIM) {
      fprintf(out, "; environment: ");
      roff_text(out, env);
    }
    fputc('\n', out);
  }
}

void ac_manual_print_man(FILE *out) {
  fprintf(out, ".TH ATTACHCHECK 1 \"\" \"%s %s\" \"User Commands\"\n", AC_TOOL_NAME,
          AC_TOOL_VERSION);
  roff_section(out, "NAME");
  fprintf(out, "attachcheck \\- check a CUDA program's stream attachment of managed memory\n");
  roff_section(out, "SYNOPSIS");
  roff_text(out, synopsis);
  fprintf(out, "\n.br\n");
  roff_text(out, report_synopsis);
  fputc('\n', out);
  roff_section(out, "DESCRIPTION");
  for (size_t i = 0; i < COUNT(description); i++) {
    if (i) fprintf(out, ".PP\n");
    roff_text(out, description[i]);
    fputc('\n', out);
  }
  fprintf(out, ".SS attachcheck report\n");
  roff_text(out, report_description);
  fputc('\n', out);
  roff_section(out, "OPTIONS");
  roff_options(out);
  roff_section(out, "EXIT STATUS");
  for (size_t i = 0; i < COUNT(exit_statuses); i++) {
    fprintf(out, ".TP\n");
    roff_text(out, exit_statuses[i].code);
    fputc('\n', out);
    roff_text(out, exit_statuses[i].meaning);
    fputc('\n', out);
  }
  roff_section(out, "EXAMPLES");
  for (size_t i = 0; i < COUNT(examples); i++) {
    fprintf(out, ".PP\n.nf\n");
    roff_text(out, examples[i]);
    fprintf(out, "\n.fi\n");
  }
  roff_section(out, "SEE ALSO");
  fprintf(out, "compute\\-sanitizer(1); the rules, report schema and suppression format in the "
               "attachcheck documentation (docs/rules.md, docs/report\\-schema.md, "
               "docs/suppressions.md).\n");
}
