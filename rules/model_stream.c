/* model_stream.c - the stream registry, and when a stream is forgotten.
 *
 * The driver reuses stream handles, so a handle is not an identity: each
 * cuStreamCreate makes a new record with its own serial. A destroyed record
 * stays with its handle - a later use of the handle is AC106's "destroyed",
 * named with the stream it was - until the driver hands the handle out again.
 * It is then an orphan, and is forgotten (freed, its clock entries dropped)
 * as soon as its work is known complete and no allocation names it; records
 * that stay are out of every walk the ordering model makes (model_order.c).
 * So a program that creates and destroys streams by the million holds about
 * as many records as it has handles alive.
 *
 * The legacy NULL stream (one per context) and the per-thread default streams
 * (one per host thread and context) have records of their own, made on first
 * use and never forgotten.
 */
#include <stdlib.h>
#include <string.h>

#include "grow.h"
#include "model_internal.h"
#include "stack_depot.h"

/* Values of CU_STREAM_LEGACY and CU_STREAM_PER_THREAD in cuda.h; rules/ does not
 * include cuda.h. */
#define HANDLE_LEGACY ((uintptr_t)0x1)
#define HANDLE_PER_THREAD ((uintptr_t)0x2)
#define FLAG_NON_BLOCKING 0x1u /* CU_STREAM_NON_BLOCKING */

/* A record the model now holds, findable by serial. */
static void enrol(struct ac_model *m, struct ac_stream *s) {
  s->serial = m->next_stream_serial++;
  HASH_ADD(by_serial, m->by_serial, serial, sizeof s->serial, s);
  m->stream_count++;
}

void ac_model_stream_note_creation(struct ac_model *m, struct ac_stream *s, const char *api,
                                   uint64_t thread, const struct ac_stack *stack) {
  (void)m;
  s->created = (struct ac_origin){api, thread, 0, ac_stack_depot_put(stack)};
}

/* s is no longer named by its handle: it waits to be forgotten. */
static void orphan(struct ac_model *m, struct ac_stream *s) {
  s->in_slot = false;
  AC_LIST_ADD(m->orphans, s, orphan_prev, orphan_next);
  ac_model_consider_forgetting(m, s);
}

struct ac_stream *ac_model_stream_created(struct ac_model *m, uintptr_t handle, unsigned flags,
                                          int priority) {
  struct ac_stream *s = calloc(1, sizeof *s);
  if (!s) return NULL;
  s->handle = handle;
  s->kind = AC_STREAM_CREATED;
  s->flags = flags;
  s->priority = priority;
  s->live = true;
  s->blocking = !(flags & FLAG_NON_BLOCKING);
  s->in_slot = true;
  s->legacy = &m->legacy_stream;

  struct stream_slot *slot;
  HASH_FIND(hh, m->streams, &handle, sizeof handle, slot);
  if (!slot) {
    slot = malloc(sizeof *slot);
    if (!slot) {
      free(s);
      return NULL;
    }
    slot->handle = handle;
    slot->stream = NULL;
    HASH_ADD(hh, m->streams, handle, sizeof slot->handle, slot);
  }
  enrol(m, s);
  struct ac_stream *old = slot->stream;
  slot->stream = s;
  if (old) {
    /* The driver handed out a handle we may still think is live: the old
     * stream was destroyed where we could not see it. */
    old->live = false;
    orphan(m, old);
    ac_model_forget_candidates(m);
  }
  return s;
}

uint64_t ac_model_live_stream_serial(struct ac_model *m, uintptr_t handle) {
  struct stream_slot *slot;
  HASH_FIND(hh, m->streams, &handle, sizeof handle, slot);
  return slot && slot->stream->live ? slot->stream->serial : 0;
}

struct ac_stream *ac_model_stream_destroyed_if(struct ac_model *m, uintptr_t handle,
                                               uint64_t serial) {
  struct stream_slot *slot;
  HASH_FIND(hh, m->streams, &handle, sizeof handle, slot);
  if (!slot || !slot->stream->live || slot->stream->serial != serial) return NULL;
  slot->stream->live = false;
  return slot->stream;
}

struct ac_stream *ac_model_stream_destroyed(struct ac_model *m, uintptr_t handle) {
  return ac_model_stream_destroyed_if(m, handle, ac_model_live_stream_serial(m, handle));
}

void ac_model_stream_set_context(struct ac_model *m, struct ac_stream *s, uintptr_t context) {
  struct ac_stream *legacy = ac_model_legacy_stream_in(m, context);
  s->context = context;
  if (s->legacy == legacy) return;
  AC_LIST_DEL(s->legacy->unjoined, s, join_prev, join_next);
  s->legacy = legacy;
}

static struct ac_stream *per_thread_stream(struct ac_model *m, uint64_t thread, uintptr_t context) {
  struct thread_stream_slot *slot;
  struct thread_stream_key key;
  memset(&key, 0, sizeof key); /* hashed as bytes */
  key.thread = thread;
  key.context = context;
  HASH_FIND(hh, m->per_thread_streams, &key, sizeof key, slot);
  if (slot) return slot->stream;
  slot = malloc(sizeof *slot);
  struct ac_stream *s = calloc(1, sizeof *s);
  if (!slot || !s) {
    free(slot);
    free(s);
    return NULL;
  }
  s->handle = HANDLE_PER_THREAD;
  s->kind = AC_STREAM_PER_THREAD;
  s->live = true;
  s->blocking = true; /* per-thread default streams synchronise with the legacy one */
  s->owner_thread = thread;
  s->context = context;
  s->legacy = ac_model_legacy_stream_in(m, context);
  enrol(m, s);
  slot->key = key;
  slot->stream = s;
  HASH_ADD(hh, m->per_thread_streams, key, sizeof slot->key, slot);
  return s;
}

struct ac_stream_ref ac_model_resolve_stream(struct ac_model *m, uintptr_t handle,
                                             bool per_thread_entry, uint64_t thread) {
  return ac_model_resolve_stream_in(m, handle, per_thread_entry, thread, 0);
}

struct ac_stream_ref ac_model_resolve_stream_in(struct ac_model *m, uintptr_t handle,
                                                bool per_thread_entry, uint64_t thread,
                                                uintptr_t context) {
  struct ac_stream_ref ref = {AC_STREAM_UNTRACKED, NULL};
  if (handle == 0 && !per_thread_entry) {
    ref.kind = AC_STREAM_NULL_LEGACY;
    ref.stream = ac_model_legacy_stream_in(m, context);
  } else if (handle == HANDLE_LEGACY) {
    ref.kind = AC_STREAM_LEGACY;
    ref.stream = ac_model_legacy_stream_in(m, context);
  } else if (handle == 0 || handle == HANDLE_PER_THREAD) {
    ref.kind = AC_STREAM_PER_THREAD;
    ref.stream = per_thread_stream(m, thread, context);
  } else {
    /* Work comes in runs on one stream: the last slot found saves hashing. */
    struct stream_slot *slot = m->last_slot;
    if (!slot || slot->handle != handle) HASH_FIND(hh, m->streams, &handle, sizeof handle, slot);
    if (slot) {
      m->last_slot = slot;
      ref.kind = slot->stream->live ? AC_STREAM_CREATED : AC_STREAM_DESTROYED;
      ref.stream = slot->stream;
    }
  }
  return ref;
}

/* ---- forgetting ---- */

void ac_model_stream_ref(struct ac_stream *s) {
  s->refs++;
}

void ac_model_stream_unref(struct ac_model *m, struct ac_stream *s) {
  if (--s->refs == 0) ac_model_consider_forgetting(m, s);
}

static bool forgettable(const struct ac_model *m, const struct ac_stream *s) {
  return s->kind == AC_STREAM_CREATED && !s->live && !s->in_slot && s->refs == 0 &&
         !ac_order_stream_busy(m, s);
}

/* Only a candidate here: the caller may be walking a list s is on. The
 * candidates are forgotten by ac_model_forget_candidates, at the end of the
 * model's operation. */
void ac_model_consider_forgetting(struct ac_model *m, struct ac_stream *s) {
  if (s->candidate || !forgettable(m, s)) return;
  if (!AC_GROW(m->candidates, m->candidate_count, m->candidate_cap, 8)) return;
  s->candidate = true;
  m->candidates[m->candidate_count++] = s;
}

static void free_stream(struct ac_stream *s) {
  ac_clock_free(&s->waited);
  ac_clock_free(&s->busy_from);
  ac_history_free(&s->history);
  free(s->reach);
  free(s);
}

static void forget(struct ac_model *m, struct ac_stream *s) {
  /* The legacy stream's next operation would have waited for its work: it
   * still does, as that work is known complete. */
  if (AC_LIST_IN(s, join_prev)) ac_order_join_legacy_now(m, s);
  AC_LIST_DEL(m->orphans, s, orphan_prev, orphan_next);
  AC_LIST_DEL(m->busy, s, busy_prev, busy_next);
  AC_LIST_DEL(m->settling, s, settle_prev, settle_next);
  HASH_DELETE(by_serial, m->by_serial, s);
  m->stream_count--;
  m->forgotten_unswept++;
  free_stream(s);
}

void ac_model_forget_candidates(struct ac_model *m) {
  if (m->pins) return;
  bool any = false;
  for (size_t i = 0; i < m->candidate_count; i++) {
    struct ac_stream *s = m->candidates[i];
    s->candidate = false;
    if (forgettable(m, s)) forget(m, s), any = true;
  }
  m->candidate_count = 0;
  if (any) ac_order_sweep_clocks(m);
}

void ac_model_pin_streams(struct ac_model *m) {
  m->pins++;
}

void ac_model_unpin_streams(struct ac_model *m, size_t n) {
  m->pins = n < m->pins ? m->pins - n : 0;
  ac_model_forget_candidates(m);
}

size_t ac_model_stream_count(const struct ac_model *m) {
  return m->stream_count;
}

/* ---- walking, and the end of the model ---- */

void ac_model_free_streams(struct ac_model *m) {
  struct stream_slot *slot, *tmp;
  m->last_slot = NULL;
  HASH_ITER(hh, m->streams, slot, tmp) {
    HASH_DEL(m->streams, slot);
    free(slot);
  }
  struct thread_stream_slot *ts, *ttmp;
  HASH_ITER(hh, m->per_thread_streams, ts, ttmp) {
    HASH_DEL(m->per_thread_streams, ts);
    free(ts);
  }
  struct legacy_slot *ls, *ltmp; /* their records are freed below, with every other */
  HASH_ITER(hh, m->other_legacies, ls, ltmp) {
    HASH_DEL(m->other_legacies, ls);
    free(ls);
  }
  struct ac_stream *s, *stmp;
  HASH_ITER(by_serial, m->by_serial, s, stmp) {
    HASH_DELETE(by_serial, m->by_serial, s);
    if (s != &m->legacy_stream) free_stream(s);
  }
  free(m->candidates);
  m->candidates = NULL;
  m->candidate_count = m->candidate_cap = 0;
}

void ac_model_for_each_stream(struct ac_model *m, void (*fn)(struct ac_stream *, void *),
                              void *ctx) {
  fn(&m->legacy_stream, ctx);
  struct legacy_slot *ls, *ltmp;
  HASH_ITER(hh, m->other_legacies, ls, ltmp) fn(ls->stream, ctx);
  struct stream_slot *slot, *tmp;
  HASH_ITER(hh, m->streams, slot, tmp) fn(slot->stream, ctx);
  struct thread_stream_slot *ts, *ttmp;
  HASH_ITER(hh, m->per_thread_streams, ts, ttmp) fn(ts->stream, ctx);
  struct ac_stream *s, *stmp;
  DL_FOREACH_SAFE2(m->orphans, s, stmp, orphan_next) fn(s, ctx);
}

void ac_model_for_each_busy_stream(struct ac_model *m, void (*fn)(struct ac_stream *, void *),
                                   void *ctx) {
  struct ac_stream *s, *tmp;
  DL_FOREACH_SAFE2(m->busy, s, tmp, busy_next) fn(s, ctx);
}

struct ac_stream *ac_model_stream_by_serial(struct ac_model *m, uint64_t serial) {
  struct ac_stream *s = NULL;
  if (serial) HASH_FIND(by_serial, m->by_serial, &serial, sizeof serial, s);
  return s;
}

struct ac_stream *ac_model_legacy_stream(struct ac_model *m) {
  return &m->legacy_stream;
}

static void make_legacy(struct ac_model *m, struct ac_stream *s, uintptr_t context) {
  s->kind = AC_STREAM_LEGACY;
  s->handle = HANDLE_LEGACY;
  s->live = true;
  s->blocking = true;
  s->context = context;
  s->legacy = s;
  enrol(m, s);
}

void ac_model_enrol_legacy(struct ac_model *m) {
  make_legacy(m, &m->legacy_stream, 0);
}

struct ac_stream *ac_model_legacy_stream_in(struct ac_model *m, uintptr_t context) {
  struct ac_stream *first = &m->legacy_stream;
  if (!context || context == first->context) return first;
  if (!first->context) { /* the first context named */
    first->context = context;
    return first;
  }
  struct legacy_slot *slot;
  HASH_FIND(hh, m->other_legacies, &context, sizeof context, slot);
  if (slot) return slot->stream;
  slot = malloc(sizeof *slot);
  struct ac_stream *s = calloc(1, sizeof *s);
  if (!slot || !s) { /* out of memory: ordered as one context, as before contexts were told apart */
    free(slot);
    free(s);
    return first;
  }
  make_legacy(m, s, context);
  slot->context = context;
  slot->stream = s;
  HASH_ADD(hh, m->other_legacies, context, sizeof slot->context, slot);
  return s;
}

size_t ac_model_legacy_count(const struct ac_model *m) {
  return 1 + HASH_COUNT(m->other_legacies);
}
