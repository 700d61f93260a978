/* interceptors_signal.c - SIGSEGV (and SIGTRAP) for the page guard, shared
 * with the program.
 *
 * The guard's handler is installed only when something is first protected.
 * From then on sigaction() and signal() for SIGSEGV are answered here: the
 * program's handler - installed before or after ours - is kept and called,
 * exactly as the kernel would call it (its sa_mask, SA_NODEFER, SA_RESETHAND,
 * SA_ONSTACK), for every fault that is not the guard's; a program without one
 * still dies of a genuine crash exactly as it would without the shim.
 *
 * The guard must see its faults on every thread, so SIGSEGV is never blocked:
 * pthread_sigmask() and sigprocmask() leave it out of the mask the kernel gets
 * (and put it back in the old mask they report), and handlers of other
 * signals are installed without it in their sa_mask. A thread pool that
 * blocks every signal, or a handler of SIGALRM that reads managed memory,
 * then works as without the shim.
 *
 * The handler's own work (the model, the unwinder) runs on a private stack of
 * its thread, not on the interrupted one: a program's small alternate signal
 * stack holds only the kernel's frame and a few words of ours.
 *
 * SIGTRAP ends a forbidden access the guard stepped through (step.c). Its
 * handler is installed the first time a step is wanted - only a program with
 * a finding ever has one - and is shared with the program the same way:
 * sigaction() reads and sets the program's own disposition, and every trap
 * that is not the end of a step goes to it as the kernel would deliver it.
 * SIGTRAP stays in the masks the program asks for: the step takes it out of
 * the stepped instruction's mask alone.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <signal.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <ucontext.h>
#include <unistd.h>

#include "fault_esr.h"
#include "fault_retry.h"
#include "libc_real.h"
#include "shim.h"

#define real_sigaction AC_LIBC_REAL(sigaction)
#define real_pthread_sigmask AC_LIBC_REAL(pthread_sigmask)
#define real_sigprocmask AC_LIBC_REAL(sigprocmask)
static struct sigaction program_segv; /* the program's own disposition */
static int installed;
static struct sigaction program_trap; /* SIGTRAP's, once ours is installed */
static int trap_installed;            /* atomic */

/* The program's own disposition of sig, SIGSEGV or SIGTRAP (disposition
 * lock). */
static struct sigaction *program_action_of(int sig) {
  return sig == SIGTRAP ? &program_trap : &program_segv;
}

/* ---- the guard's handler ---- */

/* The thread's private stack for the handler's work, made on first need
 * (mmap is async-signal-safe). */
#define PRIVATE_STACK_SIZE ((size_t)256 << 10)
static __thread char *private_stack;
static __thread bool on_private_stack;

struct fault {
  siginfo_t *info;
  ucontext_t *uc;
  enum ac_guard_claim claim;
  unsigned epoch; /* with AC_GUARD_RETRY: the guard's protection it was judged under */
};
/* --on-error halt: an error was found in this thread's fault, and reported.
 * Not in struct fault: on_segv's frame may be on a program's alternate stack
 * with a few hundred bytes to spare, and every word there counts (a sanitizer
 * build pads each local). */
static __thread bool halt_here;

static void judge(void *arg) {
  struct fault *f = arg;
#if defined(__x86_64__)
  bool is_write = (f->uc->uc_mcontext.gregs[REG_ERR] & 2) != 0;
  uintptr_t pc = (uintptr_t)f->uc->uc_mcontext.gregs[REG_RIP];
#elif defined(__aarch64__)
  /* Where the frame does not say (qemu-user), judged as a write, the stricter. */
  bool is_write = ac_esr_fault_is_write(f->uc->uc_mcontext.__reserved,
                                        sizeof f->uc->uc_mcontext.__reserved) != 0;
  uintptr_t pc = (uintptr_t)f->uc->uc_mcontext.pc;
#else
  bool is_write = true; /* not told: judged as the stricter of the two */
  uintptr_t pc = 0;
#endif
#ifdef SEGV_PKUERR
  int pkey = f->info->si_code == SEGV_PKUERR ? (int)f->info->si_pkey : -1;
#else
  int pkey = -1;
#endif
  unsigned left = ac_guard_findings_left_here();
  f->claim = ac_guard_on_fault(f->info->si_addr, is_write, pc, pkey, f->uc, &f->epoch);
  /* --on-error halt: the reporter says whether the finding left here is an
   * error no suppression matched; then this thread stops over the access. */
  if (ac_opts.on_error == AC_ON_ERROR_HALT && ac_guard_findings_left_here() != left) {
    ac_guard_wait_reported(10000);
    halt_here = ac_halt_asked();
  }
  /* Managed memory that faults again once the guard let it go is refused by
   * the driver itself (a Jetson's GPU owns it while work is pending): the
   * retries may end in the genuine crash, so what was found goes out first. */
  if (f->claim == AC_GUARD_RETRY) ac_guard_wait_reported(1000);
}

/* Runs fn(arg) on the thread's private stack when there is one to switch to. */
static void run_on_private_stack(void (*fn)(void *), void *arg) {
#if defined(__x86_64__) || defined(__aarch64__)
  if (!private_stack && !on_private_stack) {
    void *p = mmap(NULL, PRIVATE_STACK_SIZE, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
    if (p != MAP_FAILED) private_stack = p;
  }
  if (private_stack && !on_private_stack) {
    on_private_stack = true;
    uintptr_t top = ((uintptr_t)private_stack + PRIVATE_STACK_SIZE) & ~(uintptr_t)15;
#if defined(__x86_64__)
    /* rbx keeps the interrupted stack pointer across the call (callee-saved). */
    __asm__ volatile("mov %%rsp, %%rbx\n\t"
                     "mov %[top], %%rsp\n\t"
                     "call *%[fn]\n\t"
                     "mov %%rbx, %%rsp"
                     : [fn] "+a"(fn), "+D"(arg), [top] "+c"(top)
                     :
                     : "rbx", "rdx", "rsi", "r8", "r9", "r10", "r11", "memory", "cc", "xmm0",
                       "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9",
                       "xmm10", "xmm11", "xmm12", "xmm13", "xmm14", "xmm15");
#else
    /* x19 keeps the interrupted stack pointer across the call (callee-saved);
     * the clobbers are what AAPCS64 lets fn change: x0-x18, x30 and the
     * vector registers (of v8-v15 fn keeps only the low halves). */
    register void (*fn_reg)(void *) __asm__("x16") = fn;
    register void *arg_reg __asm__("x0") = arg;
    register uintptr_t top_reg __asm__("x17") = top;
    __asm__ volatile("mov x19, sp\n\t"
                     "mov sp, %[top]\n\t"
                     "blr %[fn]\n\t"
                     "mov sp, x19"
                     : [fn] "+r"(fn_reg), "+r"(arg_reg), [top] "+r"(top_reg)
                     :
                     : "x1", "x2", "x3", "x4", "x5", "x6", "x7", "x8", "x9", "x10", "x11", "x12",
                       "x13", "x14", "x15", "x18", "x19", "x30", "memory", "cc", "v0", "v1", "v2",
                       "v3", "v4", "v5", "v6", "v7", "v8", "v9", "v10", "v11", "v12", "v13", "v14",
                       "v15", "v16", "v17", "v18", "v19", "v20", "v21", "v22", "v23", "v24", "v25",
                       "v26", "v27", "v28", "v29", "v30", "v31");
#endif
    on_private_stack = false;
    return;
  }
#endif
  fn(arg);
}

static void restore_default(int sig) {
  struct sigaction dfl;
  memset(&dfl, 0, sizeof dfl);
  dfl.sa_handler = SIG_DFL;
  real_sigaction(sig, &dfl, NULL);
}

/* The thread's mask as given: not through pthread_sigmask, whose wrapper
 * (below) keeps SIGSEGV out of every mask. */
static void set_thread_mask(const sigset_t *set, sigset_t *old) {
  syscall(SYS_rt_sigprocmask, SIG_SETMASK, set, old, _NSIG / 8);
}

/* What would have happened without the shim: the kernel's delivery of the
 * program's disposition. */
static void chain_to_program(int sig, siginfo_t *info, ucontext_t *uc) {
  ac_lock(AC_LOCK_disposition);
  struct sigaction *own = program_action_of(sig), p = *own;
  if ((p.sa_flags & SA_RESETHAND) && p.sa_handler != SIG_DFL && p.sa_handler != SIG_IGN) {
    memset(own, 0, sizeof *own);
    own->sa_handler = SIG_DFL;
  }
  ac_unlock(AC_LOCK_disposition);
  if (p.sa_handler == SIG_IGN && info->si_code <= 0) return; /* sent, and ignored */
  if (p.sa_handler == SIG_DFL || p.sa_handler == SIG_IGN) {
    /* Default action (a fault cannot be ignored): die of it. A fault
     * re-executes and kills; a trap does not re-execute, and a sent signal
     * is raised again on return. */
    restore_default(sig);
    if (info->si_code <= 0 || sig == SIGTRAP) raise(sig);
    return;
  }
  sigset_t during = uc->uc_sigmask, inside;
  sigorset(&during, &during, &p.sa_mask);
  if (sig == SIGTRAP) sigdelset(&during, SIGSEGV); /* never blocked (above) */
  if (!(p.sa_flags & SA_NODEFER))
    sigaddset(&during, sig);
  else
    sigdelset(&during, sig);
  set_thread_mask(&during, &inside);
  if (p.sa_flags & SA_SIGINFO)
    p.sa_sigaction(sig, info, uc);
  else
    p.sa_handler(sig);
  set_thread_mask(&inside, NULL);
}

static void on_segv(int sig, siginfo_t *info, void *context) {
  static __thread struct ac_fault_retry retry;
  ucontext_t *uc = context;
  if (info->si_code > 0) { /* a real fault, not a signal sent by kill/raise */
    struct fault f = {info, uc, AC_GUARD_NOT_OURS, 0};
    run_on_private_stack(judge, &f);
    if (halt_here) ac_halt_now(); /* on the faulting thread's own stack: a core shows the access */
    /* Handled: under keys a retried page can fault on its key first
     * (handled) and then be refused again by the driver; the count of
     * retries goes on through that, which keeps them finite. */
    if (f.claim == AC_GUARD_HANDLED) return;
    if (f.claim == AC_GUARD_RETRY && ac_fault_retry(&retry, info->si_addr, f.epoch)) return;
  }
  chain_to_program(sig, info, uc);
}

static void end_step(void *uc) {
  ac_guard_step_end(uc);
}

static void on_trap(int sig, siginfo_t *info, void *context) {
  if (ac_guard_trap_ends_step(info->si_code)) {
    run_on_private_stack(end_step, context);
    return;
  }
  chain_to_program(sig, info, context);
}

/* Ours mirrors the program's SA_ONSTACK: its faults are delivered on the
 * stack the program asked for, and no other. And its SA_RESTART where it has
 * a handler: the guard's own faults and traps come from an instruction,
 * never inside a system call, so the flag only decides what a signal sent
 * by kill() to a thread in a system call does - which is the program's
 * handler's business (EINTR without it). Without a handler of the program's
 * such a signal kills it or was ignored: restarting is the nearest to that.
 * Lock held. */
static int install_ours_locked(int sig) {
  const struct sigaction *program = program_action_of(sig);
  bool handled = (program->sa_flags & SA_SIGINFO) ||
                 (program->sa_handler != SIG_DFL && program->sa_handler != SIG_IGN);
  struct sigaction ours;
  memset(&ours, 0, sizeof ours);
  ours.sa_sigaction = sig == SIGTRAP ? on_trap : on_segv;
  ours.sa_flags = SA_SIGINFO | (program->sa_flags & SA_ONSTACK) |
                  (handled ? program->sa_flags & SA_RESTART : SA_RESTART);
  sigemptyset(&ours.sa_mask);
  return real_sigaction(sig, &ours, NULL);
}

void ac_signal_install_guard_handler(void) {
  ac_lock(AC_LOCK_disposition);
  if (real_sigaction(SIGSEGV, NULL, &program_segv) == 0 && install_ours_locked(SIGSEGV) == 0)
    __atomic_store_n(&installed, 1, __ATOMIC_RELEASE);
  ac_unlock(AC_LOCK_disposition);
}

static void as_program_set(int sig, struct sigaction *k);

bool ac_signal_install_step_handler(void) {
  if (__atomic_load_n(&trap_installed, __ATOMIC_ACQUIRE)) return true;
  ac_lock(AC_LOCK_disposition);
  if (!trap_installed && real_sigaction(SIGTRAP, NULL, &program_trap) == 0) {
    /* The program's own handler, not the trampoline it may sit behind
     * (below): read back and chained as the program set it. */
    as_program_set(SIGTRAP, &program_trap);
    if (install_ours_locked(SIGTRAP) == 0) __atomic_store_n(&trap_installed, 1, __ATOMIC_RELEASE);
  }
  ac_unlock(AC_LOCK_disposition);
  return trap_installed;
}

/* ---- the program's view ---- */

/* Whether the program asked this thread to block SIGSEGV (it is not). */
static __thread bool program_blocks_segv;

static void without_segv(sigset_t *copy, const sigset_t *set) {
  *copy = *set;
  sigdelset(copy, SIGSEGV);
}

static void note_program_mask(int how, const sigset_t *set) {
  bool has = sigismember(set, SIGSEGV) == 1;
  if (how == SIG_SETMASK)
    program_blocks_segv = has;
  else if (how == SIG_BLOCK && has)
    program_blocks_segv = true;
  else if (how == SIG_UNBLOCK && has)
    program_blocks_segv = false;
}

static int masked_call(__typeof__(&sigprocmask) real, int how, const sigset_t *set, sigset_t *old) {
  bool blocked_before = program_blocks_segv;
  sigset_t copy;
  if (set) without_segv(&copy, set);
  int r = real(how, set ? &copy : NULL, old);
  if (r == 0 && set) note_program_mask(how, set);
  if (r == 0 && old && blocked_before) sigaddset(old, SIGSEGV);
  return r;
}

AC_EXPORT int pthread_sigmask(int how, const sigset_t *set, sigset_t *old) {
  return masked_call(real_pthread_sigmask, how, set, old);
}

AC_EXPORT int sigprocmask(int how, const sigset_t *set, sigset_t *old) {
  return masked_call(real_sigprocmask, how, set, old);
}

/* ---- other signals' handlers, whose sa_mask may hold SIGSEGV ----
 *
 * The kernel gets such a handler's mask without SIGSEGV (a handler that
 * touches managed memory stays guarded), so what the program reads back is
 * put right here: its mask with SIGSEGV, and - for a handler, which the
 * shim installs behind a trampoline that makes SIGSEGV read as blocked
 * while it runs, as the program asked - its own handler and flags. The
 * table is read in the trampoline, in signal context: each field alone, no
 * lock (the disposition lock guards its writers). */
struct program_action {
  void *handler; /* atomic: the program's handler (sa_handler or sa_sigaction) */
  int flags;     /* atomic: the program's sa_flags */
  int mask_segv; /* atomic: its sa_mask held SIGSEGV */
  int behind;    /* atomic: the kernel has the trampoline in its place */
};
static struct program_action actions[_NSIG];

static void trampoline(int sig, siginfo_t *info, void *uc) {
  struct program_action *a = &actions[sig];
  void *handler = __atomic_load_n(&a->handler, __ATOMIC_ACQUIRE);
  int flags = __atomic_load_n(&a->flags, __ATOMIC_ACQUIRE);
  /* SA_RESETHAND: the kernel put SIG_DFL in place of the trampoline. */
  if (flags & SA_RESETHAND) __atomic_store_n(&a->handler, (void *)SIG_DFL, __ATOMIC_RELEASE);
  bool blocked_before = program_blocks_segv;
  program_blocks_segv = true; /* as its sa_mask asked, though the kernel's mask lacks it */
  if (flags & SA_SIGINFO)
    ((void (*)(int, siginfo_t *, void *))handler)(sig, info, uc);
  else if (handler != (void *)SIG_DFL && handler != (void *)SIG_IGN)
    ((void (*)(int))handler)(sig);
  program_blocks_segv = blocked_before;
}

/* The flags a program sets; the kernel's action has others beside them that
 * the C library sets (SA_RESTORER, on x86-64, with its restorer). */
#define PROGRAM_FLAGS                                                                              \
  (SA_SIGINFO | SA_RESETHAND | SA_NODEFER | SA_RESTART | SA_ONSTACK | SA_NOCLDSTOP | SA_NOCLDWAIT)

/* The kernel's action for sig as the program set it (disposition lock). */
static void as_program_set(int sig, struct sigaction *k) {
  struct program_action *a = &actions[sig];
  if (__atomic_load_n(&a->mask_segv, __ATOMIC_ACQUIRE)) sigaddset(&k->sa_mask, SIGSEGV);
  if (k->sa_sigaction != trampoline) return;
  int kernel_only = k->sa_flags & ~PROGRAM_FLAGS;
  k->sa_sigaction =
      (void (*)(int, siginfo_t *, void *))__atomic_load_n(&a->handler, __ATOMIC_ACQUIRE);
  k->sa_flags = __atomic_load_n(&a->flags, __ATOMIC_ACQUIRE) | kernel_only;
}

static int other_sigaction(int sig, const struct sigaction *act, struct sigaction *old) {
  if (sig <= 0 || sig >= _NSIG) return real_sigaction(sig, act, old);
  ac_lock(AC_LOCK_disposition);
  struct program_action before = actions[sig];
  struct sigaction copy;
  if (act) {
    copy = *act;
    bool segv = sigismember(&act->sa_mask, SIGSEGV) == 1;
    sigdelset(&copy.sa_mask, SIGSEGV);
    bool behind = segv && act->sa_handler != SIG_DFL && act->sa_handler != SIG_IGN;
    if (behind) { /* filled before the kernel can call the trampoline */
      __atomic_store_n(&actions[sig].handler, (void *)act->sa_sigaction, __ATOMIC_RELEASE);
      __atomic_store_n(&actions[sig].flags, act->sa_flags, __ATOMIC_RELEASE);
      copy.sa_sigaction = trampoline;
      copy.sa_flags |= SA_SIGINFO;
    }
    __atomic_store_n(&actions[sig].mask_segv, segv, __ATOMIC_RELEASE);
    __atomic_store_n(&actions[sig].behind, behind, __ATOMIC_RELEASE);
  }
  int r = real_sigaction(sig, act ? &copy : NULL, old);
  if (r != 0 && act) actions[sig] = before;
  if (r == 0 && old) {
    struct program_action now = actions[sig];
    actions[sig] = before; /* old is the action before this call */
    as_program_set(sig, old);
    actions[sig] = now;
  }
  ac_unlock(AC_LOCK_disposition);
  return r;
}

/* Whether the C library reads the restorer back from the kernel: x86-64's
 * glibc gives every action its own restorer and reads it back; aarch64's has
 * none and leaves the field of the caller's struct as it was. */
#if defined(__x86_64__)
#define RESTORER_READ_BACK 1
#else
#define RESTORER_READ_BACK 0
#endif

/* SIGSEGV's (SIGTRAP's) action as the program set it, with what glibc gives the kernel
 * beside it (SA_RESTORER and its restorer, on x86-64): the same as those of
 * the action installed in its place (disposition lock). */
static void with_kernel_fields(int sig, struct sigaction *a) {
  struct sigaction k;
  memset(&k, 0, sizeof k);
  if (real_sigaction(sig, NULL, &k) != 0) return;
  a->sa_flags = (a->sa_flags & PROGRAM_FLAGS) | (k.sa_flags & ~PROGRAM_FLAGS);
  if (RESTORER_READ_BACK) a->sa_restorer = k.sa_restorer;
}

AC_EXPORT int sigaction(int sig, const struct sigaction *act, struct sigaction *old) {
  bool ours = sig == SIGSEGV   ? __atomic_load_n(&installed, __ATOMIC_ACQUIRE)
              : sig == SIGTRAP ? __atomic_load_n(&trap_installed, __ATOMIC_ACQUIRE)
                               : false;
  if (!ours) return other_sigaction(sig, act, old);
  ac_lock(AC_LOCK_disposition);
  struct sigaction *own = program_action_of(sig);
  if (old) {
    void (*untouched)(void) = old->sa_restorer;
    *old = *own;
    if (!RESTORER_READ_BACK) old->sa_restorer = untouched;
  }
  if (act) {
    *own = *act;
    install_ours_locked(sig);
    with_kernel_fields(sig, own);
  }
  ac_unlock(AC_LOCK_disposition);
  return 0;
}

/* glibc's signal(): BSD semantics - SA_RESTART, and the signal blocked in
 * its own handler - through sigaction, so that its action reads back alike. */
AC_EXPORT __sighandler_t signal(int sig, __sighandler_t handler) {
  struct sigaction act, old;
  memset(&act, 0, sizeof act);
  act.sa_handler = handler;
  act.sa_flags = SA_RESTART;
  sigemptyset(&act.sa_mask);
  if (sig > 0 && sig < _NSIG) sigaddset(&act.sa_mask, sig);
  if (sigaction(sig, &act, &old) != 0) return SIG_ERR;
  /* A three-argument handler read back through signal() comes back as the
   * union member it shares storage with, as glibc does. */
  return old.sa_handler;
}
