/* launch.c - the program run and waited for, as compute-sanitizer runs it.
 *
 * The program is started with the environment the CLI prepared (the shim
 * preloaded, the options as ATTACHCHECK_* variables). A close-on-exec pipe
 * tells a program that could not be run from one that ran and failed. A
 * signal a process sent to the CLI alone (kill, timeout, a batch system) is
 * passed on to the program; the CLI stays to write the report.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli.h"

static volatile pid_t forward_to;

/* A signal a process sent to the CLI (kill, timeout, a batch system) is
 * passed on to the program, as compute-sanitizer does. One the terminal or
 * the kernel sent (si_code > 0: Ctrl-C, a hang-up) went to the whole
 * foreground group, the program included, and is not sent twice; nor is one
 * the program itself or the CLI sent. The CLI stays to write the report. */
static void forward_signal(int sig, siginfo_t *info, void *context) {
  (void)context;
  pid_t to = forward_to;
  if (to <= 0 || info->si_code > 0 || info->si_pid == to || info->si_pid == getpid()) return;
  int saved = errno;
  kill(to, sig);
  errno = saved;
}

/* What a signal may mean to the program; the CLI's own faults, job control
 * and SIGCHLD are not passed on. */
static bool is_forwarded(int sig) {
  switch (sig) {
  case SIGKILL:
  case SIGSTOP:
  case SIGCHLD:
  case SIGCONT:
  case SIGTSTP:
  case SIGTTIN:
  case SIGTTOU:
  case SIGSEGV:
  case SIGBUS:
  case SIGFPE:
  case SIGILL:
  case SIGTRAP:
  case SIGABRT:
  case SIGSYS:
    return false;
  default:
    return sig < 32 || (sig >= SIGRTMIN && sig <= SIGRTMAX);
  }
}

static struct sigaction original_actions[_NSIG];

/* Installed before the program starts (exec gives it back the defaults); a
 * signal the CLI was started ignoring stays ignored, for both. */
static void forward_signals(bool on) {
  for (int sig = 1; sig < _NSIG; sig++) {
    if (!is_forwarded(sig)) continue;
    if (!on) {
      sigaction(sig, &original_actions[sig], NULL);
      continue;
    }
    if (sigaction(sig, NULL, &original_actions[sig]) != 0 ||
        original_actions[sig].sa_handler == SIG_IGN)
      continue;
    struct sigaction fwd = {.sa_sigaction = forward_signal, .sa_flags = SA_SIGINFO | SA_RESTART};
    sigfillset(&fwd.sa_mask);
    sigaction(sig, &fwd, NULL);
  }
}

int ac_cli_run_program(char **argv, bool *started, pid_t *pid, int *killed_by) {
  int exec_error[2];
  pid_t child;
  *started = false;
  *killed_by = 0;
  /* Signals wait (blocked) until the program's pid is known: one sent as the
   * program starts is passed on, not lost. */
  sigset_t all, before;
  sigfillset(&all);
  forward_signals(true);
  sigprocmask(SIG_BLOCK, &all, &before);
  if (pipe2(exec_error, O_CLOEXEC) != 0 || (child = fork()) < 0) {
    sigprocmask(SIG_SETMASK, &before, NULL);
    perror("attachcheck: cannot start the program");
    return EXIT_CANNOT_RUN;
  }
  *pid = child;
  if (child > 0)
    forward_to = child;
  else
    forward_signals(false); /* the program's own dispositions, before any arrives */
  sigprocmask(SIG_SETMASK, &before, NULL);
  if (child == 0) {
    execvp(argv[0], argv);
    int err = errno;
    if (write(exec_error[1], &err, sizeof err) < 0) { /* the parent sees a closed pipe */
    }
    _exit(EXIT_CANNOT_RUN);
  }
  close(exec_error[1]);
  int err;
  ssize_t got;
  while ((got = read(exec_error[0], &err, sizeof err)) < 0 && errno == EINTR) {
  }
  close(exec_error[0]);
  if (got == (ssize_t)sizeof err) {
    waitpid(child, NULL, 0);
    forward_to = 0;
    forward_signals(false);
    fprintf(stderr, "attachcheck: cannot run %s: %s\n", argv[0], strerror(err));
    return EXIT_CANNOT_RUN;
  }
  *started = true;
  int status;
  while (waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }
  forward_to = 0;
  forward_signals(false);
  if (WIFSIGNALED(status)) {
    *killed_by = WTERMSIG(status);
    fprintf(stderr, AC_PREFIX "the program was killed by signal %d (%s)\n", WTERMSIG(status),
            strsignal(WTERMSIG(status)));
    return 128 + WTERMSIG(status);
  }
  return WEXITSTATUS(status);
}
