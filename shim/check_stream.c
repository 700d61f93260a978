/* check_stream.c - streams: created, destroyed, capturing. */
#include <stdlib.h>
#include <string.h>

#include "rules_host.h"
#include "shim.h"

void ac_check_stream_created(CUstream stream, unsigned flags, int priority) {
  ac_model_enter();
  ac_model_stream_created(ac_model, (uintptr_t)stream, flags, priority);
  ac_model_leave();
}

struct notes {
  struct ac_finding *f;
  int n, cap;
};

static void collect(struct ac_finding *f, void *ctx) {
  struct notes *notes = ctx;
  if (notes->n == notes->cap) {
    int cap = notes->cap ? notes->cap * 2 : 4;
    struct ac_finding *grown = realloc(notes->f, (size_t)cap * sizeof *grown);
    if (!grown) return;
    notes->f = grown;
    notes->cap = cap;
  }
  notes->f[notes->n++] = *f;
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
 * handle named before the call: by now it may name another thread's new one. */
void ac_check_stream_destroyed(const char *api, CUstream stream, uint64_t serial) {
  struct notes notes = {0};
  ac_model_enter();
  struct ac_stream *s = ac_model_stream_destroyed_if(ac_model, (uintptr_t)stream, serial);
  if (s) ac_judge_stream_destroyed(ac_model, s, collect, &notes);
  ac_guard_refresh_locked();
  ac_model_leave();
  if (notes.n == 0) return;
  struct ac_stack stack;
  ac_stack_capture(&stack);
  for (int i = 0; i < notes.n; i++) {
    struct ac_finding *f = &notes.f[i];
    f->api = api;
    f->args.stream = (uintptr_t)stream;
    f->stream_kind = AC_STREAM_DESTROYED;
    f->stream_serial = s->serial;
    f->thread = ac_thread_id();
    f->stack = stack;
    ac_emit_finding(f, AC_DRIVER_RETURNED, CUDA_SUCCESS);
  }
  free(notes.f);
}

static void set_capturing(CUstream stream, bool per_thread, bool capturing) {
  ac_model_enter();
  struct ac_stream_ref ref =
      ac_model_resolve_stream(ac_model, (uintptr_t)stream, per_thread, ac_thread_id());
  if (ref.stream) ac_model_set_capturing(ac_model, ref.stream, capturing);
  ac_model_leave();
}

void ac_check_capture_begun(CUstream stream, bool per_thread) {
  set_capturing(stream, per_thread, true);
}

void ac_check_capture_ended(CUstream stream, bool per_thread) {
  set_capturing(stream, per_thread, false);
}
