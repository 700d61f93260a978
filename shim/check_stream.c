/* check_stream.c - streams: created, destroyed, capturing, and which green
 * context each was made in. */
#include <stdlib.h>
#include <string.h>

#include "grow.h"
#include "rules_host.h"
#include "shim.h"

void ac_check_stream_created(const char *api, CUstream stream, unsigned flags, int priority) {
  struct ac_stack stack; /* taken outside the lock: the reports draw each stream's birth */
  ac_stack_capture(&stack);
  ac_model_enter();
  struct ac_stream *s = ac_model_stream_created(ac_model, (uintptr_t)stream, flags, priority);
  if (s) ac_model_stream_note_creation(ac_model, s, api, ac_thread_id(), &stack);
  ac_model_leave();
}

/* ---- green contexts: the streams the shim saw made in each ----
 * Kept by stream serial (handles are reused), under the model lock; a
 * stream destroyed since is skipped when they are asked for. */

struct green_stream {
  uintptr_t green;
  uint64_t serial;
};
static struct green_stream *green_streams;
static size_t green_count, green_cap;

void ac_check_green_stream_created(CUstream stream, CUgreenCtx green, unsigned flags,
                                   int priority) {
  ac_check_stream_created("cuGreenCtxStreamCreate", stream, flags, priority);
  ac_model_enter();
  uint64_t serial = ac_model_live_stream_serial(ac_model, (uintptr_t)stream);
  if (serial && AC_GROW(green_streams, green_count, green_cap, 8))
    green_streams[green_count++] = (struct green_stream){(uintptr_t)green, serial};
  ac_model_leave();
}

/* The green context's handle may name another one later. */
void ac_check_green_ctx_destroyed(CUgreenCtx green) {
  ac_model_enter();
  size_t kept = 0;
  for (size_t i = 0; i < green_count; i++)
    if (green_streams[i].green != (uintptr_t)green) green_streams[kept++] = green_streams[i];
  green_count = kept;
  ac_model_leave();
}

size_t ac_check_green_streams_locked(CUgreenCtx green, struct ac_stream ***out) {
  AC_ASSERT_MODEL_HELD();
  size_t n = 0, cap = 0;
  *out = NULL;
  for (size_t i = 0; i < green_count; i++) {
    struct ac_stream *s = green_streams[i].green == (uintptr_t)green
                              ? ac_model_stream_by_serial(ac_model, green_streams[i].serial)
                              : NULL;
    if (s && s->live && AC_GROW(*out, n, cap, 4)) (*out)[n++] = s;
  }
  return n;
}

struct notes {
  struct ac_finding *f;
  int n, cap;
};

static void collect(struct ac_finding *f, void *ctx) {
  struct notes *notes = ctx;
  if (AC_GROW(notes->f, notes->n, notes->cap, 4)) notes->f[notes->n++] = *f;
}

uint64_t ac_check_stream_to_destroy(CUstream stream) {
  ac_model_enter();
  uint64_t serial = ac_model_live_stream_serial(ac_model, (uintptr_t)stream);
  ac_model_leave();
  return serial;
}

/* cuStreamDestroy does not synchronise: the stream's work stays outstanding,
 * and memory single-attached to it reverts to its default association once
 * that work is complete (AC402, a note for each). serial is the stream the
 * handle named before the call: by now it may name another thread's new one.
 * The findings' timelines read the stream's record: it stays pinned until
 * they are reported. */
void ac_check_stream_destroyed(const char *api, CUstream stream, uint64_t serial) {
  struct notes notes = {0};
  ac_model_enter();
  struct ac_stream *s = ac_model_stream_destroyed_if(ac_model, (uintptr_t)stream, serial);
  if (s) ac_judge_stream_destroyed(ac_model, s, collect, &notes);
  if (notes.n) ac_model_pin_streams(ac_model);
  ac_model_leave();
  if (notes.n == 0) return;
  struct ac_stack stack;
  ac_stack_capture(&stack);
  for (int i = 0; i < notes.n; i++) {
    struct ac_finding *f = &notes.f[i];
    f->api = api;
    f->stream.handle = (uintptr_t)stream; /* as the program passed it */
    f->thread = ac_thread_id();
    f->stack = stack;
    ac_emit_finding(f, AC_DRIVER_RETURNED, CUDA_SUCCESS);
  }
  free(notes.f);
  ac_model_enter();
  ac_model_unpin_streams(ac_model, 1);
  ac_model_leave();
}

/* A capture begins on its origin stream, or ends there for every stream
 * that joined it (model_capture.c). */
static void capture_changed(CUstream stream, bool per_thread,
                            void (*change)(struct ac_model *, struct ac_stream *)) {
  ac_model_enter();
  struct ac_stream_ref ref = ac_resolve_stream_locked(stream, per_thread, ac_thread_id());
  if (ref.stream) change(ac_model, ref.stream);
  ac_model_leave();
}

void ac_check_capture_begun(CUstream stream, bool per_thread) {
  capture_changed(stream, per_thread, ac_capture_begin);
}

void ac_check_capture_ended(CUstream stream, bool per_thread) {
  capture_changed(stream, per_thread, ac_capture_end);
}

/* ---- the end of the context: every stream of it ends ---- */

static void end_stream(struct ac_stream *s, void *unused) {
  (void)unused;
  if (s->kind == AC_STREAM_CREATED && s->live) ac_model_stream_destroyed(ac_model, s->handle);
}

/* Model lock held. The context's work is over (completed or abandoned with
 * it), its created streams are destroyed (a handle used afterwards is AC106's
 * "destroyed"), and its captures have ended. The legacy and per-thread
 * streams stay: the next context has them too. */
void ac_check_streams_ended_locked(void) {
  AC_ASSERT_MODEL_HELD();
  ac_order_host_syncs_all(ac_model);
  ac_capture_end_all(ac_model);
  ac_model_for_each_stream(ac_model, end_stream, NULL);
}
