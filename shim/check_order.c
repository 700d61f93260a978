/* check_order.c - feeds the ordering model (rules/model_order.c) from the
 * intercepted calls: work that makes a stream busy, the synchronisation the
 * host may rely on, events, host functions, synchronous copies.
 *
 * Every function runs after the driver call succeeded (a failed call changes
 * nothing) with the model lock held briefly; none is called with the lock
 * held across a driver call. The stack of the operation that turns a stream
 * busy is taken once, at that transition, not at every launch.
 */
#include <stdlib.h>

#include "shim.h"
#include "stack_depot.h"

static __thread const struct ac_stream *running_host_function;

const struct ac_stream *ac_current_host_function_stream(void) {
  return running_host_function;
}

static struct ac_stream *stream_of(CUstream stream, bool per_thread) {
  return ac_resolve_stream_locked(stream, per_thread, ac_thread_id()).stream;
}

/* Under the lock: one operation on s, of this kind for the stream's history.
 * Returns its seq, 0 if it is not executed now (captured into a graph) or the
 * stream is unknown. */
static uint64_t enqueue_locked(struct ac_stream *s, const char *api, enum ac_op_kind kind,
                               bool *turned_busy) {
  *turned_busy = false;
  if (!s || s->capturing) return 0;
  uint64_t seq = ac_order_enqueue(ac_model, s, turned_busy);
  if (*turned_busy) ac_order_note_busy_origin(ac_model, s, api, ac_thread_id(), seq);
  ac_history_push(ac_model, s, kind, api, ac_thread_id());
  return seq;
}

/* Outside the lock: the stack of the operation that turned the stream with
 * this serial busy. */
static void record_busy_stack(uint64_t serial, uint64_t seq) {
  struct ac_stack stack;
  struct ac_op_origin_slot slot = {NULL, seq, true, serial};
  ac_stack_capture(&stack);
  ac_on_work_busy_stack(&slot, &stack);
}

/* Model lock held: one operation on the stream; *slot says whether it turned
 * the stream busy (then the caller passes the stack to ac_on_work_busy_stack,
 * outside the lock). Returns the stream record, or NULL. */
struct ac_stream *ac_on_work_locked(const char *api, CUstream stream, bool per_thread,
                                    struct ac_op_origin_slot *slot) {
  AC_ASSERT_MODEL_HELD();
  slot->stream = stream_of(stream, per_thread);
  slot->seq = enqueue_locked(slot->stream, api, AC_OP_WORK, &slot->turned_busy);
  slot->serial = slot->stream ? slot->stream->serial : 0;
  return slot->stream;
}

/* The stream is found again by its serial: while the lock was released,
 * another thread may have seen its work complete and its record forgotten. */
void ac_on_work_busy_stack(const struct ac_op_origin_slot *slot, const struct ac_stack *stack) {
  if (!slot->turned_busy) return;
  ac_model_enter();
  struct ac_stream *s = ac_model_stream_by_serial(ac_model, slot->serial);
  if (s) ac_order_set_busy_stack(ac_model, s, slot->seq, stack);
  ac_model_leave();
}

void ac_on_work(const char *api, CUstream stream, bool per_thread) {
  struct ac_op_origin_slot slot;
  ac_model_enter();
  ac_on_work_locked(api, stream, per_thread, &slot);
  ac_model_leave();
  if (slot.turned_busy) record_busy_stack(slot.serial, slot.seq);
}

void ac_on_quiet_work(const char *api, CUstream stream, bool per_thread) {
  ac_model_enter();
  struct ac_stream *s = stream_of(stream, per_thread);
  if (s && !s->capturing) {
    ac_order_enqueue_quiet(ac_model, s);
    ac_history_push(ac_model, s, AC_OP_WORK, api, ac_thread_id());
  }
  ac_model_leave();
}

void ac_on_stream_sync(CUstream stream, bool per_thread) {
  ac_model_enter();
  struct ac_stream *s = stream_of(stream, per_thread);
  if (s) ac_order_host_syncs_stream(ac_model, s);
  if (s) ac_history_push(ac_model, s, AC_OP_STREAM_SYNC, NULL, ac_thread_id());
  ac_model_leave();
}

void ac_on_sync_copy(const char *api, bool per_thread) {
  /* Legacy-stream semantics: an operation on the NULL stream (the thread's
   * per-thread stream for _ptds) that the host waits for. */
  bool turned_busy;
  ac_model_enter();
  struct ac_stream *s = stream_of(NULL, per_thread);
  enqueue_locked(s, api, AC_OP_SYNC_COPY, &turned_busy);
  if (s) ac_order_host_syncs_stream(ac_model, s);
  ac_model_leave();
}

/* A plain record on a capturing stream captures the event: a stream that
 * waits for it joins the capture. An external one there is an event-record
 * node of the graph (graph_args.c records it at each launch) and leaves the
 * event as it was. */
void ac_on_event_record(CUevent event, CUstream stream, unsigned flags, bool per_thread) {
  ac_model_enter();
  struct ac_stream *s = stream_of(stream, per_thread);
  if (s && s->capturing && !(flags & CU_EVENT_RECORD_EXTERNAL)) {
    ac_order_event_captured(ac_model, (uintptr_t)event, s);
  } else if (s && !s->capturing) {
    ac_order_event_recorded(ac_model, (uintptr_t)event, s);
    ac_history_push(ac_model, s, AC_OP_EVENT_RECORD, NULL, ac_thread_id())->addr = (uintptr_t)event;
  }
  ac_model_leave();
}

/* ---- the events a launch records (cuLaunchKernelEx's attributes) ----
 * A programmatic event fires once every block of the kernel has triggered it,
 * a launch completion event once every block has begun: after the work before
 * the kernel, before the kernel completes. Each is recorded as covering the
 * work before the kernel and not the kernel itself, so that synchronising on
 * it never makes the kernel's memory the CPU's. A launch that may overlap the
 * work before it (CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION) may
 * fire them before that work completes too: then they cover nothing. */

static CUevent launch_event(const CUlaunchAttribute *a) {
  if (a->id == CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_EVENT) return a->value.programmaticEvent.event;
  if (a->id == CU_LAUNCH_ATTRIBUTE_LAUNCH_COMPLETION_EVENT)
    return a->value.launchCompletionEvent.event;
  return NULL;
}

static bool may_overlap_earlier_work(const CUlaunchConfig *config) {
  for (unsigned i = 0; i < config->numAttrs; i++)
    if (config->attrs[i].id == CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION &&
        config->attrs[i].value.programmaticStreamSerializationAllowed)
      return true;
  return false;
}

/* Before the kernel's own operation is told (ac_on_launch). */
void ac_on_launch_events(const CUlaunchConfig *config, bool per_thread) {
  if (!config->attrs || !config->numAttrs) return;
  bool covers_nothing = may_overlap_earlier_work(config);
  ac_model_enter();
  struct ac_stream *s = stream_of(config->hStream, per_thread);
  for (unsigned i = 0; s && !s->capturing && i < config->numAttrs; i++) {
    CUevent event = launch_event(&config->attrs[i]);
    if (!event) continue;
    ac_order_event_recorded_over(ac_model, (uintptr_t)event, &s, covers_nothing ? 0 : 1);
    ac_history_push(ac_model, s, AC_OP_EVENT_RECORD, NULL, ac_thread_id())->addr = (uintptr_t)event;
  }
  ac_model_leave();
}

void ac_on_event_sync(CUevent event) {
  ac_model_enter();
  if (ac_order_host_syncs_event(ac_model, (uintptr_t)event))
    ac_history_push(ac_model, NULL, AC_OP_EVENT_SYNC, NULL, ac_thread_id())->addr =
        (uintptr_t)event;
  ac_model_leave();
}

/* A wait for an event recorded in a capture makes the stream join it. */
void ac_on_stream_wait(CUstream stream, CUevent event, bool per_thread) {
  ac_model_enter();
  struct ac_stream *s = stream_of(stream, per_thread);
  if (s && ac_order_stream_waits_event(ac_model, s, (uintptr_t)event))
    ac_history_push(ac_model, s, AC_OP_EVENT_WAIT, NULL, ac_thread_id())->addr = (uintptr_t)event;
  ac_model_leave();
}

/* Model lock held: one event over several streams (a context's or a green
 * context's), and those streams' waits for one. */
void ac_event_recorded_over_locked(CUevent event, struct ac_stream *const *streams, size_t n) {
  AC_ASSERT_MODEL_HELD();
  ac_order_event_recorded_over(ac_model, (uintptr_t)event, streams, n);
  for (size_t i = 0; i < n; i++)
    ac_history_push(ac_model, streams[i], AC_OP_EVENT_RECORD, NULL, ac_thread_id())->addr =
        (uintptr_t)event;
}
void ac_streams_wait_event_locked(CUevent event, struct ac_stream *const *streams, size_t n) {
  AC_ASSERT_MODEL_HELD();
  for (size_t i = 0; i < n; i++)
    if (ac_order_stream_waits_event(ac_model, streams[i], (uintptr_t)event))
      ac_history_push(ac_model, streams[i], AC_OP_EVENT_WAIT, NULL, ac_thread_id())->addr =
          (uintptr_t)event;
}

/* A green context's event covers the work of each of its streams the shim saw
 * made; a stream it did not see made is left out, which can only report an
 * access that was ordered, never hide one that was not. */
static void green_event(CUgreenCtx green, CUevent event, bool record) {
  struct ac_stream **streams;
  ac_model_enter();
  size_t n = ac_check_green_streams_locked(green, &streams);
  (record ? ac_event_recorded_over_locked : ac_streams_wait_event_locked)(event, streams, n);
  ac_model_leave();
  free(streams);
}
void ac_on_green_event_record(CUgreenCtx green, CUevent event) {
  green_event(green, event, true);
}
/* ... and each of them waits for a green context's wait. */
void ac_on_green_event_wait(CUgreenCtx green, CUevent event) {
  green_event(green, event, false);
}

void ac_on_event_destroyed(CUevent event) {
  ac_model_enter();
  ac_order_event_destroyed(ac_model, (uintptr_t)event);
  ac_model_leave();
}

/* ---- host functions ----
 * A host function's start is an event synchronisation of the work before it,
 * and inside it its own stream is idle. The shim runs the program's function
 * through a trampoline that tells the model both. */

struct host_call {
  uint64_t seq;
  CUhostFn fn;
  CUstreamCallback callback;
  void *data;
  CUstream handle;
  struct ac_stream *stream; /* busy until the function ran: its record stays */
  uint64_t serial;
  struct ac_clock before;
};

/* The stream's record stays while the function runs: its operation is not
 * complete until it returns. */
static void run_host_call(void *arg) {
  struct host_call *c = arg;
  ac_model_enter();
  ac_order_host_observes(ac_model, &c->before);
  ac_order_host_function_runs(ac_model, c->stream, c->seq);
  ac_model_leave();
  const struct ac_stream *outer = running_host_function;
  running_host_function = c->stream;
  /* The driver runs it on a thread of its own: the program's code, for as
   * long as it runs, on a thread that takes part in the guard's keys. */
  bool driver_thread = ac_guard_thread_is_driver();
  if (driver_thread) ac_guard_thread_as_program(true);
  if (c->fn)
    c->fn(c->data);
  else
    c->callback(c->handle, CUDA_SUCCESS, c->data);
  if (driver_thread) ac_guard_thread_as_program(false);
  ac_model_enter();
  ac_order_host_function_runs(ac_model, c->stream, 0);
  ac_model_leave();
  running_host_function = outer;
  ac_clock_free(&c->before);
  free(c);
}

static void run_stream_callback(CUstream stream, CUresult status, void *arg) {
  struct host_call *c = arg;
  if (status != CUDA_SUCCESS) { /* the driver reports an error: pass it on */
    CUstreamCallback cb = c->callback;
    void *data = c->data;
    ac_clock_free(&c->before);
    free(c);
    cb(stream, status, data);
    return;
  }
  run_host_call(c);
}

/* Enqueues the host function's operation before it is forwarded (so the
 * trampoline knows what precedes it) and returns the trampoline's argument, or
 * NULL to forward the program's own function untouched (the stream captures a
 * graph, or memory ran out). */
struct host_call *ac_on_host_function(const char *api, CUstream stream, bool per_thread,
                                      CUhostFn fn, CUstreamCallback callback, void *data) {
  struct host_call *c = calloc(1, sizeof *c);
  if (!c) return NULL;
  bool turned_busy;
  ac_model_enter();
  struct ac_stream *s = stream_of(stream, per_thread);
  uint64_t seq = enqueue_locked(s, api, AC_OP_HOST_FUNCTION, &turned_busy);
  uint64_t serial = s ? s->serial : 0;
  if (seq && ac_order_snapshot_before(ac_model, s, seq, &c->before)) {
    *c = (struct host_call){seq, fn, callback, data, stream, s, serial, c->before};
  } else {
    ac_clock_free(&c->before);
    free(c);
    c = NULL;
  }
  ac_model_leave();
  if (turned_busy) record_busy_stack(serial, seq);
  return c;
}

CUhostFn ac_host_call_trampoline(void) {
  return run_host_call;
}
CUstreamCallback ac_stream_callback_trampoline(void) {
  return run_stream_callback;
}

/* The forward failed: the function will never run. Its operation is taken
 * back unless another one was enqueued on the stream since; then it stays, and
 * counts as complete once the host observes the stream. */
void ac_host_function_not_enqueued(struct host_call *c) {
  ac_model_enter();
  struct ac_stream *s = ac_model_stream_by_serial(ac_model, c->serial);
  if (s) ac_order_retract(ac_model, s, c->seq);
  ac_model_leave();
  ac_clock_free(&c->before);
  free(c);
}

/* A successful attach: an operation of its stream, after which the allocation
 * has its new association (until then both bind). The stream and the
 * allocation are those found before the call when nothing changed since:
 * looking them up again after the driver's call, which leaves little of the
 * model in the caches, is most of what a lookup costs. */
void ac_on_attached(const char *api, CUstream stream, bool per_thread, CUdeviceptr dptr,
                    unsigned flags, const struct ac_stack *stack, ac_stack_id stack_id,
                    const struct ac_attach_found *found) {
  bool turned_busy;
  struct ac_guard_before before;
  ac_model_enter();
  bool same = found && ac_model_untouched_since(found->entries);
  ac_guard_before_locked(&before);
  struct ac_stream *s = same ? found->stream : stream_of(stream, per_thread);
  uint64_t seq = enqueue_locked(s, api, AC_OP_ATTACH, &turned_busy);
  if (turned_busy) ac_order_set_busy_stack(ac_model, s, seq, stack);
  struct ac_alloc *a = same ? found->alloc : ac_model_find_alloc(ac_model, (uintptr_t)dptr);
  if (seq) {
    struct ac_op_record *r = ac_history_last(s);
    r->addr = (uintptr_t)dptr;
    r->flags = flags;
    r->alloc_serial = a ? a->serial : 0;
  }
  if (a && seq) {
    struct ac_origin origin = {api, ac_thread_id(), seq, ac_stack_store(stack, stack_id)};
    ac_order_attach(ac_model, a, (enum ac_assoc)flags, s, seq, &origin);
  }
  ac_guard_refresh_after_move_locked(&before, seq ? a : NULL);
  ac_model_leave();
}
