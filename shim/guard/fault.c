/* fault.c - the page guard's fault side: an access to protected memory,
 * seen as a SIGSEGV in the faulting thread (ac_guard_on_fault) or as a buffer
 * about to be handed to the kernel (ac_guard_check_buffer), is judged against
 * the model as it is at that instant (AC201/AC202), the finding left for the
 * reporter (reporter.c), and the page lifted until the next transition,
 * so the access completes. An access made by the driver itself (its
 * instruction is in libcuda) is the driver's business, never judged as the
 * program's. The refresh side, which decides what is protected, is refresh.c.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <sys/mman.h>
#include <unistd.h>

#include "backend.h"
#include "deferred.h"
#include "repair.h"
#include "guard_internal.h"
#include "pkeys.h"
#include "rules_host.h"
#include "shim.h"
#include "sys.h"

/* Set while this thread judges a fault or a buffer: libunwind checks memory
 * with write(2) on a pipe, which must not come back into the guard. */
static __thread bool in_guard;

/* The accesses this thread's signal handlers made while it held the model
 * lock, judged when it leaves (deferred.h). */
static __thread struct ac_deferred deferred;
static __thread bool draining;
__thread bool ac_guard_late_waiting;

/* ---- the handler's side ---- */

/* Whether [start, end) meets a published protected range, without the lock
 * (async-signal-safe). With more ranges than were published, maybe. */
static bool published_overlaps(uintptr_t start, uintptr_t end, bool *overflow) {
  uintptr_t at;
  return ac_published_find(&ac_guard.closed, start, end, NULL, NULL, &at, overflow) >= 0;
}

static bool page_lifted(uintptr_t page) {
  for (size_t i = 0; i < ac_guard.lifted_count; i++)
    if (ac_guard.lifted[i] == page) return true;
  return false;
}

static bool page_pinned(uintptr_t page);

/* The page at addr let go until the next transition: for the calling thread
 * alone where the keys' lift key can do it (in its signal frame, ucontext,
 * or its PKRU), else for every thread - for the one access alone where it
 * can be stepped (step.c), which closes it again after, or carried out here
 * (aarch64), the page closed again at once. */
static void lift_page(uintptr_t addr, void *ucontext) {
  uintptr_t page = ac_guard_page_floor(addr), end = page + (uintptr_t)ac_guard.page_size;
  if (!ac_guard_keys_lift_for_thread(page, ucontext)) {
    ac_guard_open_pages(page, end);
    /* Unless a system call in flight holds the page (pins.c): then it
     * stays open, as a lifted page, until the next transition. */
    if (ac_guard_step_emulate(page, ucontext) && !page_pinned(page)) {
      ac_guard_close_pages(page, end);
      return;
    }
    ac_guard_step_arm(page, ucontext);
  }
  if (page_lifted(page)) return;
  if (ac_guard.lifted_count < AC_GUARD_LIFTED_MAX)
    ac_guard.lifted[ac_guard.lifted_count++] = page;
  else
    ac_guard.protection_uncertain = true; /* too many to track: the next refresh redoes it all */
}

/* Whether a system call in flight holds page (its buffer was let through
 * open, pins.c): then it stays open until the next transition. */
static bool page_pinned(uintptr_t page) {
  static struct range_list pinned; /* lock held */
  bool crowded = ac_guard_pins_read(&pinned);
  return crowded || range_contains(&pinned, page); /* pins are whole pages */
}

void ac_guard_unlift_page(uintptr_t page) {
  AC_ASSERT_MODEL_HELD();
  for (size_t i = 0; i < ac_guard.lifted_count; i++) {
    if (ac_guard.lifted[i] != page) continue;
    if (!range_contains(&ac_guard.protected_now, page) || page_pinned(page)) return;
    ac_guard_close_pages(page, page + (uintptr_t)ac_guard.page_size);
    ac_guard.lifted[i] = ac_guard.lifted[--ac_guard.lifted_count];
    return;
  }
}

bool ac_pc_in_driver(uintptr_t pc) {
  return pc >= ac_guard.driver_lo && pc < ac_guard.driver_hi;
}

void ac_guard_defer(uintptr_t a, bool is_write, uintptr_t pc, void *ucontext) {
  struct ac_deferred_access access;
  access.addr = a;
  access.is_write = is_write;
  if (ac_stack_capturing()) { /* libunwind is busy on this thread: the place alone */
    access.stack.depth = 1;
    access.stack.pc[0] = (void *)(pc + 1); /* symbolised at pc - 1, as a return address */
  } else {
    ac_stack_capture_from_signal(ucontext, &access.stack);
  }
  ac_deferred_push(&deferred, &access);
  ac_guard_late_waiting = true; /* also when full: the drain counts what was dropped */
}

/* The fault of a thread interrupted inside the shim, holding the model lock
 * or another of its locks (a signal handler of the program touched guarded
 * memory): the lock cannot be taken and the model may be half-changed. The
 * page is the guard's when the published pages - which, during a refresh,
 * cover what was closed and what will be, and which are read without
 * waiting for the interrupted writer (published.h) - hold it: it is lifted,
 * the access queued to be judged when the thread leaves the model, and the
 * next transition protects again from scratch. It may be closed again
 * before the handler runs once more: each time it faults it is lifted
 * again. A page the guard never closed is the program's own fault. */
static enum ac_guard_claim lift_without_lock(uintptr_t a, bool is_write, uintptr_t pc,
                                             void *ucontext) {
  uintptr_t page = ac_guard_page_floor(a);
  bool overflow;
  if (!published_overlaps(page, page + (uintptr_t)ac_guard.page_size, &overflow) && !overflow)
    return AC_GUARD_NOT_OURS;
  ac_guard_program_unlocked(true);
  ac_guard_open_pages(page, page + (uintptr_t)ac_guard.page_size);
  ac_guard_program_unlocked(false);
  __atomic_store_n(&ac_guard.lifted_unlocked, 1, __ATOMIC_RELEASE);
  ac_guard_defer(a, is_write, pc, ucontext);
  return AC_GUARD_HANDLED;
}

/* Judges a CPU access of len bytes at a, in alloc, made through `via`,
 * against the model (lock held): true with *f filled for a finding. */
static bool judge_access(uintptr_t a, size_t len, struct ac_alloc *alloc, bool is_write,
                         const char *via, struct ac_finding *f) {
  struct ac_host_access access = {{a, len, is_write ? AC_ACCESS_WRITE : AC_ACCESS_READ, via},
                                  ac_thread_id(),
                                  ac_current_host_function_stream()};
  return ac_judge_host_access(ac_model, alloc, &access, f);
}

/* A finding's rule when --on-error repair is to repair it (repair.h), else
 * AC_RULE_COUNT; the finding says so. */
static enum ac_rule_id mark_repair(struct ac_finding *f) {
  f->repair = ac_repair_cpu_access_wanted(f->rule, ac_current_host_function_stream() != NULL);
  return f->repair ? f->rule : AC_RULE_COUNT;
}

/* Judges the access at a (lock held); a finding goes to the reporter's ring.
 * Returns the rule to repair, or AC_RULE_COUNT. */
static enum ac_rule_id judge_fault(uintptr_t a, struct ac_alloc *alloc, bool is_write,
                                   void *ucontext) {
  static __thread struct ac_finding f; /* large: not on a signal stack */
  if (!judge_access(a, 0, alloc, is_write, "page fault", &f)) {
    /* a shared page's allowed part (wanted.c): stepped, its other part stays closed */
    ac_guard.stats.allowed_faults++;
    ac_guard_step_note_judged(ac_guard_page_floor(a), false);
    return AC_RULE_COUNT;
  }
  enum ac_rule_id repair = mark_repair(&f);
  /* this thread's later accesses to the page: stepped, not judged */
  ac_guard_step_note_judged(ac_guard_page_floor(a), true);
  ac_stack_capture_from_signal(ucontext, &f.stack);
  struct ac_finding *slot = ac_guard_ring_slot_locked();
  if (slot) {
    *slot = f;
    ac_guard_ring_commit_locked();
  }
  return repair;
}

/* What both kinds of fault do once the guard owns one (lock held): counted,
 * the driver's own access let be, the program's judged, the judging timed. */
static enum ac_rule_id judge_counted(uintptr_t a, struct ac_alloc *alloc, bool is_write,
                                     uintptr_t pc, void *ucontext) {
  AC_ASSERT_MODEL_HELD();
  enum ac_rule_id repair = AC_RULE_COUNT;
  ac_guard.stats.faults++;
  double started = ac_opts.verbose ? ac_sys_now_seconds() : 0;
  if (ac_pc_in_driver(pc))
    ac_guard.stats.driver_faults++; /* the driver's own access, e.g. inside a synchronous 2D copy */
  else if (alloc && ac_alloc_is_managed(alloc) && !alloc->retiring)
    repair = judge_fault(a, alloc, is_write, ucontext);
  else /* between allocations on a guarded page */
    ac_guard.stats.allowed_faults++, ac_guard_step_note_judged(ac_guard_page_floor(a), false);
  if (ac_opts.verbose) ac_guard.stats.handler_seconds += ac_sys_now_seconds() - started;
  return repair;
}

enum ac_rule_id ac_guard_judge_locked(uintptr_t a, bool is_write, uintptr_t pc, void *ucontext) {
  in_guard = true;
  enum ac_rule_id repair =
      judge_counted(a, ac_model_find_alloc(ac_model, a), is_write, pc, ucontext);
  in_guard = false;
  return repair;
}

void ac_guard_repair_in_handler(uintptr_t a, enum ac_rule_id repair) {
  if (repair == AC_RULE_COUNT) return;
  AC_ASSERT_MODEL_HELD();
  ac_model_leave_as_is(); /* the repairer takes it, through the shim's wrappers */
  /* Parked while it waits, as in a blocking call: it runs none of the
   * program's code, so the transitions the repair makes do not count it as
   * a thread whose keys disagree; its frame catches up after. */
  ac_guard_park();
  ac_repair_cpu_access_in_handler(a, repair);
  ac_guard_unpark();
  ac_model_enter();
}

/* One access a handler made inside the shim, judged now that its thread
 * left the model: against the model as it stands, with the stack of the
 * fault. */
static void judge_late(const struct ac_deferred_access *d, void *ctx) {
  (void)ctx;
  struct ac_finding f;
  bool found = false;
  ac_model_enter();
  struct ac_alloc *alloc = ac_model_find_alloc(ac_model, d->addr);
  if (alloc && ac_alloc_is_managed(alloc) && !alloc->retiring)
    found = judge_access(d->addr, 0, alloc, d->is_write,
                         "page fault, judged after the call it interrupted", &f);
  ac_guard.stats.judged_late++;
  ac_model_leave_as_is(); /* judging makes no transition */
  if (!found) return;
  f.stack = d->stack;
  ac_emit_finding(&f, AC_DRIVER_RETURNED, CUDA_SUCCESS);
}

/* Accesses that did not fit the queue: never judged, and said. */
static void lost_accesses(unsigned n) {
  __atomic_add_fetch(&ac_guard.stats.unjudged, n, __ATOMIC_RELAXED);
  char why[120];
  snprintf(why, sizeof why, "signal handlers made more than %d at once inside attachcheck",
           AC_DEFERRED_MAX);
  ac_report_unjudged(n, why);
}

void ac_guard_judge_deferred(void) {
  if (draining || ac_model_held()) return;
  draining = true;
  ac_guard_late_waiting = false; /* before the drain: a push during it sets it again */
  unsigned dropped = ac_deferred_drain(&deferred, judge_late, NULL);
  draining = false;
  if (dropped) lost_accesses(dropped);
}

void ac_guard_deferred_after_fork_child(void) {
  deferred.count = deferred.dropped = 0;
  draining = false;
  ac_guard_late_waiting = false;
}

/* Whether a protection-key fault names a key that the thread's PKRU at the
 * fault allowed. The kernel reads the key it reports from the mapping after
 * the fault, so when another thread retagged the page in between (a page
 * lifted, a patch, a layout), it names the page's new key - key 0 after a
 * lift, not ours - and the fault was not that key's (docs/driver-facts.md,
 * "Protection keys"). Async-signal-safe. */
static bool key_report_is_stale(int pkey, bool is_write, void *ucontext) {
  const uint32_t *pkru = ac_pkeys_frame_pkru(ucontext);
  return pkru && !ac_pkru_forbids(*pkru, pkey, is_write);
}

/* Whether the protection the program itself set at a forbids the access:
 * then the fault is its own (lock held). */
static bool program_protection_forbids(uintptr_t a, bool is_write) {
  int prot = ac_guard_program_prot_at(a);
  return is_write ? !(prot & PROT_WRITE) : !(prot & (PROT_READ | PROT_WRITE));
}

enum ac_guard_claim ac_guard_on_fault(void *addr, bool is_write, uintptr_t pc, int pkey,
                                      void *ucontext, unsigned *epoch) {
  if (!ac_guard_on() || __atomic_load_n(&ac_foreign_child, __ATOMIC_RELAXED))
    return AC_GUARD_NOT_OURS;
  uintptr_t a = (uintptr_t)addr;
  if (pkey >= 0 && key_report_is_stale(pkey, is_write, ucontext)) {
    /* Whichever the backend: the page has its new key now, and the access
     * runs again under it. Only another retag makes the report stale again,
     * so the count of tags is the epoch: retries under one count are few
     * (fault_retry.c). */
    *epoch = ac_pkeys_tags_made();
    return AC_GUARD_RETRY;
  }
  enum ac_guard_claim decided;
  if (ac_guard.backend->on_fault(a, is_write, pc, pkey, ucontext, &decided)) return decided;
  /* Any lock of the shim's held by the interrupted code: judged late. */
  if (ac_locks_any_held()) return lift_without_lock(a, is_write, pc, ucontext);
  bool overflow;
  bool guarded = published_overlaps(a, a + 1, &overflow);
  int saved_errno = errno;
  ac_model_enter();
  struct ac_alloc *alloc = ac_model_find_alloc(ac_model, a);
  bool managed = alloc && ac_alloc_is_managed(alloc);
  enum ac_guard_claim claim = AC_GUARD_HANDLED;
  if (!guarded && !overflow && !managed) {
    claim = AC_GUARD_NOT_OURS;
  } else if (!range_contains(&ac_guard.protected_now, a) || page_lifted(ac_guard_page_floor(a))) {
    /* Not protected as far as the guard knows: a transition on another
     * thread lifted it between the fault and now, or a protection made for
     * memory freed since outlived it. Managed memory is always the CPU's to
     * map: make sure the page is, and let the access run again. A page the
     * keys lifted for its threads alone - another thread's fault on it got
     * the lock first - stays as it is: the access runs again and faults on
     * the lift key, judged then, unless this thread holds that key. */
    bool program_forbids = managed && program_protection_forbids(a, is_write);
    bool lifted_by_key = ac_guard_keys_lifted_for_threads() && page_lifted(ac_guard_page_floor(a));
    if (managed && !program_forbids && !lifted_by_key) {
      ac_guard.stats.let_go_again++;
      ac_guard_open_pages(ac_guard_page_floor(a),
                          ac_guard_page_floor(a) + (uintptr_t)ac_guard.page_size);
    }
    claim = managed && !program_forbids ? AC_GUARD_RETRY : AC_GUARD_NOT_OURS;
    *epoch = ac_published_epoch(&ac_guard.closed);
  } else if (ac_guard_step_judged_here(ac_guard_page_floor(a))) {
    /* This thread's later access to a page it was judged on in this busy
     * period: one finding stands for them (stepped again, not judged). */
    ac_guard.stats.faults++;
    lift_page(a, ucontext);
  } else {
    in_guard = true;
    enum ac_rule_id repair = judge_counted(a, alloc, is_write, pc, ucontext);
    in_guard = false;
    /* Repaired, the memory is the CPU's and its page open; not, the access
     * goes on as under report. */
    ac_guard_repair_in_handler(a, repair);
    in_guard = true;
    if (range_contains(&ac_guard.protected_now, a)) lift_page(a, ucontext);
    in_guard = false;
  }
  ac_model_leave_as_is();
  errno = saved_errno;
  return claim;
}

/* ---- CPU accesses through system calls ----
 * The kernel does not raise SIGSEGV for a protected buffer handed to read(2)
 * or write(2): it fails with EFAULT. Only a buggy program hands the kernel
 * memory it may not touch, and a correct one memory that shares a closed page
 * with such memory; the calls the shim sees are judged and the buffer lifted
 * before they run, and pinned until they return (pins.c), so they succeed. */

/* A buffer's finding, outside the lock, in normal context: reported now,
 * and under --on-error repair the call waits for the busy work first (this
 * thread synchronises: no handler here). */
static void report_buffer_finding(struct ac_finding *f) {
  enum ac_rule_id repair = mark_repair(f);
  ac_stack_capture(&f->stack);
  ac_emit_finding(f, AC_DRIVER_RETURNED, CUDA_SUCCESS);
  if (repair != AC_RULE_COUNT) ac_repair_cpu_access_now(f->access.addr, repair);
}

/* Judges a buffer on keyed pages whose key this thread has disabled, and
 * enables each such key here, so the call succeeds. */
static void check_keyed_buffer(const char *via, uintptr_t start, uintptr_t end, bool cpu_writes) {
  uintptr_t page;
  bool maybe;
  int slot = ac_guard_keys_disabled_in(start, end, &page, &maybe);
  if (slot < 0 && !maybe) return;
  struct ac_finding f;
  bool found = false;
  ac_model_enter();
  in_guard = true;
  slot = ac_guard_keys_disabled_in(start, end, &page, &maybe); /* exact, under the lock */
  /* Freed memory that kept its key: key 0 now, whatever the buffer's verdict. */
  if (slot >= 0 && ac_guard_keys_unpark(start, end))
    slot = ac_guard_keys_disabled_in(start, end, &page, &maybe);
  for (int rounds = 0; rounds < AC_PKEYS_HW_MAX && slot >= 0; rounds++) {
    struct ac_alloc *alloc = ac_model_find_alloc(ac_model, page < start ? start : page);
    bool allowed = !ac_guard_keys_slot_forbidden(slot);
    if (!found && !allowed && alloc && ac_alloc_is_managed(alloc))
      found = judge_access(page < start ? start : page, end - start, alloc, cpu_writes, via, &f);
    ac_guard_keys_enable(slot, allowed, NULL, page);
    slot = ac_guard_keys_disabled_in(start, end, &page, &maybe);
  }
  in_guard = false;
  ac_model_leave_as_is();
  if (found) report_buffer_finding(&f);
}

void ac_guard_check_buffer(struct ac_guard_pins *pins, const char *via, const void *buf, size_t len,
                           bool cpu_writes) {
  if (!ac_guard_on() || !len || in_guard || ac_call_is_shims_own() ||
      __atomic_load_n(&ac_foreign_child, __ATOMIC_RELAXED))
    return;
  uintptr_t start = (uintptr_t)buf, end = start + len;
  if (!ac_guard_may_guard(start, end)) return; /* the program's ordinary I/O: two loads */
  ac_guard_pin(pins, start, end);              /* before anything published is read */
  check_keyed_buffer(via, start, end, cpu_writes);
  bool overflow;
  /* Without the lock first: the shim's own I/O, and every correct program's,
   * never meets protected memory, and must not wait for the model. */
  if (!published_overlaps(start, end, &overflow) && !overflow) return;
  struct ac_finding f;
  bool found = false;
  ac_model_enter();
  in_guard = true;
  for (uintptr_t page = ac_guard_page_floor(start); page < end;
       page += (uintptr_t)ac_guard.page_size) {
    /* A page lifted for another thread alone is still closed to this one;
     * one lifted for this thread was judged when it was. */
    if (!range_contains(&ac_guard.protected_now, page) ||
        (page_lifted(page) && (!ac_guard_keys_lifted_for_threads() || ac_guard_keys_lifted_here())))
      continue;
    uintptr_t probe = page < start ? start : page;
    struct ac_alloc *alloc = ac_model_find_alloc(ac_model, probe);
    /* A page this thread was judged on in this busy period: its access
     * through the call is one of those the finding stands for. */
    if (!found && alloc && ac_alloc_is_managed(alloc) && !ac_guard_step_judged_here(page))
      found = judge_access(probe, len, alloc, cpu_writes, via, &f);
    lift_page(page, NULL);
  }
  in_guard = false;
  ac_model_leave_as_is();
  if (found) report_buffer_finding(&f);
}
