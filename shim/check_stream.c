/* check_stream.c - streams: created, destroyed, capturing. */
#include "shim.h"

void ac_check_stream_created(CUstream stream, unsigned flags, int priority) {
  pthread_mutex_lock(&ac_model_lock);
  ac_model_stream_created(ac_model, (uintptr_t)stream, flags, priority);
  pthread_mutex_unlock(&ac_model_lock);
}

void ac_check_stream_destroyed(CUstream stream) {
  pthread_mutex_lock(&ac_model_lock);
  ac_model_stream_destroyed(ac_model, (uintptr_t)stream);
  pthread_mutex_unlock(&ac_model_lock);
}

static void set_capturing(CUstream stream, bool per_thread, bool capturing) {
  pthread_mutex_lock(&ac_model_lock);
  struct ac_stream_ref ref =
      ac_model_resolve_stream(ac_model, (uintptr_t)stream, per_thread, ac_thread_id());
  if (ref.stream) ref.stream->capturing = capturing;
  pthread_mutex_unlock(&ac_model_lock);
}

void ac_check_capture_begun(CUstream stream, bool per_thread) {
  set_capturing(stream, per_thread, true);
}

void ac_check_capture_ended(CUstream stream, bool per_thread) {
  set_capturing(stream, per_thread, false);
}
