/* tp_readback.c - what a program reads back of what it set must be what it
 * set, with a checker in the process: signal dispositions, signal masks,
 * protection keys. Each case runs after the page guard is up (memory was
 * busy once) and prints what it read back.
 *
 *   tp_readback sigaction        SIGSEGV's handler installed with SIGSEGV and
 *                                SIGUSR1 in its mask and SA_SIGINFO|SA_ONSTACK|
 *                                SA_RESTART, read back with sigaction(NULL):
 *                                the same mask and flags (glibc's SA_RESTORER
 *                                and restorer too); SIGUSR1's handler with a
 *                                full mask, read back the same
 *   tp_readback mask_in_handler  inside a handler installed with a full
 *                                sa_mask, pthread_sigmask and sigprocmask
 *                                read back every signal blocked (SIGSEGV too)
 *   tp_readback pkeys            pkey_alloc until it fails, after CUDA
 *                                started: as many keys as bare ("no
 *                                protection keys" where the CPU has none)
 */
#define _GNU_SOURCE
#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include "tp.h"

static CUstream s;
static CUdeviceptr m;

static void setup(void) {
  tp_start();
  s = tp_stream();
  m = tp_managed(1 << 20, CU_MEM_ATTACH_GLOBAL);
  tp_idle_after_work(s, m); /* the guard protected m once: its handler is in */
}

/* The signals of a mask, as a list of numbers. */
static void print_mask(const char *what, const sigset_t *set) {
  printf("%s:", what);
  for (int sig = 1; sig < NSIG; sig++)
    if (sigismember(set, sig) == 1) printf(" %d", sig);
  printf("\n");
}

static void on_segv(int sig, siginfo_t *info, void *uc) {
  (void)sig, (void)info, (void)uc;
}

static void on_usr1(int sig) {
  (void)sig;
}

static void print_action(const char *what, const struct sigaction *sa, void *handler) {
  printf("%s: handler ours %s, flags %#x\n", what,
         (void *)sa->sa_sigaction == handler ? "yes" : "no", (unsigned)sa->sa_flags);
  print_mask("  mask", &sa->sa_mask);
}

static void sigaction_case(void) {
  setup();
  struct sigaction sa, old, usr1_old;
  memset(&sa, 0, sizeof sa);
  sa.sa_sigaction = on_segv;
  sa.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_RESTART;
  sigemptyset(&sa.sa_mask);
  sigaddset(&sa.sa_mask, SIGSEGV);
  sigaddset(&sa.sa_mask, SIGUSR1);
  printf("sigaction SIGSEGV = %d\n", sigaction(SIGSEGV, &sa, NULL));
  memset(&old, 0, sizeof old);
  printf("read back = %d\n", sigaction(SIGSEGV, NULL, &old));
  print_action("SIGSEGV", &old, (void *)on_segv);

  struct sigaction usr1;
  memset(&usr1, 0, sizeof usr1);
  usr1.sa_handler = on_usr1;
  sigfillset(&usr1.sa_mask);
  printf("sigaction SIGUSR1 = %d\n", sigaction(SIGUSR1, &usr1, NULL));
  memset(&usr1_old, 0, sizeof usr1_old);
  printf("read back = %d\n", sigaction(SIGUSR1, NULL, &usr1_old));
  print_action("SIGUSR1", &usr1_old, (void *)on_usr1);
  /* glibc gives the kernel its own restorer: the same for every signal */
  printf("SIGSEGV's restorer is SIGUSR1's: %s\n",
         old.sa_restorer == usr1_old.sa_restorer ? "yes" : "no");

  /* again after more transitions: the guard may have re-installed its own */
  for (int i = 0; i < 5; i++)
    tp_idle_after_work(s, m);
  memset(&old, 0, sizeof old);
  sigaction(SIGSEGV, NULL, &old);
  print_action("SIGSEGV after work", &old, (void *)on_segv);
  /* the old action handed back by an install is the one read back */
  struct sigaction swapped;
  memset(&swapped, 0, sizeof swapped);
  sigaction(SIGSEGV, &sa, &swapped);
  print_action("SIGSEGV as replaced", &swapped, (void *)on_segv);
}

static sigset_t in_handler, in_handler_proc;

static void reads_mask(int sig) {
  (void)sig;
  pthread_sigmask(SIG_BLOCK, NULL, &in_handler);
  sigprocmask(SIG_BLOCK, NULL, &in_handler_proc);
}

static void mask_in_handler(void) {
  setup();
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = reads_mask;
  sigfillset(&sa.sa_mask);
  sigaction(SIGUSR1, &sa, NULL);
  tp_launch(s, m); /* busy while the handler runs: the guard is armed */
  raise(SIGUSR1);
  EXPECT_RC(cu.cuStreamSynchronize(s), CUDA_SUCCESS);
  print_mask("pthread_sigmask in the handler", &in_handler);
  print_mask("sigprocmask in the handler", &in_handler_proc);
  sigset_t now;
  pthread_sigmask(SIG_BLOCK, NULL, &now);
  print_mask("after the handler", &now);
  /* blocked by the program itself: read back as set */
  sigset_t all;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, NULL);
  pthread_sigmask(SIG_BLOCK, NULL, &now);
  print_mask("after blocking all", &now);
  sigset_t none;
  sigemptyset(&none);
  sigset_t was;
  pthread_sigmask(SIG_SETMASK, &none, &was);
  print_mask("handed back when unblocking all", &was);
}

static void pkeys(void) {
  setup();
  int keys[32], n = 0;
  for (; n < 32; n++) {
    keys[n] = pkey_alloc(0, 0);
    if (keys[n] < 0) break;
    tp_idle_after_work(s, m); /* transitions between allocations */
  }
  if (n == 0 && (errno == ENOSYS || errno == EINVAL || errno == ENOSPC))
    printf("no protection keys (pkey_alloc: %s)\n", strerrorname_np(errno));
  else
    printf("pkey_alloc gave %d keys, then errno %s\n", n, strerrorname_np(errno));
  for (int i = 0; i < n; i++)
    pkey_free(keys[i]);
}

static const struct scenario_case cases[] = {
    {"sigaction", sigaction_case}, {"mask_in_handler", mask_in_handler}, {"pkeys", pkeys}};

TP_MAIN(cases)
