/* attach_order.c - --on-error repair for a re-attach that is not ordered
 * after the work of the stream the memory was attached to (AC401): before the
 * attach is forwarded, the new stream is made to wait for that work - an
 * event recorded on the old stream and waited on by the new one, the fix the
 * rule's page gives - so the attach, and everything after it on the new
 * stream, runs once the old stream's work has completed. The event calls go
 * through the shim's own wrappers, so the model learns the order exactly as
 * from the program's calls. Normal context: the attaching thread does it.
 */
#include "repair.h"
#include "shim.h"

bool ac_repair_attach_wanted(const struct ac_finding *f) {
  return ac_opts.on_error == AC_ON_ERROR_REPAIR && f->rule == AC_RULE_AC401 && f->busy.present &&
         ac_current_host_function_stream() == NULL;
}

/* The old stream as the calling thread can name it, or false: a live stream
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
static const char *order_after(CUstream old, CUstream stream, bool per_thread) {
  if (!ac_real.cuEventCreate) return "the driver cannot make an event";
  CUevent e;
  if (ac_real.cuEventCreate(&e, CU_EVENT_DISABLE_TIMING) != CUDA_SUCCESS)
    return "the driver refused an event";
  const char *why = NULL;
  if (cuEventRecord(e, old) != CUDA_SUCCESS)
    why = "the driver refused to record an event on the previous stream";
  else if ((per_thread ? cuStreamWaitEvent_ptsz : cuStreamWaitEvent)(stream, e, 0) != CUDA_SUCCESS)
    why = "the driver refused to make the stream wait";
  cuEventDestroy_v2(e); /* the wait holds what it needs */
  return why;
}

bool ac_repair_attach_order(const struct ac_finding *f, CUstream stream, bool per_thread) {
  CUstream old;
  const char *why = nameable(&f->busy, &old)
                        ? order_after(old, stream, per_thread)
                        : "the previous stream is another thread's per-thread stream, or destroyed";
  ac_report_repair(ac_rule_info(f->rule)->id, why == NULL, why == NULL, 0, why);
  return why == NULL;
}
