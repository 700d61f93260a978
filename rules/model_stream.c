/* model_stream.c - the stream registry.
 *
 * The driver reuses stream handles, so a handle is not an identity: each
 * cuStreamCreate makes a new record with its own serial, and a destroyed
 * record is retired (kept for findings that name it) rather than freed.
 * The legacy NULL stream and the per-thread default streams (one per host
 * thread) have records of their own, made on first use.
 */
#include <stdlib.h>

#include "model_internal.h"

/* Values of CU_STREAM_LEGACY and CU_STREAM_PER_THREAD in cuda.h; rules/ does not
 * include cuda.h. */
#define HANDLE_LEGACY ((uintptr_t)0x1)
#define HANDLE_PER_THREAD ((uintptr_t)0x2)
#define FLAG_NON_BLOCKING 0x1u /* CU_STREAM_NON_BLOCKING */

static void free_stream(struct ac_stream *s) {
  ac_clock_free(&s->waited);
  free(s->reach);
  free(s);
}

static void retire(struct ac_model *m, struct ac_stream *s) {
  struct retired_stream *r = malloc(sizeof *r);
  if (!r) return; /* leak the record rather than free what findings may name */
  r->stream = s;
  r->next = m->retired;
  m->retired = r;
}

void ac_model_stream_note_creation(struct ac_model *m, struct ac_stream *s, const char *api,
                                   uint64_t thread, const struct ac_stack *stack) {
  (void)m;
  s->created = (struct ac_op_origin){api, thread, 0, *stack};
}

struct ac_stream *ac_model_stream_created(struct ac_model *m, uintptr_t handle, unsigned flags,
                                          int priority) {
  struct ac_stream *s = calloc(1, sizeof *s);
  if (!s) return NULL;
  s->serial = m->next_stream_serial++;
  s->handle = handle;
  s->kind = AC_STREAM_CREATED;
  s->flags = flags;
  s->priority = priority;
  s->live = true;
  s->blocking = !(flags & FLAG_NON_BLOCKING);

  struct stream_slot *slot;
  HASH_FIND(hh, m->streams, &handle, sizeof handle, slot);
  if (slot) {
    /* The driver handed out a handle we still think is live: the old stream
     * was destroyed where we could not see it. */
    if (slot->stream->live) slot->stream->live = false;
    retire(m, slot->stream);
    slot->stream = s;
    return s;
  }
  slot = malloc(sizeof *slot);
  if (!slot) {
    free(s);
    return NULL;
  }
  slot->handle = handle;
  slot->stream = s;
  HASH_ADD(hh, m->streams, handle, sizeof slot->handle, slot);
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

static struct ac_stream *per_thread_stream(struct ac_model *m, uint64_t thread) {
  struct thread_stream_slot *slot;
  HASH_FIND(hh, m->per_thread_streams, &thread, sizeof thread, slot);
  if (slot) return slot->stream;
  slot = malloc(sizeof *slot);
  struct ac_stream *s = calloc(1, sizeof *s);
  if (!slot || !s) {
    free(slot);
    free(s);
    return NULL;
  }
  s->serial = m->next_stream_serial++;
  s->handle = HANDLE_PER_THREAD;
  s->kind = AC_STREAM_PER_THREAD;
  s->live = true;
  s->blocking = true; /* per-thread default streams synchronise with the legacy one */
  s->owner_thread = thread;
  slot->thread = thread;
  slot->stream = s;
  HASH_ADD(hh, m->per_thread_streams, thread, sizeof slot->thread, slot);
  return s;
}

struct ac_stream_ref ac_model_resolve_stream(struct ac_model *m, uintptr_t handle,
                                             bool per_thread_entry, uint64_t thread) {
  struct ac_stream_ref ref = {AC_STREAM_UNTRACKED, NULL};
  if (handle == 0 && !per_thread_entry) {
    ref.kind = AC_STREAM_NULL_LEGACY;
    ref.stream = &m->legacy_stream;
  } else if (handle == HANDLE_LEGACY) {
    ref.kind = AC_STREAM_LEGACY;
    ref.stream = &m->legacy_stream;
  } else if (handle == 0 || handle == HANDLE_PER_THREAD) {
    ref.kind = AC_STREAM_PER_THREAD;
    ref.stream = per_thread_stream(m, thread);
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

void ac_model_free_streams(struct ac_model *m) {
  struct stream_slot *slot, *tmp;
  m->last_slot = NULL;
  HASH_ITER(hh, m->streams, slot, tmp) {
    HASH_DEL(m->streams, slot);
    free_stream(slot->stream); /* the records replaced in a slot are on the retired list */
    free(slot);
  }
  struct thread_stream_slot *ts, *ttmp;
  HASH_ITER(hh, m->per_thread_streams, ts, ttmp) {
    HASH_DEL(m->per_thread_streams, ts);
    free_stream(ts->stream);
    free(ts);
  }
  while (m->retired) {
    struct retired_stream *r = m->retired;
    m->retired = r->next;
    free_stream(r->stream);
    free(r);
  }
}

void ac_model_for_each_stream(struct ac_model *m, void (*fn)(struct ac_stream *, void *),
                              void *ctx) {
  fn(&m->legacy_stream, ctx);
  struct stream_slot *slot, *tmp;
  HASH_ITER(hh, m->streams, slot, tmp) fn(slot->stream, ctx);
  struct thread_stream_slot *ts, *ttmp;
  HASH_ITER(hh, m->per_thread_streams, ts, ttmp) fn(ts->stream, ctx);
  for (struct retired_stream *r = m->retired; r; r = r->next)
    fn(r->stream, ctx);
}

struct ac_stream *ac_model_legacy_stream(struct ac_model *m) {
  return &m->legacy_stream;
}
