/* model_order.c - the ordering model: which operations the host and each
 * stream are known to come after (vector clocks, see clock.h).
 *
 * A stream's clock holds what its next operation waits for; its own position
 * is its seq. The host's clock holds what it has observed complete. An event
 * snapshots a stream's clock at record time. A stream is busy for the host
 * while seq > host[stream]. Clock entries are keyed by stream serial, so a
 * destroyed stream's outstanding work stays visible until observed.
 */
#include <stdlib.h>

#include "grow.h"
#include "model_internal.h"

/* The legacy NULL stream's implicit synchronisation, applied before an
 * operation on s: the legacy stream waits for every blocking stream, and a
 * blocking stream waits for the legacy stream. */
struct legacy_join {
  struct ac_stream *legacy;
};

static void legacy_waits_for(struct ac_stream *b, void *ctx) {
  struct ac_stream *legacy = ((struct legacy_join *)ctx)->legacy;
  if (b == legacy || !b->blocking || b->seq == 0) return;
  if (ac_clock_get(&legacy->waited, b->serial) >= b->seq) return;
  ac_clock_raise(&legacy->waited, b->serial, b->seq);
  ac_clock_join(&legacy->waited, &b->waited);
}

static void apply_legacy_semantics(struct ac_model *m, struct ac_stream *s) {
  struct ac_stream *legacy = &m->legacy_stream;
  if (s == legacy) {
    struct legacy_join ctx = {legacy};
    ac_model_for_each_stream(m, legacy_waits_for, &ctx);
  } else if (s->blocking && legacy->seq && legacy->seq > ac_clock_get(&s->waited, legacy->serial)) {
    ac_clock_raise(&s->waited, legacy->serial, legacy->seq);
    ac_clock_join(&s->waited, &legacy->waited);
  }
}

void ac_order_prepare(struct ac_model *m, struct ac_stream *s) {
  apply_legacy_semantics(m, s);
}

bool ac_order_stream_busy(const struct ac_model *m, const struct ac_stream *s) {
  return s->seq > ac_clock_get(&m->host_observed, s->serial);
}

uint64_t ac_order_outstanding(const struct ac_model *m, const struct ac_stream *s) {
  uint64_t seen = ac_clock_get(&m->host_observed, s->serial);
  return s->seq > seen ? s->seq - seen : 0;
}

uint64_t ac_order_enqueue(struct ac_model *m, struct ac_stream *s, bool *turned_busy) {
  apply_legacy_semantics(m, s);
  bool was_busy = ac_order_stream_busy(m, s);
  s->seq++;
  if (!was_busy) m->generation++;
  if (turned_busy) *turned_busy = !was_busy;
  return s->seq;
}

void ac_order_note_busy_origin(struct ac_model *m, struct ac_stream *s, const char *api,
                               uint64_t thread, uint64_t seq) {
  (void)m;
  s->busy_origin = (struct ac_op_origin){api, thread, seq, {0, {0}}};
}

void ac_order_set_busy_stack(struct ac_model *m, struct ac_stream *s, uint64_t seq,
                             const struct ac_stack *stack) {
  (void)m;
  if (s->busy_origin.api && s->busy_origin.seq == seq) s->busy_origin.stack = *stack;
}

bool ac_order_retract(struct ac_model *m, struct ac_stream *s, uint64_t seq) {
  if (s->seq != seq || seq == 0) return false;
  s->seq--;
  if (!ac_order_stream_busy(m, s)) {
    s->busy_origin.api = NULL;
    s->reach_count = 0;
    m->generation++;
  }
  return true;
}

void ac_model_set_capturing(struct ac_model *m, struct ac_stream *s, bool capturing) {
  (void)m;
  s->capturing = capturing;
}

/* Joins c into the host's clock, counting streams that turn idle. */
struct observe {
  struct ac_model *m;
  bool any_turned_idle;
};

static void note_if_idle(struct ac_stream *s, void *ctx) {
  struct observe *o = ctx;
  if (s->seq && (s->busy_origin.api || s->reach_count) && !ac_order_stream_busy(o->m, s)) {
    s->busy_origin.api = NULL; /* idle now: the next operation is a new origin */
    s->reach_count = 0;
    o->any_turned_idle = true;
  }
}

void ac_order_host_observes(struct ac_model *m, const struct ac_clock *c) {
  ac_clock_join(&m->host_observed, c);
  struct observe o = {m, false};
  ac_model_for_each_stream(m, note_if_idle, &o);
  if (o.any_turned_idle) m->generation++;
}

void ac_order_host_syncs_stream(struct ac_model *m, struct ac_stream *s) {
  struct ac_clock c = {0};
  apply_legacy_semantics(m, s);
  ac_clock_copy(&c, &s->waited);
  ac_clock_raise(&c, s->serial, s->seq);
  ac_order_host_observes(m, &c);
  ac_clock_free(&c);
}

static void add_position(struct ac_stream *s, void *ctx) {
  ac_clock_raise(ctx, s->serial, s->seq);
}

void ac_order_host_syncs_all(struct ac_model *m) {
  struct ac_clock c = {0};
  ac_model_for_each_stream(m, add_position, &c);
  ac_order_host_observes(m, &c);
  ac_clock_free(&c);
}

static struct event_slot *event_get(struct ac_model *m, uintptr_t handle, bool create) {
  struct event_slot *e;
  HASH_FIND(hh, m->events, &handle, sizeof handle, e);
  if (e || !create) return e;
  e = calloc(1, sizeof *e);
  if (!e) return NULL;
  e->handle = handle;
  HASH_ADD(hh, m->events, handle, sizeof e->handle, e);
  return e;
}

void ac_order_event_recorded(struct ac_model *m, uintptr_t event, struct ac_stream *s) {
  ac_order_event_recorded_over(m, event, &s, 1);
}

void ac_order_event_recorded_over(struct ac_model *m, uintptr_t event, struct ac_stream *const *s,
                                  size_t n) {
  struct event_slot *e = event_get(m, event, true);
  if (!e) return;
  e->snapshot.n = 0; /* a new record replaces what the last one covered */
  for (size_t i = 0; i < n; i++) {
    apply_legacy_semantics(m, s[i]);
    ac_clock_join(&e->snapshot, &s[i]->waited);
    ac_clock_raise(&e->snapshot, s[i]->serial, s[i]->seq);
  }
  e->recorded = true;
}

bool ac_order_host_syncs_event(struct ac_model *m, uintptr_t event) {
  struct event_slot *e = event_get(m, event, false);
  if (!e || !e->recorded) return false;
  ac_order_host_observes(m, &e->snapshot);
  return true;
}

void ac_order_stream_waits_event(struct ac_model *m, struct ac_stream *s, uintptr_t event) {
  struct event_slot *e = event_get(m, event, false);
  if (e && e->recorded) ac_clock_join(&s->waited, &e->snapshot);
}

void ac_order_event_destroyed(struct ac_model *m, uintptr_t event) {
  struct event_slot *e = event_get(m, event, false);
  if (!e) return;
  HASH_DEL(m->events, e);
  ac_clock_free(&e->snapshot);
  free(e);
}

bool ac_order_snapshot_before(struct ac_model *m, struct ac_stream *s, uint64_t seq,
                              struct ac_clock *out) {
  (void)m;
  return ac_clock_copy(out, &s->waited) && ac_clock_raise(out, s->serial, seq - 1);
}

struct busy_search {
  const struct ac_model *m;
  const struct ac_stream *except;
  struct ac_stream *found;
};

static void find_busy(struct ac_stream *s, void *ctx) {
  struct busy_search *b = ctx;
  if (s == b->except || !ac_order_stream_busy(b->m, s)) return;
  if (!b->found || (!b->found->busy_origin.api && s->busy_origin.api)) b->found = s;
}

struct ac_stream *ac_order_any_busy(struct ac_model *m, const struct ac_stream *except) {
  struct busy_search b = {m, except, NULL};
  ac_model_for_each_stream(m, find_busy, &b);
  return b.found;
}

uint64_t ac_order_generation(const struct ac_model *m) {
  return m->generation;
}

void ac_order_attach(struct ac_model *m, struct ac_alloc *a, enum ac_assoc assoc,
                     struct ac_stream *s, uint64_t seq, const struct ac_op_origin *origin) {
  a->prev_assoc = a->assoc;
  a->prev_stream = a->assoc_stream;
  a->assoc = assoc;
  a->assoc_stream = assoc == AC_ASSOC_SINGLE ? s : NULL;
  a->attach_stream = s;
  a->attach_seq = seq;
  if (origin) a->attach_origin = *origin;
  m->generation++;
  m->layout++;
  ac_model_note_judged(m, a); /* attached once: never plain GLOBAL memory again */
}

int ac_order_binding_assocs(const struct ac_model *m, const struct ac_alloc *a,
                            enum ac_assoc assoc[2], struct ac_stream *stream[2]) {
  assoc[0] = a->assoc;
  stream[0] = a->assoc_stream;
  if (!a->attach_stream ||
      ac_clock_get(&m->host_observed, a->attach_stream->serial) >= a->attach_seq)
    return 1;
  assoc[1] = a->prev_assoc;
  stream[1] = a->prev_stream;
  return 2;
}

void ac_model_free_order(struct ac_model *m) {
  struct event_slot *e, *tmp;
  HASH_ITER(hh, m->events, e, tmp) {
    HASH_DEL(m->events, e);
    ac_clock_free(&e->snapshot);
    free(e);
  }
  ac_clock_free(&m->host_observed);
}

/* ---- reach (device semantics) ---- */

void ac_model_set_reach_semantics(struct ac_model *m, bool on) {
  m->reach_semantics = on;
}
bool ac_model_reach_semantics(const struct ac_model *m) {
  return m->reach_semantics;
}

void ac_order_add_reach(struct ac_model *m, struct ac_stream *s, const struct ac_alloc *a) {
  if (!m->reach_semantics) return;
  for (size_t i = 0; i < s->reach_count; i++)
    if (s->reach[i].serial == a->serial) return;
  if (!AC_GROW(s->reach, s->reach_count, s->reach_cap, 8)) return;
  s->reach[s->reach_count++] = (struct ac_reach){a->serial, a->base};
  m->generation++; /* what the page guard must protect has grown */
}

struct reach_search {
  const struct ac_model *m;
  uint64_t serial;
  const struct ac_stream *except;
  struct ac_stream *found;
};

static void find_reaching(struct ac_stream *s, void *ctx) {
  struct reach_search *r = ctx;
  if (r->found || s == r->except || !ac_order_stream_busy(r->m, s)) return;
  for (size_t i = 0; i < s->reach_count; i++)
    if (s->reach[i].serial == r->serial) {
      r->found = s;
      return;
    }
}

struct ac_stream *ac_order_busy_reaching(struct ac_model *m, const struct ac_alloc *a,
                                         const struct ac_stream *except) {
  struct reach_search r = {m, a->serial, except, NULL};
  ac_model_for_each_stream(m, find_reaching, &r);
  return r.found;
}

int ac_order_binding_for_stream(const struct ac_model *m, const struct ac_alloc *a,
                                const struct ac_stream *x, enum ac_assoc assoc[2],
                                struct ac_stream *stream[2]) {
  int n = ac_order_binding_assocs(m, a, assoc, stream);
  if (n == 2 && x && a->attach_stream &&
      (a->attach_stream == x ||
       ac_clock_get(&x->waited, a->attach_stream->serial) >= a->attach_seq))
    return 1; /* x comes after the attach in stream order */
  return n;
}
