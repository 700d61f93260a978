/* model_history.c - the latest operations of each stream and of the host, kept
 * for the reports' timeline: what was enqueued, waited for and synchronised
 * before a finding, in the model's order.
 *
 * Every record takes the next tick of one counter the whole model shares, so
 * the records of different streams can be merged into one order. A ring of
 * AC_HISTORY_RING records per stream is overwritten in place: recording costs
 * a few stores, never a stack walk, and an allocation only while the ring
 * grows to its size (4, 8, 16, 32 records).
 */
#include <stdlib.h>
#include <string.h>

#include "model_internal.h"

const char *ac_op_kind_name(enum ac_op_kind kind) {
  static const char *const names[AC_OP_KIND_COUNT] = {
      "work",        "attach",     "host_function", "sync_copy",  "event_record", "event_wait",
      "stream_sync", "event_sync", "context_sync",  "allocation", "advice"};
  return (unsigned)kind < AC_OP_KIND_COUNT ? names[kind] : "?";
}

/* Room for record number ring->total; false when memory ran out. */
static bool make_room(struct ac_op_ring *ring) {
  if (ring->total < ring->cap || ring->cap == AC_HISTORY_RING) return true;
  uint32_t cap = ring->cap ? ring->cap * 2 : 4;
  struct ac_op_record *grown = realloc(ring->op, cap * sizeof *grown);
  if (!grown) return false;
  ring->op = grown;
  ring->cap = cap;
  return true;
}

void ac_history_free(struct ac_op_ring *ring) {
  free(ring->op);
  memset(ring, 0, sizeof *ring);
}

static struct ac_op_record lost; /* where a record goes when memory ran out */

struct ac_op_record *ac_history_push(struct ac_model *m, struct ac_stream *s, enum ac_op_kind kind,
                                     const char *api, uint64_t thread) {
  struct ac_op_ring *ring = s ? &s->history : &m->host_history;
  struct ac_op_record *r = make_room(ring) ? &ring->op[ring->total++ % AC_HISTORY_RING] : &lost;
  *r = (struct ac_op_record){.tick = ++m->tick,
                             .seq = s ? s->seq : 0,
                             .thread = thread,
                             .api = api,
                             .kind = (unsigned char)kind};
  return r;
}

void ac_history_advice(struct ac_model *m, uintptr_t addr, unsigned advice, const char *api,
                       uint64_t thread) {
  struct ac_alloc *a = ac_model_find_alloc(m, addr);
  struct ac_op_record *r = ac_history_push(m, NULL, AC_OP_ADVICE, api, thread);
  r->alloc_serial = a ? a->serial : 0;
  r->addr = addr;
  r->flags = advice;
}

struct ac_op_record *ac_history_last(struct ac_stream *s) {
  if (!s->history.total) return &lost;
  return &s->history.op[(s->history.total - 1) % AC_HISTORY_RING];
}

void ac_history_note_kernel(struct ac_model *m, struct ac_stream *s, uint64_t seq,
                            const char *kernel) {
  (void)m;
  if (!s || !seq || !s->history.total) return;
  /* The launch is the stream's latest record unless another thread enqueued
   * on the same stream in between: look back through the ring. */
  uint64_t n = s->history.total < AC_HISTORY_RING ? s->history.total : AC_HISTORY_RING;
  for (uint64_t i = 0; i < n; i++) {
    struct ac_op_record *r = &s->history.op[(s->history.total - 1 - i) % AC_HISTORY_RING];
    if (r->seq == seq && r->kind == AC_OP_WORK) {
      r->kernel = kernel;
      return;
    }
  }
}

uint64_t ac_history_tick(const struct ac_model *m) {
  return m->tick;
}

const struct ac_op_ring *ac_history_host(const struct ac_model *m) {
  return &m->host_history;
}

/* The ring's records, oldest first: i from first to ring->total. */
static uint64_t first_kept(const struct ac_op_ring *ring) {
  return ring->total < AC_HISTORY_RING ? 0 : ring->total - AC_HISTORY_RING;
}

uint64_t ac_history_total_upto(const struct ac_op_ring *ring, uint64_t upto) {
  uint64_t total = ring->total;
  for (uint64_t i = first_kept(ring); i < ring->total; i++)
    if (ring->op[i % AC_HISTORY_RING].tick > upto) total--;
  return total;
}

int ac_history_copy(const struct ac_op_ring *ring, uint64_t upto, struct ac_op_record *out) {
  uint64_t end = first_kept(ring); /* one past the last record up to upto */
  for (uint64_t i = first_kept(ring); i < ring->total; i++)
    if (ring->op[i % AC_HISTORY_RING].tick <= upto) end = i + 1;
  uint64_t start =
      end > first_kept(ring) + AC_HISTORY_MAX ? end - AC_HISTORY_MAX : first_kept(ring);
  int count = 0;
  for (uint64_t i = start; i < end; i++)
    out[count++] = ring->op[i % AC_HISTORY_RING];
  return count;
}

const struct ac_op_record *ac_history_find_after(const struct ac_op_ring *ring, uint64_t upto,
                                                 const char *api, uint64_t thread) {
  for (uint64_t i = first_kept(ring); i < ring->total; i++) {
    const struct ac_op_record *r = &ring->op[i % AC_HISTORY_RING];
    if (r->tick > upto && r->api == api && r->thread == thread) return r;
  }
  return NULL;
}
