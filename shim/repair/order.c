/* order.c - --on-error repair for work or an attach that is not ordered
 * after the stream the memory belongs to: before the call is forwarded, the
 * calling stream is made to wait for that stream's work - an event recorded
 * there and waited on here, the fix the rules' pages give - so what the call
 * enqueues runs once that work has completed.
 *   AC401  a re-attach not ordered after the old stream's work;
 *   AC301  a kernel given memory single-attached to another stream: ordered
 *          after that stream's outstanding work (the memory stays attached
 *          there, so the finding stands).
 * The event calls go through the shim's own wrappers, so the model learns the
 * order exactly as from the program's calls. Normal context: the calling
 * thread does it, with no lock held. What the driver must do for this to
 * hold: docs/driver-facts.md, "What --on-error repair relies on".
 */
#include "gpu_work.h"
#include "repair.h"
#include "shim.h"

/* The streams a launch was ordered after, by serial: its AC301 findings,
 * made after the launch, say they were repaired. */
#define ORDERED_MAX AC_MAX_WORK_FINDINGS
static __thread uint64_t ordered[ORDERED_MAX];
static __thread int ordered_n;

static bool repairing_here(void) {
  return ac_opts.on_error == AC_ON_ERROR_REPAIR && ac_current_host_function_stream() == NULL;
}

/* The busy stream as the calling thread can name it, or false: a live stream
 * the program made, or the legacy stream. Another thread's per-thread
 * stream, or a stream already destroyed, cannot be waited for this way. */
static bool nameable(const struct ac_busy_facts *b, CUstream *out) {
  if (b->stream_kind == AC_STREAM_CREATED && b->stream_live) {
    *out = (CUstream)b->stream_handle;
    return true;
  }
  if (b->stream_kind == AC_STREAM_LEGACY) {
    *out = CU_STREAM_LEGACY;
    return true;
  }
  return false;
}

/* Makes stream (as the program named it) wait for old's work. NULL, or why
 * not. */
static const char *wait_on(CUstream old, CUstream stream, bool per_thread) {
  if (!ac_real.cuEventCreate) return "the driver cannot make an event";
  CUevent e;
  if (ac_real.cuEventCreate(&e, CU_EVENT_DISABLE_TIMING) != CUDA_SUCCESS)
    return "the driver refused an event";
  const char *why = NULL;
  if (cuEventRecord(e, old) != CUDA_SUCCESS)
    why = "the driver refused to record an event on the stream the memory belongs to";
  else if ((per_thread ? cuStreamWaitEvent_ptsz : cuStreamWaitEvent)(stream, e, 0) != CUDA_SUCCESS)
    why = "the driver refused to make the stream wait";
  cuEventDestroy_v2(e); /* the wait holds what it needs */
  return why;
}

/* Orders stream after f's busy stream, and records the repair. */
static bool order_after(const struct ac_finding *f, CUstream stream, bool per_thread) {
  CUstream old;
  const char *why = nameable(&f->busy, &old)
                        ? wait_on(old, stream, per_thread)
                        : "the stream the memory belongs to is another thread's per-thread "
                          "stream, or destroyed";
  ac_report_repair(ac_rule_info(f->rule)->id, why == NULL, why == NULL, 0, why);
  return why == NULL;
}

bool ac_repair_attach_wanted(const struct ac_finding *f) {
  return f->rule == AC_RULE_AC401 && f->busy.present && repairing_here();
}

bool ac_repair_attach_order(const struct ac_finding *f, CUstream stream, bool per_thread) {
  return order_after(f, stream, per_thread);
}

/* The work probed into l is ordered after each stream its AC301 findings
 * name, once each. */
static void order_work(const struct ac_gpu_work *l, CUstream stream, bool per_thread) {
  for (int i = 0; i < l->n && ordered_n < ORDERED_MAX; i++) {
    const struct ac_finding *f = &l->findings[i];
    if (f->rule != AC_RULE_AC301 || !f->busy.present || ac_repair_work_ordered(f)) continue;
    if (order_after(f, stream, per_thread)) ordered[ordered_n++] = f->busy.stream_serial;
  }
}

/* The probes' frames are on the stack, as ac_on_launch's is (normal
 * context): a thread-local one would cost every thread of every program its
 * 14 KiB of static TLS, repair or not. */

void ac_repair_launch_order(CUfunction func, CUstream stream, bool per_thread, void **params,
                            void **extra) {
  struct ac_gpu_work probed;
  if (repairing_here() && ac_launch_probe(&probed, func, stream, per_thread, params, extra))
    order_work(&probed, stream, per_thread);
}

void ac_repair_copy_order(const char *api, CUstream stream, bool per_thread, uintptr_t dst,
                          uintptr_t src) {
  struct ac_gpu_work probed;
  if (repairing_here() && ac_copy_probe(&probed, api, stream, per_thread, dst, src))
    order_work(&probed, stream, per_thread);
}

void ac_repair_graph_order(CUgraphExec exec, CUstream stream, bool per_thread) {
  struct ac_gpu_work probed;
  if (repairing_here() && ac_graph_launch_probe(&probed, exec, stream, per_thread))
    order_work(&probed, stream, per_thread);
}

bool ac_repair_work_ordered(const struct ac_finding *f) {
  for (int i = 0; i < ordered_n; i++)
    if (ordered[i] == f->busy.stream_serial) return true;
  return false;
}

void ac_repair_work_done(void) {
  ordered_n = 0;
}
