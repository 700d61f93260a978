/* check_context.c - the context each stream was made in, so that a context's
 * events (cuCtxRecordEvent, cuCtxWaitEvent) and its synchronisation
 * (cuCtxSynchronize) reach its own streams and not another device's.
 *
 * A stream is counted as the context current on its creating thread when
 * cuStreamCreate returned (kept by stream serial: handles are reused). The
 * model has one legacy stream and one per-thread stream per thread for the
 * whole process, so those count as the context current on the calling thread
 * (docs/design.md, "Several devices").
 */
#include <stdlib.h>

#include "grow.h"
#include "shim.h"

struct ctx_stream {
  uintptr_t ctx;
  uint64_t serial;
};
static struct ctx_stream *ctx_streams; /* under the model lock */
static size_t ctx_count, ctx_cap;

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

/* Model lock held: entries of streams destroyed since are dropped. */
static void forget_dead_locked(void) {
  size_t kept = 0;
  for (size_t i = 0; i < ctx_count; i++) {
    struct ac_stream *s = ac_model_stream_by_serial(ac_model, ctx_streams[i].serial);
    if (s && s->live) ctx_streams[kept++] = ctx_streams[i];
  }
  ctx_count = kept;
}

void ac_check_stream_context(CUstream stream) {
  uintptr_t ctx = current_context();
  if (!ctx) return;
  ac_model_enter();
  uint64_t serial = ac_model_live_stream_serial(ac_model, (uintptr_t)stream);
  if (ctx_count == ctx_cap) forget_dead_locked();
  if (serial && AC_GROW(ctx_streams, ctx_count, ctx_cap, 8))
    ctx_streams[ctx_count++] = (struct ctx_stream){ctx, serial};
  ac_model_leave();
}

void ac_check_context_destroyed(CUcontext ctx) {
  ac_model_enter();
  size_t kept = 0;
  for (size_t i = 0; i < ctx_count; i++)
    if (ctx_streams[i].ctx != (uintptr_t)ctx) ctx_streams[kept++] = ctx_streams[i];
  ctx_count = kept;
  ac_model_leave();
}

/* Model lock held: the context s was counted as, or 0 if none. */
static uintptr_t context_of_locked(const struct ac_stream *s) {
  for (size_t i = 0; i < ctx_count; i++)
    if (ctx_streams[i].serial == s->serial) return ctx_streams[i].ctx;
  return 0;
}

/* Model lock held: the live streams of ctx, the default streams included
 * with_defaults (ctx is current here), into *out (malloc'd); returns how many. */
static size_t streams_of_locked(uintptr_t ctx, bool with_defaults, struct ac_stream ***out) {
  size_t n = 0, cap = 0;
  *out = NULL;
  if (ctx && with_defaults) {
    struct ac_stream *defaults[2] = {
        ac_model_legacy_stream(ac_model),
        ac_model_resolve_stream(ac_model, 0, true, ac_thread_id()).stream};
    for (int i = 0; i < 2; i++)
      if (defaults[i] && AC_GROW(*out, n, cap, 4)) (*out)[n++] = defaults[i];
  }
  for (size_t i = 0; i < ctx_count; i++) {
    struct ac_stream *s = ctx_streams[i].ctx == ctx
                              ? ac_model_stream_by_serial(ac_model, ctx_streams[i].serial)
                              : NULL;
    if (s && s->live && AC_GROW(*out, n, cap, 4)) (*out)[n++] = s;
  }
  return n;
}

/* A context's event covers the work of each of its streams the shim knows;
 * one it does not know is left out, which can only report an access that was
 * ordered, never hide one that was not. */
static void context_event(CUcontext ctx, CUevent event, bool record) {
  uintptr_t c = named_context(ctx);
  bool with_defaults = c == current_context();
  struct ac_stream **streams;
  ac_model_enter();
  size_t n = streams_of_locked(c, with_defaults, &streams);
  (record ? ac_event_recorded_over_locked : ac_streams_wait_event_locked)(event, streams, n);
  ac_model_leave();
  free(streams);
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
/* A stream counted as another context's is not waited for; the rest are
 * (legacy, per-thread, green contexts' streams and streams of unknown
 * context), as before the shim knew contexts apart. */
static void sync_unless_foreign(struct ac_stream *s, void *arg) {
  uintptr_t owner = context_of_locked(s);
  if (!owner || owner == ((struct ctx_sync *)arg)->ctx) ac_order_host_syncs_stream(ac_model, s);
}

void ac_on_ctx_sync(CUcontext ctx) {
  struct ctx_sync sync = {named_context(ctx)};
  ac_model_enter();
  bool foreign = false;
  for (size_t i = 0; i < ctx_count && !foreign; i++)
    foreign = ctx_streams[i].ctx != sync.ctx;
  if (foreign && sync.ctx)
    ac_model_for_each_stream(ac_model, sync_unless_foreign, &sync);
  else
    ac_order_host_syncs_all(ac_model);
  ac_history_push(ac_model, NULL, AC_OP_CTX_SYNC, NULL, ac_thread_id());
  ac_guard_refresh_locked();
  ac_model_leave();
}
