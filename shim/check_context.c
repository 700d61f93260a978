/* check_context.c - which driver context each stream belongs to, so that a
 * context's default streams, its events (cuCtxRecordEvent, cuCtxWaitEvent)
 * and its synchronisation (cuCtxSynchronize) are its own and not another
 * context's.
 *
 * Each context has its own legacy NULL stream and, per host thread, its own
 * per-thread default stream (docs/driver-facts.md: a context's NULL-stream
 * synchronisation does not wait for another's). A default-stream argument
 * is resolved in the calling thread's current context; a stream made by
 * cuStreamCreate belongs to the context current on its creating thread when
 * the call returned. The model keeps the context on each stream record
 * (ac_stream.context, 0 where it is not known) and orders a blocking stream
 * with its own context's legacy stream only.
 */
#include <stdlib.h>

#include "grow.h"
#include "shim.h"

/* The calling thread's current context, or 0 if it has none or cannot say. */
static uintptr_t current_context(void) {
  CUcontext ctx = NULL;
  if (!ac_real.cuCtxGetCurrent || ac_real.cuCtxGetCurrent(&ctx) != CUDA_SUCCESS) return 0;
  return (uintptr_t)ctx;
}

/* The context a call names: its argument, or the current one for NULL. */
static uintptr_t named_context(CUcontext ctx) {
  return ctx ? (uintptr_t)ctx : current_context();
}

/* CU_STREAM_LEGACY and CU_STREAM_PER_THREAD are handles 1 and 2; 0 is
 * either, by the entry point. */
static bool is_default_stream(CUstream stream) {
  return (uintptr_t)stream <= (uintptr_t)CU_STREAM_PER_THREAD;
}

/* A default-stream argument is taken in the calling thread's current
 * context (asked of the driver only for those: cuCtxGetCurrent reads the
 * calling thread's state, so under the model lock too). */
struct ac_stream_ref ac_resolve_stream_locked(CUstream stream, bool per_thread, uint64_t thread) {
  AC_ASSERT_MODEL_HELD();
  uintptr_t context = is_default_stream(stream) ? current_context() : 0;
  return ac_model_resolve_stream_in(ac_model, (uintptr_t)stream, per_thread, thread, context);
}

void ac_check_stream_context(CUstream stream) {
  uintptr_t ctx = current_context();
  if (!ctx) return;
  ac_model_enter();
  struct ac_stream *s =
      ac_model_stream_by_serial(ac_model, ac_model_live_stream_serial(ac_model, (uintptr_t)stream));
  if (s) ac_model_stream_set_context(ac_model, s, ctx);
  ac_model_leave();
}

struct context_walk {
  uintptr_t ctx;
  struct ac_stream **streams;
  size_t n, cap;
};

/* Model lock held: s is one of walk->ctx's live streams - its default
 * streams of any thread, the streams made in it. */
static void collect_if_of(struct ac_stream *s, void *arg) {
  struct context_walk *w = arg;
  if (s->live && s->context == w->ctx && AC_GROW(w->streams, w->n, w->cap, 8))
    w->streams[w->n++] = s;
}

/* Its work ends with it (a handle or address reused later is new). */
void ac_check_context_destroyed(CUcontext ctx) {
  struct context_walk w = {(uintptr_t)ctx, NULL, 0, 0};
  ac_model_enter();
  ac_model_for_each_stream(ac_model, collect_if_of, &w);
  for (size_t i = 0; i < w.n; i++)
    ac_order_host_syncs_stream(ac_model, w.streams[i]);
  ac_model_leave();
  free(w.streams);
}

/* Model lock held: the live streams of ctx into w. Its legacy stream and,
 * where ctx is current, the calling thread's per-thread stream are made
 * first if they were never used: a wait must reach their next operation. */
static void streams_of_locked(struct context_walk *w, bool current) {
  ac_model_legacy_stream_in(ac_model, w->ctx);
  if (current) ac_model_resolve_stream_in(ac_model, 0, true, ac_thread_id(), w->ctx);
  ac_model_for_each_stream(ac_model, collect_if_of, w);
}

/* A context's event covers the work of each of its streams the shim knows;
 * one it does not know is left out, which can only report an access that was
 * ordered, never hide one that was not. */
static void context_event(CUcontext ctx, CUevent event, bool record) {
  uintptr_t c = named_context(ctx);
  struct context_walk w = {c, NULL, 0, 0};
  bool current = c && c == current_context();
  ac_model_enter();
  if (c) streams_of_locked(&w, current);
  (record ? ac_event_recorded_over_locked : ac_streams_wait_event_locked)(event, w.streams, w.n);
  ac_model_leave();
  free(w.streams);
}
void ac_on_ctx_event_record(CUcontext ctx, CUevent event) {
  context_event(ctx, event, true);
}
/* ... and each of them waits for a context's wait. */
void ac_on_ctx_event_wait(CUcontext ctx, CUevent event) {
  context_event(ctx, event, false);
}

struct ctx_sync {
  uintptr_t ctx;
};
/* A stream of another context is not waited for; the rest are (this
 * context's, green contexts' streams and streams of unknown context), as
 * before the shim knew contexts apart. */
static void sync_unless_foreign(struct ac_stream *s, void *arg) {
  if (!s->context || s->context == ((struct ctx_sync *)arg)->ctx)
    ac_order_host_syncs_stream(ac_model, s);
}

void ac_on_ctx_sync(CUcontext ctx) {
  struct ctx_sync sync = {named_context(ctx)};
  ac_model_enter();
  /* Every context a stream was seen in has a legacy stream of its own: with
   * one, this context's, every stream is this context's or of none known. */
  uintptr_t first = ac_model_legacy_stream(ac_model)->context;
  bool only_this = ac_model_legacy_count(ac_model) == 1 && (!first || first == sync.ctx);
  if (sync.ctx && !only_this)
    ac_model_for_each_stream(ac_model, sync_unless_foreign, &sync);
  else
    ac_order_host_syncs_all(ac_model);
  ac_history_push(ac_model, NULL, AC_OP_CTX_SYNC, NULL, ac_thread_id());
  ac_model_leave();
}
