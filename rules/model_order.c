/* model_order.c - the ordering model: which operations the host and each
 * stream are known to come after (vector clocks, see clock.h).
 *
 * A stream's clock holds what its next operation waits for; its own position
 * is its seq. The host's clock holds what it has observed complete. An event
 * snapshots a stream's clock at record time. A stream is busy for the host
 * while host_seq > host[stream]: host_seq is seq at its last operation that
 * keeps the host out (a prefetch does not: ac_order_enqueue_quiet). Clock
 * entries are keyed by stream serial, so a destroyed stream's outstanding
 * work stays visible until observed.
 *
 * No operation walks every stream. Three lists name the few each needs: the
 * busy streams (in the order they turned busy), the blocking streams with
 * operations the legacy stream has not joined yet, and the streams with
 * attaches the host has not seen complete; an idle stream, or a destroyed one
 * whose work is done, is on none of them.
 */
#include <stdlib.h>

#include "grow.h"
#include "model_internal.h"
#include "stack_depot.h"

/* ---- the legacy NULL stream ----
 * Its implicit synchronisation, applied before an operation on s: the legacy
 * stream waits for every blocking stream, and a blocking stream waits for the
 * legacy stream. */

static void legacy_waits_for(struct ac_stream *legacy, struct ac_stream *b) {
  if (b == legacy || !b->blocking || b->seq == 0 || b->legacy != legacy) return;
  if (ac_clock_get(&legacy->waited, b->serial) >= b->seq) return;
  ac_clock_raise(&legacy->waited, b->serial, b->seq);
  ac_clock_join(&legacy->waited, &b->waited);
}

/* The blocking streams of its context with operations since the legacy
 * stream last joined them: no other stream can have anything new for it. A
 * stream of another context is neither waited for nor waits (the legacy NULL
 * stream is per context: docs/driver-facts.md). */
static void apply_legacy_semantics(struct ac_model *m, struct ac_stream *s) {
  (void)m;
  struct ac_stream *legacy = s->legacy;
  if (s == legacy) {
    while (legacy->unjoined) {
      struct ac_stream *b = legacy->unjoined;
      AC_LIST_DEL(legacy->unjoined, b, join_prev, join_next);
      legacy_waits_for(legacy, b);
    }
  } else if (s->blocking && legacy->seq && legacy->seq > ac_clock_get(&s->waited, legacy->serial)) {
    ac_clock_raise(&s->waited, legacy->serial, legacy->seq);
    ac_clock_join(&s->waited, &legacy->waited);
  }
}

void ac_order_join_legacy_now(struct ac_model *m, struct ac_stream *s) {
  (void)m;
  AC_LIST_DEL(s->legacy->unjoined, s, join_prev, join_next);
  legacy_waits_for(s->legacy, s);
}

void ac_order_prepare(struct ac_model *m, struct ac_stream *s) {
  apply_legacy_semantics(m, s);
}

/* ---- busy and idle ---- */

bool ac_order_stream_busy(const struct ac_model *m, const struct ac_stream *s) {
  (void)m;
  return s->host_seq > s->observed;
}

uint64_t ac_order_outstanding(const struct ac_model *m, const struct ac_stream *s) {
  uint64_t seen = s->observed;
  if (!ac_order_stream_busy(m, s)) return 0;
  if (s->busy_origin.api && s->busy_origin.seq > seen + 1) seen = s->busy_origin.seq - 1;
  return s->seq - seen;
}

size_t ac_order_busy_count(const struct ac_model *m) {
  return m->busy_count;
}

uint64_t ac_order_busy_changes(const struct ac_model *m) {
  return m->busy_changes;
}

/* s is idle for the host now: off the busy list, its origin and reach gone.
 * Returns whether it had either (then the generation moves). */
static bool turn_idle(struct ac_model *m, struct ac_stream *s) {
  if (AC_LIST_IN(s, busy_prev)) {
    AC_LIST_DEL(m->busy, s, busy_prev, busy_next);
    m->busy_count--;
    m->busy_changes++;
  }
  bool marked = s->seq && (s->busy_origin.api || s->reach_count);
  s->busy_origin.api = NULL; /* the next operation is a new origin */
  s->reach_count = 0;
  ac_model_consider_forgetting(m, s);
  return marked;
}

uint64_t ac_order_enqueue_quiet(struct ac_model *m, struct ac_stream *s) {
  apply_legacy_semantics(m, s);
  s->seq++;
  if (s != s->legacy && s->blocking) AC_LIST_ADD(s->legacy->unjoined, s, join_prev, join_next);
  return s->seq;
}

/* Ordered as a quiet operation is, and it keeps the host out. */
uint64_t ac_order_enqueue(struct ac_model *m, struct ac_stream *s, bool *turned_busy) {
  bool was_busy = ac_order_stream_busy(m, s);
  s->host_seq = ac_order_enqueue_quiet(m, s);
  if (!was_busy) {
    ac_clock_copy(&s->busy_from, &s->waited); /* out of memory: the last one, less */
    m->generation++;
    if (!AC_LIST_IN(s, busy_prev)) {
      AC_LIST_ADD(m->busy, s, busy_prev, busy_next);
      m->busy_count++;
      m->busy_changes++;
    }
  }
  if (turned_busy) *turned_busy = !was_busy;
  return s->seq;
}

void ac_order_note_busy_origin(struct ac_model *m, struct ac_stream *s, const char *api,
                               uint64_t thread, uint64_t seq) {
  (void)m;
  s->busy_origin = (struct ac_origin){api, thread, seq, 0};
}

void ac_order_set_busy_stack(struct ac_model *m, struct ac_stream *s, uint64_t seq,
                             const struct ac_stack *stack) {
  (void)m;
  if (s->busy_origin.api && s->busy_origin.seq == seq)
    s->busy_origin.stack = ac_stack_depot_put(stack);
}

bool ac_order_retract(struct ac_model *m, struct ac_stream *s, uint64_t seq) {
  if (s->seq != seq || seq == 0) return false;
  s->seq--;
  if (s->host_seq > s->seq) s->host_seq = s->seq; /* an earlier quiet one counts: the safe side */
  if (!ac_order_stream_busy(m, s)) {
    turn_idle(m, s);
    m->generation++;
    ac_model_forget_candidates(m);
  }
  return true;
}

/* Joins c into the host's clock: the streams that turn idle, and the attaches
 * it completes. */
void ac_order_host_observes(struct ac_model *m, const struct ac_clock *c) {
  ac_clock_join(&m->host_observed, c);
  /* Each stream c names keeps the host's entry for it (what the join made of
   * it, which may be less than c's when memory ran out). */
  for (size_t i = 0; i < c->n; i++) {
    struct ac_stream *named = ac_model_stream_by_serial(m, c->e[i].stream);
    if (named) named->observed = ac_clock_get(&m->host_observed, named->serial);
  }
  bool any_turned_idle = false;
  struct ac_stream *s, *tmp;
  DL_FOREACH_SAFE2(m->busy, s, tmp, busy_next) {
    if (!ac_order_stream_busy(m, s)) any_turned_idle |= turn_idle(m, s);
  }
  ac_order_settle_observed(m);
  if (any_turned_idle) m->generation++;
  ac_model_forget_candidates(m);
}

void ac_order_host_syncs_stream(struct ac_model *m, struct ac_stream *s) {
  struct ac_clock c = {0};
  apply_legacy_semantics(m, s);
  ac_clock_copy(&c, &s->waited);
  ac_clock_raise(&c, s->serial, s->seq);
  ac_order_host_observes(m, &c);
  ac_clock_free(&c);
}

/* Every stream's position; an idle one adds nothing the host has not seen. */
void ac_order_host_syncs_all(struct ac_model *m) {
  struct ac_clock c = {0};
  struct ac_stream *s;
  DL_FOREACH2(m->busy, s, busy_next) ac_clock_raise(&c, s->serial, s->seq);
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
  e->capture = 0;
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

void ac_order_event_captured(struct ac_model *m, uintptr_t event, struct ac_stream *s) {
  struct event_slot *e = event_get(m, event, true);
  if (!e) return;
  e->snapshot.n = 0;
  e->recorded = false;
  e->capture = s->capture;
}

bool ac_order_stream_waits_event(struct ac_model *m, struct ac_stream *s, uintptr_t event) {
  struct event_slot *e = event_get(m, event, false);
  if (e && e->capture && ac_capture_join(m, s, e->capture)) return false;
  if (s->capturing) return false; /* a dependency inside the graph, or a wait node of it */
  if (e && e->recorded) ac_clock_join(&s->waited, &e->snapshot);
  return true;
}

void ac_order_stream_waits_recorded(struct ac_model *m, struct ac_stream *s, uintptr_t event) {
  struct event_slot *e = event_get(m, event, false);
  if (e && e->recorded) ac_clock_join(&s->waited, &e->snapshot);
}

void ac_order_stream_waits_clock(struct ac_model *m, struct ac_stream *s,
                                 const struct ac_clock *c) {
  (void)m;
  ac_clock_join(&s->waited, c);
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

bool ac_order_idle_inside(const struct ac_model *m, const struct ac_stream *s,
                          const struct ac_stream *inside) {
  (void)m;
  if (!inside) return false;
  if (s == inside) return true; /* idle for the duration of its host function */
  return inside->host_function &&
         ac_clock_get(&s->busy_from, inside->serial) >= inside->host_function;
}

void ac_order_host_function_runs(struct ac_model *m, struct ac_stream *s, uint64_t seq) {
  (void)m;
  s->host_function = seq;
}

struct ac_stream *ac_order_any_busy(struct ac_model *m, const struct ac_stream *inside) {
  struct ac_stream *s, *found = NULL;
  DL_FOREACH2(m->busy, s, busy_next) {
    if (ac_order_idle_inside(m, s, inside)) continue;
    if (s->busy_origin.api) return s;
    if (!found) found = s;
  }
  return found;
}

uint64_t ac_order_generation(const struct ac_model *m) {
  return m->generation;
}

/* ---- clocks of forgotten streams ----
 * A forgotten stream's entries name work known complete that no one asks
 * about any more. They are dropped in one sweep of every clock once as many
 * streams were forgotten as there are clocks, so the sweeps cost a constant
 * per forgotten stream. */

static bool serial_held(uint64_t serial, void *ctx) {
  struct ac_model *m = ctx;
  return ac_model_stream_by_serial(m, serial) != NULL;
}

void ac_order_sweep_clocks(struct ac_model *m) {
  size_t clocks = m->stream_count + HASH_COUNT(m->events) + 1;
  if (m->forgotten_unswept < 64 || m->forgotten_unswept < clocks) return;
  m->forgotten_unswept = 0;
  ac_clock_retain(&m->host_observed, serial_held, m);
  struct ac_stream *s, *stmp;
  HASH_ITER(by_serial, m->by_serial, s, stmp) {
    ac_clock_retain(&s->waited, serial_held, m);
    ac_clock_retain(&s->busy_from, serial_held, m);
  }
  struct event_slot *e, *etmp;
  HASH_ITER(hh, m->events, e, etmp) ac_clock_retain(&e->snapshot, serial_held, m);
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

struct ac_stream *ac_order_busy_reaching(struct ac_model *m, const struct ac_alloc *a,
                                         const struct ac_stream *inside) {
  struct ac_stream *s;
  DL_FOREACH2(m->busy, s, busy_next) {
    if (ac_order_idle_inside(m, s, inside)) continue;
    for (size_t i = 0; i < s->reach_count; i++)
      if (s->reach[i].serial == a->serial) return s;
  }
  return NULL;
}
