/* step.c - one forbidden access stepped through, its page closed again after.
 *
 * A judged fault must let its access complete. Where the keys can open the
 * page to the faulting thread alone they do (keys_fault.c); where the page is
 * closed with mprotect - the mprotect backend, and the keys' pages shared
 * between classes - opening it opens it to every thread, and another thread's
 * access to it in the same busy period would go unseen. On x86-64 the access
 * is stepped instead: the page is opened, the trap flag set in the faulting
 * thread's signal frame, and after that one instruction the CPU raises
 * SIGTRAP, whose handler (interceptors_signal.c) closes the page again.
 * Every thread's first access to the page in the busy period is then judged.
 *
 * An access that was a finding is stepped, and so is an allowed access to a
 * page shared with forbidden memory (a HOST-attached word beside a busy
 * GLOBAL buffer): let go to every thread, such a page would hide the next
 * access to its forbidden part, the same thread's included. A correct
 * program that touches no such page never pays for a step nor sees a
 * SIGTRAP handler of ours. The same thread's later accesses to a page it
 * was judged on are stepped without being judged again (one finding per
 * thread and page, as with the keys); those to a page where it was only
 * allowed are judged each. Either way up to AC_GUARD_STEPS_PER_PAGE steps a
 * page each busy period; past them - a loop over the page - the page is let
 * go to every thread, as it was before.
 *
 * With protection keys a page is lifted for its thread alone, by the lift
 * key (keys_fault.c) - but for all its accesses in the busy period, so an
 * allowed access to a page shared with forbidden memory would hide the same
 * thread's next access to the forbidden part. Such an access is stepped
 * with the lift key granted in its frame for the one instruction and taken
 * back at the trap; the page keeps the lift key, and the thread's next
 * access there faults and is judged again.
 *
 * aarch64 has no user-mode single step: there the access is carried out by
 * the handler instead (emulate_a64.c), on the registers its signal frame
 * holds, with the page open for that alone, and the frame's program counter
 * moved past it. Plain loads and stores are, load-acquire and store-release,
 * and the LSE atomics (CASP too), and vector structures (multiple, or one
 * structure's lanes); an instruction the emulator leaves alone (exclusives)
 * lets the page go to every thread until the next transition, as before.
 *
 * While a page is open for a step, another thread's access to it goes
 * unseen: the window lasts from the fault handler's return through the
 * instruction and the trap's delivery to its handler's close. --verbose
 * tells how long it was open at most and on average (measured on the
 * mprotect backend's pages; the lift key's step opens nothing to others).
 *
 * A stepped page is also listed as lifted (fault.c), so that a step whose
 * trap never comes - the frame holding the flag left by siglongjmp from a
 * handler that ran before the instruction - leaves the guard's book right:
 * the page is open, and the next transition protects it again.
 */
#define _GNU_SOURCE
#include <signal.h>
#include <string.h>
#include <sys/mman.h>
#include <ucontext.h>

#include "emulate_a64.h"
#include "fault_esr.h"
#include "guard_internal.h"
#include "shim.h"
#include "sys.h"

#define STEP_PAGES_MAX 4 /* pages one instruction opened (a copy across pages) */
#define JUDGED_MAX 16    /* pages this thread was judged on, this busy period */

/* The pages this thread's current step opened, and the busy period it began
 * in (ac_guard.settles: a transition in between protected them again). */
struct step {
  uintptr_t page[STEP_PAGES_MAX];
  unsigned n;
  uint64_t settles;
  double opened_at;      /* --verbose: when the first of its pages was opened */
  bool lift;             /* the keys' lift key granted for this one instruction */
  bool trap_was_blocked; /* in the program's mask: put back after the step */
};
static __thread struct step step;

/* The pages this thread was judged on in busy period `settles`, with the
 * steps taken on each and whether a finding was made there (else every
 * access there was allowed). */
static __thread struct {
  uint64_t settles;
  uintptr_t page[JUDGED_MAX];
  unsigned steps[JUDGED_MAX];
  bool found[JUDGED_MAX];
  unsigned n;
} judged;

static int judged_index(uintptr_t page) {
  if (judged.settles != ac_guard.settles) {
    judged.settles = ac_guard.settles;
    judged.n = 0;
  }
  for (unsigned i = 0; i < judged.n; i++)
    if (judged.page[i] == page) return (int)i;
  return -1;
}

bool ac_guard_step_judged_here(uintptr_t page) {
  AC_ASSERT_MODEL_HELD();
  int i = judged_index(page);
  return i >= 0 && judged.found[i];
}

void ac_guard_step_note_judged(uintptr_t page, bool found) {
  AC_ASSERT_MODEL_HELD();
  int i = judged_index(page);
  if (i < 0 && judged.n < JUDGED_MAX) {
    i = (int)judged.n++;
    judged.page[i] = page;
    judged.steps[i] = 0;
    judged.found[i] = false;
  }
  if (i >= 0 && found) judged.found[i] = true;
}

#if defined(__x86_64__)
#define TRAP_FLAG 0x100 /* EFLAGS.TF */

/* The trap flag set in the frame for the access, the page's step counted
 * (judged index i); false where no handler could end it. */
static bool arm_frame(int i, ucontext_t *uc) {
  if ((step.n || step.lift) && step.settles != ac_guard.settles) /* a step that never ended */
    step.n = 0, step.lift = false;
  if (!ac_signal_install_step_handler()) return false;
  if (!step.n && !step.lift) {
    step.settles = ac_guard.settles;
    step.trap_was_blocked = sigismember(&uc->uc_sigmask, SIGTRAP) == 1;
  }
  sigdelset(&uc->uc_sigmask, SIGTRAP); /* a blocked trap would kill the program */
  judged.steps[i]++;
  uc->uc_mcontext.gregs[REG_EFL] |= TRAP_FLAG;
  ac_guard.stats.steps++;
  return true;
}

bool ac_guard_step_arm(uintptr_t page, void *ucontext) {
  AC_ASSERT_MODEL_HELD();
  int i = judged_index(page);
  if (!ucontext || i < 0 || judged.steps[i] >= AC_GUARD_STEPS_PER_PAGE) return false;
  if (step.n == STEP_PAGES_MAX && step.settles == ac_guard.settles) return false;
  if (!arm_frame(i, ucontext)) return false;
  if (!step.n && ac_opts.verbose) step.opened_at = ac_sys_now_seconds();
  step.page[step.n++] = page;
  return true;
}

bool ac_guard_step_arm_lift(uintptr_t page, void *ucontext) {
  AC_ASSERT_MODEL_HELD();
  int i = judged_index(page);
  if (!ucontext || i < 0 || judged.found[i] || judged.steps[i] >= AC_GUARD_STEPS_PER_PAGE)
    return false;
  if (!arm_frame(i, ucontext)) return false;
  step.lift = true;
  return true;
}

bool ac_guard_trap_ends_step(int si_code) {
  return (step.n != 0 || step.lift) && si_code > 0 && si_code != SI_KERNEL; /* not an int3's */
}

bool ac_guard_step_emulate(uintptr_t page, void *ucontext) {
  (void)page, (void)ucontext;
  return false; /* stepped instead */
}

void ac_guard_step_end(void *ucontext) {
  ucontext_t *uc = ucontext;
  uc->uc_mcontext.gregs[REG_EFL] &= ~(greg_t)TRAP_FLAG;
  if (step.trap_was_blocked) sigaddset(&uc->uc_sigmask, SIGTRAP);
  if (step.lift) ac_guard_keys_end_lift_step(ucontext); /* this thread's own: no lock */
  step.lift = false;
  if (!step.n) return;
  ac_model_enter();
  /* After a transition the refresh settled these pages itself. */
  for (unsigned i = 0; i < step.n && step.settles == ac_guard.settles; i++)
    ac_guard_unlift_page(step.page[i]);
  if (ac_opts.verbose && step.settles == ac_guard.settles) {
    /* How long every thread could reach the pages unseen (step.c's head). */
    double open = ac_sys_now_seconds() - step.opened_at;
    ac_guard.stats.step_open_seconds += open;
    if (open > ac_guard.stats.step_open_longest) ac_guard.stats.step_open_longest = open;
    ac_guard.stats.steps_timed++;
  }
  step.n = 0;
  ac_model_leave_as_is();
}
#elif defined(__aarch64__)
bool ac_guard_step_emulate(uintptr_t page, void *ucontext) {
  AC_ASSERT_MODEL_HELD();
  ucontext_t *uc = ucontext;
  int i = judged_index(page);
  if (!uc || i < 0 || judged.steps[i] >= AC_GUARD_STEPS_PER_PAGE) return false;
  /* A fault inside this handler would kill the program: where the driver
   * may refuse the access whatever the guard opened (a Jetson's GPU owning
   * the memory), the access runs again in the program instead. */
  if (ac_guard.driver_protects) return false;
  /* The program's own protection there: a carried-out access must not do
   * what it forbade (opened, the page has it back). */
  int prot = ac_guard_program_prot_at(page);
  if (!(prot & PROT_READ) || !(prot & PROT_WRITE)) return false;
  struct ac_a64_regs r;
  struct ac_frame_vregs frame;
  ac_frame_vregs((unsigned char *)uc->uc_mcontext.__reserved, sizeof uc->uc_mcontext.__reserved,
                 &frame);
  memcpy(r.x, uc->uc_mcontext.regs, sizeof r.x);
  r.sp = uc->uc_mcontext.sp;
  r.pc = uc->uc_mcontext.pc;
  r.v_present = frame.v != NULL;
  r.v_loadable = frame.loadable;
  r.v_written = 0;
  if (frame.v) memcpy(r.v, frame.v, sizeof r.v);
  uint32_t insn;
  memcpy(&insn, (const void *)(uintptr_t)r.pc, sizeof insn);
  if (!ac_a64_emulate(insn, &r, page, page + (uintptr_t)ac_guard.page_size)) return false;
  memcpy(uc->uc_mcontext.regs, r.x, sizeof r.x);
  uc->uc_mcontext.sp = r.sp;
  uc->uc_mcontext.pc = r.pc;
  ac_frame_write_vregs(&frame, r.v, r.v_written);
  judged.steps[i]++;
  ac_guard.stats.steps++;
  return true;
}

/* No user-mode single step: the access is carried out instead (above). */
bool ac_guard_step_arm(uintptr_t page, void *ucontext) {
  (void)page, (void)ucontext;
  return false;
}
bool ac_guard_step_arm_lift(uintptr_t page, void *ucontext) {
  (void)page, (void)ucontext;
  return false;
}
bool ac_guard_trap_ends_step(int si_code) {
  (void)si_code;
  return false;
}
void ac_guard_step_end(void *ucontext) {
  (void)ucontext;
}
#else
#error "the page guard knows x86-64 and aarch64"
#endif

void ac_guard_step_after_fork_child(void) {
  memset(&step, 0, sizeof step);
  judged.n = 0;
}
