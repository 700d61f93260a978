/* tp_signals.c - programs that manage signals themselves, around correct use
 * of managed memory: a thread with every signal blocked, a signalfd reader,
 * a handler on a tiny alternate stack, a one-shot crash handler and a timer
 * whose handler reads managed memory. Each prints what its handlers saw.
 *
 *   tp_signals CASE
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/signalfd.h>
#include <sys/time.h>
#include <unistd.h>

#include "tp.h"

enum { BUF = 1 << 20 };

static CUstream s;
static CUdeviceptr m;

static void setup(void) {
  tp_start();
  s = tp_stream();
  m = tp_managed(BUF, CU_MEM_ATTACH_GLOBAL);
}

/* A worker with every signal blocked synchronises, then writes and reads. */
static void *blocked_worker(void *arg) {
  sigset_t all;
  (void)arg;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, NULL);
  EXPECT_RC(cu.cuCtxSetCurrent(tp_ctx), CUDA_SUCCESS);
  EXPECT_RC(cu.cuStreamSynchronize(s), CUDA_SUCCESS);
  tp_fill((void *)m, BUF, 1);
  printf("worker sum %08x\n", tp_sum((void *)m, BUF));
  return NULL;
}

static void blocked_thread(void) {
  pthread_t t;
  setup();
  tp_launch(s, m);
  pthread_create(&t, NULL, blocked_worker, NULL);
  pthread_join(t, NULL);
}

/* Every signal blocked in every thread, read from a signalfd: only the one the
 * program sent arrives. */
static void signal_fd(void) {
  sigset_t all;
  sigfillset(&all);
  sigprocmask(SIG_SETMASK, &all, NULL);
  setup();
  int fd = signalfd(-1, &all, SFD_NONBLOCK);
  for (int i = 0; i < 50; i++) {
    tp_idle_after_work(s, m);
    ((volatile char *)m)[i * 4096] = (char)i;
  }
  kill(getpid(), SIGUSR1);
  struct signalfd_siginfo si;
  int n = 0;
  while (read(fd, &si, sizeof si) == (ssize_t)sizeof si)
    printf("signalfd: signal %d\n", si.ssi_signo), n++;
  printf("signals read %d\n", n);
  printf("sum %08x\n", tp_sum((void *)m, BUF));
}

/* ---- a handler on a 4 KiB alternate stack with a guard page below ---- */
static char *alt_lo, *alt_hi;
static sigjmp_buf recover;
static volatile sig_atomic_t on_alt[NSIG];

static void alt_handler(int sig, siginfo_t *info, void *uc) {
  char here;
  (void)info, (void)uc;
  on_alt[sig] = &here >= alt_lo && &here < alt_hi;
  if (sig == SIGSEGV) siglongjmp(recover, 1);
}

/* SIGUSR2's handler touches m on the alternate stack: any work attachcheck
 * does for that access (a fault, a finding) runs on what is left of 4 KiB. */
static void touch_handler(int sig, siginfo_t *info, void *uc) {
  char here;
  (void)info, (void)uc;
  on_alt[sig] = &here >= alt_lo && &here < alt_hi;
  ((volatile char *)m)[4096] = 2;
}

/* The smallest whole pages that hold the kernel's signal frame (MINSIGSTKSZ,
 * which grows with the CPU's register state) and a small handler: 4 KiB here. */
static size_t small_stack_size(long page) {
  long need = sysconf(_SC_MINSIGSTKSZ) + 512;
  return (size_t)((need < 4096 ? 4096 : need) + page - 1) / (size_t)page * (size_t)page;
}

static void install_altstack(void) {
  long page = sysconf(_SC_PAGESIZE);
  size_t size = small_stack_size(page);
  char *map = mmap(NULL, page + size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  mprotect(map, page, PROT_NONE); /* the stack grows down into this */
  alt_lo = map + page, alt_hi = map + page + size;
  stack_t ss = {.ss_sp = alt_lo, .ss_size = size};
  printf("sigaltstack %d\n", sigaltstack(&ss, NULL));
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_sigaction = alt_handler;
  sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
  sigaction(SIGUSR1, &sa, NULL);
  sigaction(SIGSEGV, &sa, NULL);
  sa.sa_sigaction = touch_handler;
  sigaction(SIGUSR2, &sa, NULL);
}

static void small_altstack(void) {
  install_altstack();
  setup();
  tp_launch(s, m); /* m guarded while s works; the program does not touch it */
  raise(SIGUSR1);
  char *none = mmap(NULL, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (sigsetjmp(recover, 1) == 0) *(volatile char *)none = 1;
  EXPECT_RC(cu.cuStreamSynchronize(s), CUDA_SUCCESS);
  raise(SIGUSR2); /* touches m, now idle */
  printf("on the alternate stack: SIGUSR1 %d, SIGSEGV %d, SIGUSR2 %d; m[4096] %d\n",
         on_alt[SIGUSR1], on_alt[SIGSEGV], on_alt[SIGUSR2], ((volatile char *)m)[4096]);
}

/* Wrong: the program touches m while s works, with its SIGSEGV handler on
 * the small stack (SA_ONSTACK): the guard's fault is delivered there, and its
 * work (judging, unwinding) must not overflow it (AC202, then on as bare).
 * A touch made from inside a handler already running on so small a stack
 * cannot be caught: the kernel has no room there for a second frame. */
static void altstack_busy_touch(void) {
  install_altstack();
  setup();
  tp_launch(s, m);
  ((volatile char *)m)[4096] = 2;
  EXPECT_RC(cu.cuStreamSynchronize(s), CUDA_SUCCESS);
  raise(SIGUSR1);
  printf("on the alternate stack: SIGUSR1 %d; m[4096] %d\n", on_alt[SIGUSR1],
         ((volatile char *)m)[4096]);
}

/* ---- a one-shot crash handler: runs once, then the default action kills ---- */
static void crash_handler(int sig) {
  sigset_t now;
  char line[80];
  sigprocmask(SIG_SETMASK, NULL, &now);
  int n = snprintf(line, sizeof line, "crash handler: SIGSEGV blocked %d, SIGUSR1 blocked %d\n",
                   sigismember(&now, sig), sigismember(&now, SIGUSR1));
  if (write(1, line, (size_t)n) < 0) _exit(3);
  /* returning re-runs the faulting store, now under SIG_DFL */
}

static void reset_hand(void) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = crash_handler;
  sa.sa_flags = SA_RESETHAND | SA_NODEFER;
  sigemptyset(&sa.sa_mask);
  sigaddset(&sa.sa_mask, SIGUSR1);
  sigaction(SIGSEGV, &sa, NULL);
  setup();
  tp_launch(s, m); /* m guarded while s works */
  printf("about to crash\n");
  fflush(stdout);
  volatile int *volatile nowhere = NULL;
  *nowhere = 1;
  printf("survived\n");
}

/* ---- a timer whose handler reads host-attached memory during launch loops ---- */
static CUdeviceptr h;
static volatile sig_atomic_t ticks;
static volatile int seen;

static void tick(int sig) {
  (void)sig;
  seen += *(volatile int *)h; /* host-attached: the CPU may read it at any time */
  ticks++;
}

static void timer_reads(void) {
  setup();
  h = tp_managed(4096, CU_MEM_ATTACH_HOST);
  *(volatile int *)h = 1;
  tp_ticks_start(tick, 200);
  for (int i = 0; i < 3000 || ticks < 20; i++)
    tp_idle_after_work(s, m);
  tp_ticks_stop();
  printf("at least 20 ticks %d, each read the value %d\n", ticks >= 20, ticks == seen);
}

/* ---- a SIGSEGV sent to a thread blocked in read(2) ---- */
static volatile sig_atomic_t sent_seen;
static int sent_pipe[2];
static pthread_t reader;

static void on_sent(int sig) {
  (void)sig;
  sent_seen++;
}

static void *send_then_write(void *arg) {
  (void)arg;
  usleep(100 * 1000);
  pthread_kill(reader, SIGSEGV);
  usleep(200 * 1000);
  if (write(sent_pipe[1], "x", 1) != 1) perror("write");
  return NULL;
}

/* The program's handler decides, by its SA_RESTART, whether the read is
 * restarted or fails with EINTR - the guard's handler, installed in front
 * of it, must not change that. */
static void read_once(int flags) {
  tp_handle(SIGSEGV, on_sent, flags);
  pthread_t t;
  char c;
  reader = pthread_self();
  if (pipe(sent_pipe) != 0) return;
  pthread_create(&t, NULL, send_then_write, NULL);
  ssize_t n = read(sent_pipe[0], &c, 1);
  int e = errno;
  pthread_join(t, NULL);
  printf("SA_RESTART %d: read %zd%s, handler ran %d\n", flags == SA_RESTART, n,
         n < 0 && e == EINTR ? " EINTR" : "", (int)sent_seen);
  close(sent_pipe[0]), close(sent_pipe[1]);
}

static void sent_segv_read(void) {
  setup();
  tp_launch(s, m); /* m guarded while s works: the guard's handler is in */
  EXPECT_RC(cu.cuStreamSynchronize(s), CUDA_SUCCESS);
  read_once(0);
  read_once(SA_RESTART);
}

/* ---- a status word polled beside busy memory, with traps of the program's ----
 * A 64-byte HOST-attached word and a 256-byte GLOBAL buffer on one page
 * (small allocations made one after the other share pages); while s works
 * on the buffer, two threads poll and write the word far more often than
 * the guard steps an allowed access, and the program raises SIGTRAP at its
 * own handler. The word is the CPU's, so nothing is a finding, every value
 * is right, and the program's handler sees its own traps, no more. */
static volatile sig_atomic_t own_traps;
static CUdeviceptr poll_word;

static void on_own_trap(int sig) {
  (void)sig;
  own_traps++;
}

static void *poll_many(void *arg) {
  volatile int *w = (volatile int *)poll_word + (arg ? 1 : 0);
  for (int i = 0; i < 2000; i++)
    *w += 1;
  return NULL;
}

static void shared_word_polls(void) {
  setup();
  CUdeviceptr buf = 0;
  for (int i = 0; i < 8 && (!buf || buf / 4096 != poll_word / 4096); i++) {
    buf = tp_managed(256, CU_MEM_ATTACH_GLOBAL);
    poll_word = tp_managed(64, CU_MEM_ATTACH_HOST);
  }
  tp_handle(SIGTRAP, on_own_trap, SA_RESTART);
  tp_launch(s, buf); /* the buffer is the GPU's until the synchronisation */
  pthread_t t;
  pthread_create(&t, NULL, poll_many, (void *)1);
  poll_many(NULL);
  raise(SIGTRAP);
  pthread_join(t, NULL);
  raise(SIGTRAP);
  EXPECT_RC(cu.cuStreamSynchronize(s), CUDA_SUCCESS);
  printf("same page %d, word %d %d, own traps %d\n", buf / 4096 == poll_word / 4096,
         ((volatile int *)poll_word)[0], ((volatile int *)poll_word)[1], (int)own_traps);
}

/* The program's own protection keys: a key of its own on a page of its own,
 * disabled, faults with its key and reaches its handler; the shim's
 * transitions leave the key as the program set it. Where the CPU has no
 * keys the case says so, the same bare and under attachcheck. */
static sigjmp_buf own_key_back;
static volatile int own_key_fault_key = -1;
static void on_own_key(int sig, siginfo_t *info, void *uc) {
  (void)sig, (void)uc;
  own_key_fault_key = info->si_code == SEGV_PKUERR ? (int)info->si_pkey : -2;
  siglongjmp(own_key_back, 1);
}

static void own_pkeys(void) {
  setup();
  int key = pkey_alloc(0, 0);
  if (key < 0) {
    printf("this CPU has no protection keys\n");
    return;
  }
  volatile int *page = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  pkey_mprotect((void *)page, 4096, PROT_READ | PROT_WRITE, key);
  struct sigaction act = {0};
  act.sa_sigaction = on_own_key;
  act.sa_flags = SA_SIGINFO;
  sigaction(SIGSEGV, &act, NULL);
  pkey_set(key, PKEY_DISABLE_ACCESS);
  for (int i = 0; i < 100; i++)
    tp_idle_after_work(s, m); /* transitions: the guard writes PKRU */
  printf("still disabled after CUDA work: %d\n", pkey_get(key) == PKEY_DISABLE_ACCESS);
  if (sigsetjmp(own_key_back, 1) == 0) {
    (void)*page;
    printf("no fault\n");
  } else {
    printf("faulted with its own key: %d\n", own_key_fault_key == key);
  }
  pkey_set(key, 0);
  *page = 7;
  tp_idle_after_work(s, m);
  printf("enabled again, read %d, still enabled: %d\n", *page, pkey_get(key) == 0);
  ((volatile char *)m)[0] = 1; /* managed memory, idle: the CPU's */
  printf("managed memory touched after\n");
}

static const struct scenario_case cases[] = {
    {"own_pkeys", own_pkeys},
    {"blocked_thread", blocked_thread},
    {"signalfd", signal_fd},
    {"small_altstack", small_altstack},
    {"altstack_busy_touch", altstack_busy_touch},
    {"reset_hand", reset_hand},
    {"timer_reads", timer_reads},
    {"sent_segv_read", sent_segv_read},
    {"shared_word_polls", shared_word_polls},
};

TP_MAIN(cases)
