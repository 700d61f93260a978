/* halt.c - --on-error halt: the process stops where its first error was made.
 *
 * A finding made in the thread that made the breach - a driver call's, a
 * buffer handed to the kernel - stops that thread at once, inside the call.
 * A CPU access is judged in the faulting thread's SIGSEGV handler but
 * reported by the reporter thread (a handler may neither format nor write):
 * the reporter only asks for the halt, and the handler, which waits in halt
 * mode until its finding is reported, stops over the faulting instruction.
 * Either way the reports are written first (ac_report_halt); then SIGTRAP
 * where a debugger traces the process (it may go on from there), else
 * abort() with SIGABRT's default action restored and unblocked, so the
 * process dumps core whatever the program did with SIGABRT.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "libc_real.h"
#include "report.h"
#include "shim.h"
#include "sys.h"

/* The rule of the finding the reporter asked to halt at, or NULL (atomic). */
static const char *halt_asked;

/* Whether a debugger traces this process (TracerPid in /proc/self/status);
 * async-signal-safe. */
static bool traced(void) {
  char buf[1024];
  if (ac_sys_read_once("/proc/self/status", buf, sizeof buf) <= 0) return false;
  const char *at = strstr(buf, "TracerPid:");
  if (!at) return false;
  for (at += strlen("TracerPid:"); *at == ' ' || *at == '\t'; at++) {
  }
  return *at >= '1' && *at <= '9';
}

/* Async-signal-safe. */
void ac_halt_now(void) {
  if (traced()) {
    raise(SIGTRAP);
    return; /* the debugger let the program go on */
  }
  struct sigaction dfl;
  memset(&dfl, 0, sizeof dfl);
  dfl.sa_handler = SIG_DFL;
  AC_LIBC_REAL(sigaction)(SIGABRT, &dfl, NULL);
  sigset_t abrt;
  sigemptyset(&abrt);
  sigaddset(&abrt, SIGABRT);
  syscall(SYS_rt_sigprocmask, SIG_UNBLOCK, &abrt, NULL, _NSIG / 8);
  abort();
}

void ac_halt_at_finding(const char *rule, bool from_reporter) {
  ac_report_halt(rule);
  if (from_reporter)
    __atomic_store_n(&halt_asked, rule, __ATOMIC_RELEASE);
  else
    ac_halt_now();
}

bool ac_halt_asked(void) {
  return __atomic_load_n(&halt_asked, __ATOMIC_ACQUIRE) != NULL;
}
