/* cpu_wait.c - --on-error repair for a CPU access to memory that busy work
 * owns (AC201, AC202): the access waits until that work has completed, then
 * goes on, as if the program had synchronised just before it.
 *
 * The access is seen in the faulting thread's SIGSEGV handler, which may
 * make no driver call. So the handler hands the address to the repairer, a
 * thread of the shim's started with the guard, through a small table of
 * requests (atomics and futexes only), and waits. The repairer asks the
 * model what keeps the CPU from that memory - the stream it is attached to
 * (AC201), or under strict semantics any busy stream (AC202) - and
 * synchronises with it through the shim's own wrappers, exactly as the
 * program would have: the model learns the host has seen that work
 * complete and the guard opens the memory. It asks again until nothing
 * keeps the CPU out. A system call's buffer is judged in normal context:
 * there the calling thread does the same itself.
 *
 * A wait that does not end within --repair-wait seconds is given up by the
 * faulting thread, which lets the access through unrepaired; the repairer,
 * still blocked in the driver, serves no one any more, so repair is off for
 * the rest of the process, and the reporter says so. What the driver must do
 * for this to hold: docs/driver-facts.md, "What --on-error repair relies on".
 */
#define _GNU_SOURCE
#include <limits.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

#include "repair.h"
#include "rules_host.h"
#include "shim.h"
#include "sys.h"

/* Requests at once (one per faulting thread); a thread finding none free is
 * not repaired. */
#define SLOTS 32
/* A repair that synchronised this often and still finds busy work (other
 * threads keep giving it work) is given up. */
#define MAX_WAITS 64

/* A slot's life: FREE -> FILLING (a faulting thread claimed it) -> ASKED ->
 * SERVING (the repairer took it) -> TELLING (the repair is made or not, its
 * record being written: the waiter no longer gives it up) -> MADE or
 * NOT_MADE -> FREE (the waiter). A waiter that times out while the slot is
 * ASKED or SERVING turns it ABANDONED, and the repairer frees it. */
enum slot_state { FREE, FILLING, ASKED, SERVING, TELLING, MADE, NOT_MADE, ABANDONED };

struct request {
  unsigned state; /* enum slot_state, atomic; a futex for the waiter */
  uintptr_t addr;
  enum ac_rule_id rule;
};

static struct request slots[SLOTS];
static unsigned wake_count;    /* moved at every request; the repairer sleeps on it */
static int running;            /* atomic: the repairer thread is up */
static int given_up;           /* atomic: a wait timed out; repair is off */
static unsigned given_up_said; /* atomic: NOT_SAID, SAYING, SAID: the report says so */
enum { NOT_SAID, SAYING, SAID };
static __thread bool is_repairer;

bool ac_repair_cpu_access_wanted(enum ac_rule_id rule, bool in_host_function) {
  return ac_opts.on_error == AC_ON_ERROR_REPAIR && !in_host_function &&
         (rule == AC_RULE_AC201 || rule == AC_RULE_AC202) && !is_repairer &&
         !__atomic_load_n(&given_up, __ATOMIC_ACQUIRE);
}

/* ---- what keeps the CPU out, and waiting for it (normal context) ---- */

struct blocker {
  uint64_t serial;
  uintptr_t handle, context;
  bool by_handle; /* a live stream of the program's own: synchronised by its handle */
};

/* The stream whose work keeps the CPU from addr now, or false when none
 * does (or the memory is gone). */
static bool find_blocker(uintptr_t addr, struct blocker *b) {
  bool blocked = false;
  ac_model_enter();
  struct ac_alloc *a = ac_model_find_alloc(ac_model, addr);
  struct ac_stream *s = NULL;
  enum ac_rule_id rule;
  if (a && !a->retiring && !ac_host_may_touch(ac_model, a, NULL, &s, &rule) && s) {
    blocked = true;
    b->serial = s->serial;
    b->handle = s->handle;
    b->by_handle = s->live && s->kind == AC_STREAM_CREATED;
    b->context = s->context ? s->context : ac_model_legacy_stream(ac_model)->context;
  }
  ac_model_leave_as_is();
  return blocked;
}

/* Synchronises with b's work through the shim's wrappers, so the model and
 * the guard follow. NULL, or why it could not. */
static const char *wait_for(const struct blocker *b) {
  if (b->by_handle)
    return cuStreamSynchronize((CUstream)b->handle) == CUDA_SUCCESS
               ? NULL
               : "the driver refused to synchronise the busy stream";
  /* The legacy stream, another thread's per-thread stream, or a stream the
   * program destroyed with work queued: its context's work, all of it. */
  if (!b->context) return "the busy stream's context is not known";
  if (!ac_real.cuCtxPushCurrent_v2 || !ac_real.cuCtxPopCurrent_v2)
    return "the driver cannot make the busy stream's context current";
  if (ac_real.cuCtxPushCurrent_v2((CUcontext)b->context) != CUDA_SUCCESS)
    return "the driver refused the busy stream's context";
  CUresult r = cuCtxSynchronize();
  CUcontext old;
  ac_real.cuCtxPopCurrent_v2(&old);
  return r == CUDA_SUCCESS ? NULL : "the driver refused to synchronise the busy context";
}

/* Waits until nothing keeps the CPU from addr. NULL when made. */
static const char *repair(uintptr_t addr, unsigned *waits) {
  uint64_t last = 0;
  struct blocker b = {0};
  for (*waits = 0; find_blocker(addr, &b); ++*waits) {
    if (*waits == MAX_WAITS) return "other threads kept giving the memory's streams work";
    const char *why = wait_for(&b);
    if (why) return why;
    if (b.serial == last && !b.by_handle) return "the context's work did not leave the memory";
    last = b.serial;
  }
  return NULL;
}

static void tell(enum ac_rule_id rule, unsigned waits, double seconds, const char *why) {
  ac_report_repair(ac_rule_info(rule)->id, why == NULL, waits, seconds, why);
}

bool ac_repair_cpu_access_now(uintptr_t addr, enum ac_rule_id rule) {
  double started = ac_sys_now_seconds();
  unsigned waits;
  const char *why = repair(addr, &waits);
  tell(rule, waits, ac_sys_now_seconds() - started, why);
  return why == NULL;
}

/* ---- the repairer thread ---- */

/* The record is written before the waiter goes on: the program may end
 * right after its access, and the repair must be in the report. */
static void serve(struct request *r) {
  double started = ac_sys_now_seconds();
  unsigned waits;
  const char *why = repair(r->addr, &waits);
  unsigned serving = SERVING;
  if (!__atomic_compare_exchange_n(&r->state, &serving, TELLING, false, __ATOMIC_ACQ_REL,
                                   __ATOMIC_ACQUIRE)) {
    /* The waiter gave up and went on unrepaired (its record says so): the
     * slot is ours to free, and nothing was repaired. */
    __atomic_store_n(&r->state, FREE, __ATOMIC_RELEASE);
    return;
  }
  tell(r->rule, waits, ac_sys_now_seconds() - started, why);
  __atomic_store_n(&r->state, why ? NOT_MADE : MADE, __ATOMIC_RELEASE);
  ac_sys_futex_wake(&r->state, 1);
}

static void *repairer(void *unused) {
  (void)unused;
  is_repairer = true;
  for (;;) {
    unsigned seen = __atomic_load_n(&wake_count, __ATOMIC_ACQUIRE);
    for (int i = 0; i < SLOTS; i++) {
      unsigned asked = ASKED, abandoned = ABANDONED;
      if (__atomic_compare_exchange_n(&slots[i].state, &asked, SERVING, false, __ATOMIC_ACQ_REL,
                                      __ATOMIC_ACQUIRE))
        serve(&slots[i]);
      else /* given up before it was served */
        __atomic_compare_exchange_n(&slots[i].state, &abandoned, FREE, false, __ATOMIC_ACQ_REL,
                                    __ATOMIC_ACQUIRE);
    }
    ac_sys_futex_wait(&wake_count, seen, NULL);
  }
  return NULL;
}

void ac_repair_start(void) {
  if (ac_opts.on_error != AC_ON_ERROR_REPAIR || __atomic_load_n(&running, __ATOMIC_ACQUIRE)) return;
  if (ac_own_thread_start(repairer)) __atomic_store_n(&running, 1, __ATOMIC_RELEASE);
}

/* The repairer did not survive the fork, and the child needs none: the page
 * guard protects nothing in a forked child (it cannot use the parent's CUDA
 * context), so no access there waits. */
void ac_repair_after_fork_child(void) {
  for (int i = 0; i < SLOTS; i++)
    slots[i].state = FREE;
  __atomic_store_n(&running, 0, __ATOMIC_RELEASE);
  /* Being said in the parent when it forked: the parent's record says it. */
  if (__atomic_load_n(&given_up_said, __ATOMIC_ACQUIRE) == SAYING)
    __atomic_store_n(&given_up_said, SAID, __ATOMIC_RELEASE);
}

/* ---- the faulting thread's side (async-signal-safe) ---- */

static struct request *claim_slot(void) {
  for (int i = 0; i < SLOTS; i++) {
    unsigned free_state = FREE;
    if (__atomic_compare_exchange_n(&slots[i].state, &free_state, FILLING, false, __ATOMIC_ACQ_REL,
                                    __ATOMIC_ACQUIRE))
      return &slots[i];
  }
  return NULL;
}

/* Waits until r is answered, or the bound passes: the answer, or ABANDONED. */
static unsigned await(struct request *r) {
  double deadline = ac_sys_now_seconds() + (double)ac_opts.repair_wait;
  for (;;) {
    unsigned st = __atomic_load_n(&r->state, __ATOMIC_ACQUIRE);
    if (st == MADE || st == NOT_MADE) return st;
    double left = deadline - ac_sys_now_seconds();
    if (left <= 0 && st != TELLING) {
      if (__atomic_compare_exchange_n(&r->state, &st, ABANDONED, false, __ATOMIC_ACQ_REL,
                                      __ATOMIC_ACQUIRE))
        return ABANDONED;
      continue; /* answered meanwhile */
    }
    if (left > 0.1 || left <= 0) left = 0.1; /* TELLING: a record being written */
    struct timespec step = {0, (long)(left * 1e9)};
    ac_sys_futex_wait(&r->state, st, &step);
  }
}

bool ac_repair_cpu_access_in_handler(uintptr_t addr, enum ac_rule_id rule) {
  if (!__atomic_load_n(&running, __ATOMIC_ACQUIRE)) return false;
  struct request *r = claim_slot();
  if (!r) return false;
  r->addr = addr;
  r->rule = rule;
  __atomic_store_n(&r->state, ASKED, __ATOMIC_RELEASE);
  __atomic_add_fetch(&wake_count, 1, __ATOMIC_RELEASE);
  ac_sys_futex_wake(&wake_count, 1);
  unsigned answer = await(r);
  if (answer == ABANDONED) { /* the repairer frees the slot */
    __atomic_store_n(&given_up, 1, __ATOMIC_RELEASE);
    ac_guard_wake_reporter(); /* which says so */
    return false;
  }
  __atomic_store_n(&r->state, FREE, __ATOMIC_RELEASE);
  return answer == MADE;
}

/* Said once, by whichever thread comes first; another that comes while it is
 * being said waits until its record is written (a little while at most):
 * the exit's drain must not write the process's last record before it - the
 * given-up repair went uncounted when the reporter thread was slow. */
void ac_repair_report_given_up(void) {
  if (!__atomic_load_n(&given_up, __ATOMIC_ACQUIRE)) return;
  unsigned state = NOT_SAID;
  if (!__atomic_compare_exchange_n(&given_up_said, &state, SAYING, false, __ATOMIC_ACQ_REL,
                                   __ATOMIC_ACQUIRE)) {
    for (int i = 0; i < 200 && state == SAYING; i++) { /* 2 s at most */
      struct timespec step = {0, 10 * 1000 * 1000};
      ac_sys_futex_wait(&given_up_said, SAYING, &step);
      state = __atomic_load_n(&given_up_said, __ATOMIC_ACQUIRE);
    }
    return;
  }
  char why[160];
  snprintf(why, sizeof why, "a CPU access waited %u s for busy work that did not complete",
           (unsigned)ac_opts.repair_wait);
  ac_report_repair(NULL, false, 0, (double)ac_opts.repair_wait, why);
  __atomic_store_n(&given_up_said, SAID, __ATOMIC_RELEASE);
  ac_sys_futex_wake(&given_up_said, INT_MAX);
}
