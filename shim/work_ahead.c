/* work_ahead.c - the managed memory a launch, a copy or a set is about to
 * reach, read before it is forwarded, for the page guard to move what it
 * closed to the GPU first (guard/ahead.c says why). A kernel's pointer
 * arguments are found through the layout learned at an earlier launch the
 * driver accepted (kernel_args.c); a copy's or set's destination is given.
 * Words are filtered without the lock, then looked up under it. A graph
 * launch's are read in graph_args.c, which keeps its executables. */
#include <string.h>

#include "gpu_work.h"

/* The words that may point at closed memory, found without the lock. */
struct ahead_words {
  int n;
  uintptr_t word[AC_GUARD_AHEAD_MAX * 2];
};

static void note_word(uintptr_t word, int param, size_t offset, void *ctx) {
  struct ahead_words *w = ctx;
  (void)param, (void)offset;
  if (word && w->n < (int)(sizeof w->word / sizeof w->word[0]) &&
      ac_guard_ahead_maybe(word, word + 1))
    w->word[w->n++] = word;
}

bool ac_ahead_begin(CUstream stream, bool per_thread) {
  ac_model_enter();
  struct ac_stream *s = ac_resolve_stream_locked(stream, per_thread, ac_thread_id()).stream;
  return s && !s->capturing && !ac_capture_any(ac_model);
}

void ac_ahead_end(const struct ac_guard_ahead *b, CUstream stream, bool per_thread) {
  ac_model_leave_as_is(); /* nothing the guard follows changed */
  ac_guard_ahead_issue(b, stream, per_thread);
}

/* The words' allocations (whole; bytes 0) or [word[0], + bytes), moved to the
 * GPU on stream where the guard closed them. */
static void ahead_move(const struct ahead_words *w, size_t bytes, CUstream stream,
                       bool per_thread) {
  struct ac_guard_ahead b = {0};
  if (ac_ahead_begin(stream, per_thread))
    for (int i = 0; i < w->n; i++) {
      struct ac_alloc *a = ac_model_find_alloc(ac_model, w->word[i]);
      if (a)
        ac_guard_ahead_note_locked(&b, a, bytes ? w->word[i] : 0, bytes ? w->word[i] + bytes : 0);
    }
  ac_ahead_end(&b, stream, per_thread);
}

void ac_launch_ahead(CUfunction f, CUstream stream, bool per_thread, void **params, void **extra) {
  if (!ac_guard_ahead_armed()) return;
  /* Only a layout learned at an accepted launch: the driver is asked nothing
   * of a handle before it took a launch of it (the first launch goes without). */
  const struct ac_layout *lay = f ? ac_layout_known(f) : NULL;
  if (!lay || !lay->known) return;
  struct ahead_words w = {0};
  ac_for_each_argument_word(lay, params, extra, note_word, &w);
  if (w.n) ahead_move(&w, 0, stream, per_thread);
}

void ac_copy_ahead(CUstream stream, bool per_thread, uintptr_t dst, size_t bytes) {
  if (!dst || !bytes || !ac_guard_ahead_armed() || !ac_guard_ahead_maybe(dst, dst + bytes)) return;
  struct ahead_words w = {1, {dst}};
  ahead_move(&w, bytes, stream, per_thread);
}
