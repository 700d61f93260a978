/* model_capture.c - capture sequences that span streams.
 *
 * A capture is begun on one stream, its origin; a stream that waits for an
 * event recorded in the capture joins it (cuda.h: the capture then "contains
 * a fork" that must be joined back before it ends), and from then on its
 * operations are nodes of the graph, not work that runs now. The origin's end
 * of the capture, whatever the driver answers, ends it for every stream of
 * it. The streams of the captures in progress are kept by serial, a few
 * entries per capture, so ending one walks those and never every stream.
 */
#include <stdlib.h>

#include "grow.h"
#include "model_internal.h"

static bool add_member(struct ac_model *m, struct ac_stream *s, uint64_t capture, bool origin) {
  if (!AC_GROW(m->captures, m->capture_count, m->capture_cap, 4)) return false;
  m->captures[m->capture_count++] = (struct capture_member){capture, s->serial, origin};
  s->capture = capture;
  s->capturing = true;
  return true;
}

static bool capture_in_progress(const struct ac_model *m, uint64_t capture) {
  for (size_t i = 0; capture && i < m->capture_count; i++)
    if (m->captures[i].capture == capture) return true;
  return false;
}

static void leave(struct ac_stream *s) {
  s->capture = 0;
  s->capturing = false;
}

/* Every stream of capture leaves it, and its entries go. */
static void end(struct ac_model *m, uint64_t capture) {
  size_t kept = 0;
  for (size_t i = 0; i < m->capture_count; i++) {
    struct capture_member c = m->captures[i];
    if (c.capture != capture) {
      m->captures[kept++] = c;
      continue;
    }
    struct ac_stream *s = ac_model_stream_by_serial(m, c.serial);
    if (s && s->capture == capture) leave(s);
  }
  m->capture_count = kept;
}

void ac_capture_begin(struct ac_model *m, struct ac_stream *s) {
  if (s->capture) end(m, s->capture); /* an earlier one the shim did not see end */
  if (!add_member(m, s, ++m->last_capture, true)) {
    s->capture = 0; /* out of memory: it captures alone, and no stream can join it */
    s->capturing = true;
  }
}

void ac_capture_end(struct ac_model *m, struct ac_stream *s) {
  for (size_t i = 0; i < m->capture_count; i++)
    if (m->captures[i].origin && m->captures[i].serial == s->serial) {
      end(m, m->captures[i].capture);
      return;
    }
  if (!s->capture) leave(s); /* out of memory at its beginning: captured alone */
}

bool ac_capture_join(struct ac_model *m, struct ac_stream *s, uint64_t capture) {
  if (!capture_in_progress(m, capture)) return false;
  if (s->capture != capture) add_member(m, s, capture, false);
  return true;
}

void ac_capture_end_all(struct ac_model *m) {
  while (m->capture_count)
    end(m, m->captures[0].capture);
}

bool ac_capture_any(const struct ac_model *m) {
  return m->capture_count > 0;
}

void ac_model_free_captures(struct ac_model *m) {
  free(m->captures);
  m->captures = NULL;
  m->capture_count = m->capture_cap = 0;
}
