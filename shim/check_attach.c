/* check_attach.c - one cuStreamAttachMemAsync call, start to end.
 *
 *   1. under the model lock: classify the pointer - when the model does not
 *      know it, the driver is asked with the lock let go - resolve the
 *      stream, judge AC101-AC107, ask the guard
 *   2. forward the call - unless the guard refuses it because the real driver
 *      would crash the process - with no lock held
 *   3. on success, record the new association
 *   4. report the findings with the driver's answer
 */
#include <errno.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "rules_attach.h"
#include "repair.h"
#include "rules_host.h"
#include "shim.h"

/* Whether addr lies in mapped memory: a stream handle that does not cannot be
 * a stream the driver made. mincore fails with ENOMEM on unmapped pages. */
static bool address_is_mapped(uintptr_t addr) {
  static long page;
  if (!page) page = sysconf(_SC_PAGESIZE);
  unsigned char vec;
  void *start = (void *)(addr & ~(uintptr_t)(page - 1));
  return mincore(start, 1, &vec) == 0 || errno != ENOMEM;
}

/* CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS of the current device, cached. */
static bool pageable_memory_access(void) {
  static int cached[64];
  CUdevice dev = 0;
  if (!ac_real.cuCtxGetDevice || ac_real.cuCtxGetDevice(&dev) != CUDA_SUCCESS || dev < 0 ||
      dev >= 64)
    return false;
  int v = __atomic_load_n(&cached[dev], __ATOMIC_RELAXED);
  if (v == 0 && ac_real.cuDeviceGetAttribute) {
    int attr = 0;
    if (ac_real.cuDeviceGetAttribute(&attr, CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS, dev) ==
        CUDA_SUCCESS)
      v = attr ? 2 : 1;
    __atomic_store_n(&cached[dev], v, __ATOMIC_RELAXED);
  }
  return v == 2;
}

/* --verbose: where an attach's wall time goes, step by step, summed over
 * the process's attaches - what a profile of the CPU alone cannot say (a
 * lock waited for, the driver slower after the shim's work). The clock is
 * read only under --verbose. */
enum attach_step { STEP_STACK, STEP_JUDGE, STEP_DRIVER, STEP_RECORD, STEPS };
static uint64_t attaches_timed, step_ns[STEPS];

static uint64_t now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

/* The time since *last goes to step; *last moves on to now. */
static void step_done(enum attach_step step, uint64_t *last) {
  if (!ac_opts.verbose) return;
  uint64_t t = now_ns();
  __atomic_add_fetch(&step_ns[step], t - *last, __ATOMIC_RELAXED);
  *last = t;
}

static double ns_each(enum attach_step step, uint64_t n) {
  return (double)__atomic_load_n(&step_ns[step], __ATOMIC_RELAXED) / (double)n;
}

void ac_attach_print_stats(void) {
  uint64_t n = __atomic_load_n(&attaches_timed, __ATOMIC_RELAXED);
  if (!ac_opts.verbose || !n) return;
  ac_log("attaches: %lu, wall time each: stack %.0f ns, judging section %.0f ns, driver %.0f ns, "
         "recording section %.0f ns",
         (unsigned long)n, ns_each(STEP_STACK, n), ns_each(STEP_JUDGE, n), ns_each(STEP_DRIVER, n),
         ns_each(STEP_RECORD, n));
}

static CUresult guard_result(enum ac_guard_verdict v) {
  return v == AC_GUARD_REFUSE_INVALID_HANDLE ? CUDA_ERROR_INVALID_HANDLE : CUDA_ERROR_INVALID_VALUE;
}

static void emit_all(struct ac_finding *findings, int n, const struct ac_stack *stack,
                     enum ac_driver_outcome outcome, CUresult r) {
  for (int i = 0; i < n; i++) {
    findings[i].stack = *stack;
    ac_emit_finding(&findings[i], outcome, r);
  }
}

/* AC401 belongs to an attach that is otherwise right: it is about what runs
 * around it, not about the call. */
static int judge_order(struct ac_attach_call *c, struct ac_finding *out) {
  if (!c->alloc || !c->stream.stream) return 0;
  if (!ac_judge_attach_order(ac_model, c->alloc, c->stream.stream, out)) return 0;
  out->api = c->api;
  out->args = c->args;
  out->mem_kind = c->mem_kind;
  out->stream = ac_stream_facts_of(&c->stream, c->args.stream);
  out->thread = c->thread;
  return 1;
}

CUresult ac_check_attach(void *const *ret_slot, const char *api, bool per_thread, CUstream stream,
                         CUdeviceptr dptr, size_t length, unsigned flags) {
  __typeof__(&cuStreamAttachMemAsync) forward =
      per_thread ? ac_real.cuStreamAttachMemAsync_ptsz : ac_real.cuStreamAttachMemAsync;
  if (!forward) return CUDA_ERROR_NOT_FOUND;

  struct ac_attach_call c = {.api = api, .args = {(uintptr_t)stream, dptr, length, flags}};
  c.thread = ac_thread_id();

  struct ac_finding findings[AC_ATTACH_MAX_FINDINGS + 1];
  struct ac_stack stack; /* where it was attached: kept with the allocation */
  ac_stack_id stack_id;
  uint64_t clock = ac_opts.verbose ? now_ns() : 0;
  ac_stack_capture_site(&stack, ret_slot, &stack_id);
  step_done(STEP_STACK, &clock);
  ac_model_enter();
  /* The memory, classified under the lock when the model knows it (every
   * allocation the program made); else the driver is asked, without it. */
  struct ac_attach_found found = {0};
  found.alloc = dptr ? ac_model_find_alloc(ac_model, dptr) : NULL;
  c.mem_kind = found.alloc ? (enum ac_mem_kind)found.alloc->kind : AC_MEM_NULL;
  if (dptr && !found.alloc) {
    ac_model_leave();
    c.mem_kind = ac_check_classify(dptr);
    if (c.mem_kind == AC_MEM_PAGEABLE) c.pageable_memory_access = pageable_memory_access();
    ac_model_enter();
    found.alloc = ac_model_find_alloc(ac_model, dptr);
  }
  c.alloc = found.alloc;
  c.stream = ac_resolve_stream_locked(stream, per_thread, c.thread);
  found.stream = c.stream.stream;
  if (c.stream.kind == AC_STREAM_UNTRACKED && !address_is_mapped((uintptr_t)stream))
    c.stream.kind = AC_STREAM_NEVER_CREATED;
  int n = ac_judge_attach(&c, findings);
  if (n == 0) n = judge_order(&c, findings);
  enum ac_guard_verdict verdict = ac_attach_guard(&c);
  found.entries = ac_model_entries();
  ac_model_leave();
  step_done(STEP_JUDGE, &clock);
  /* --on-error repair: the attach waits for the old stream's work (AC401). */
  if (n == 1 && verdict == AC_GUARD_FORWARD && ac_repair_attach_wanted(&findings[0]))
    findings[0].repair = ac_repair_attach_order(&findings[0], stream, per_thread);

  enum ac_driver_outcome outcome = verdict == AC_GUARD_FORWARD ? AC_DRIVER_RETURNED
                                   : ac_opts.guard             ? AC_DRIVER_GUARDED
                                                               : AC_DRIVER_CRASHES;
  /* A call about to crash the process is reported before it is made. */
  if (outcome == AC_DRIVER_CRASHES) emit_all(findings, n, &stack, outcome, CUDA_SUCCESS);
  CUresult r =
      outcome == AC_DRIVER_GUARDED ? guard_result(verdict) : forward(stream, dptr, length, flags);
  step_done(STEP_DRIVER, &clock);

  if (r == CUDA_SUCCESS)
    ac_on_attached(api, stream, per_thread, dptr, flags, &stack, stack_id, &found);
  step_done(STEP_RECORD, &clock);
  if (ac_opts.verbose) __atomic_add_fetch(&attaches_timed, 1, __ATOMIC_RELAXED);
  if (outcome != AC_DRIVER_CRASHES) emit_all(findings, n, &stack, outcome, r);
  return r;
}
