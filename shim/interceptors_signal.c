/* interceptors_signal.c - SIGSEGV for the page guard, shared with the program.
 *
 * The guard's handler is installed only when something is first protected.
 * From then on sigaction() and signal() for SIGSEGV are answered here: the
 * program's handler - installed before or after ours - is kept and called for
 * every fault that is not the guard's, and a program without one still dies
 * of a genuine crash exactly as it would without the shim. Other signals go
 * straight to libc.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <signal.h>
#include <string.h>
#include <ucontext.h>

#include "shim.h"

static __typeof__(&sigaction) real_sigaction;
static __typeof__(&signal) real_signal;
static struct sigaction program_segv; /* the program's own disposition */
static int installed;
static pthread_mutex_t disposition_lock = PTHREAD_MUTEX_INITIALIZER;

static void resolve_real(void) {
  if (!real_sigaction)
    real_sigaction = (__typeof__(real_sigaction))ac_real_dlsym(RTLD_NEXT, "sigaction");
  if (!real_signal) real_signal = (__typeof__(real_signal))ac_real_dlsym(RTLD_NEXT, "signal");
}

static void restore_default(int sig) {
  struct sigaction dfl;
  memset(&dfl, 0, sizeof dfl);
  dfl.sa_handler = SIG_DFL;
  real_sigaction(sig, &dfl, NULL);
}

/* What would have happened without the shim. */
static void chain_to_program(int sig, siginfo_t *info, void *uc) {
  struct sigaction p = program_segv;
  if (p.sa_flags & SA_SIGINFO) {
    p.sa_sigaction(sig, info, uc);
  } else if (p.sa_handler != SIG_DFL && p.sa_handler != SIG_IGN) {
    p.sa_handler(sig);
  } else {
    /* Default action (a fault cannot be ignored): die of it. A fault
     * re-executes and kills; a sent signal is raised again on return. */
    restore_default(sig);
    if (info->si_code <= 0) raise(sig);
  }
}

static void on_segv(int sig, siginfo_t *info, void *uc) {
  static __thread void *last_retry;
  static __thread int retries;
  if (info->si_code > 0) { /* a real fault, not a signal sent by kill/raise */
    bool is_write = (((ucontext_t *)uc)->uc_mcontext.gregs[REG_ERR] & 2) != 0;
    enum ac_guard_claim claim = ac_guard_on_fault(info->si_addr, is_write, uc);
    if (claim == AC_GUARD_HANDLED) {
      retries = 0;
      return;
    }
    if (claim == AC_GUARD_RETRY && (info->si_addr != last_retry || retries < 3)) {
      retries = info->si_addr == last_retry ? retries + 1 : 0;
      last_retry = info->si_addr;
      return;
    }
  }
  retries = 0;
  chain_to_program(sig, info, uc);
}

void ac_signal_install_guard_handler(void) {
  resolve_real();
  if (!real_sigaction) return;
  struct sigaction ours;
  memset(&ours, 0, sizeof ours);
  ours.sa_sigaction = on_segv;
  ours.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_RESTART;
  sigemptyset(&ours.sa_mask);
  pthread_mutex_lock(&disposition_lock);
  if (real_sigaction(SIGSEGV, &ours, &program_segv) == 0)
    __atomic_store_n(&installed, 1, __ATOMIC_RELEASE);
  pthread_mutex_unlock(&disposition_lock);
}

AC_EXPORT int sigaction(int sig, const struct sigaction *act, struct sigaction *old) {
  resolve_real();
  if (sig != SIGSEGV || !__atomic_load_n(&installed, __ATOMIC_ACQUIRE))
    return real_sigaction(sig, act, old);
  pthread_mutex_lock(&disposition_lock);
  if (old) *old = program_segv;
  if (act) program_segv = *act;
  pthread_mutex_unlock(&disposition_lock);
  return 0;
}

AC_EXPORT __sighandler_t signal(int sig, __sighandler_t handler) {
  resolve_real();
  if (sig != SIGSEGV || !__atomic_load_n(&installed, __ATOMIC_ACQUIRE))
    return real_signal(sig, handler);
  struct sigaction act, old;
  memset(&act, 0, sizeof act);
  act.sa_handler = handler;
  act.sa_flags = SA_RESTART; /* glibc's signal() has BSD semantics */
  sigaction(sig, &act, &old);
  /* A three-argument handler read back through signal() comes back as the
   * union member it shares storage with, as glibc does. */
  return old.sa_handler;
}
