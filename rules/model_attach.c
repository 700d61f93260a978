/* model_attach.c - attaches in the ordering model: an allocation's
 * association, the attach that set it until the host observes that complete
 * (until then the previous association binds too), the stream's members and
 * unsettled attaches.
 */
#include <stdlib.h>

#include "model_internal.h"

/* *field = s, keeping the streams' reference counts. */
static void set_ref(struct ac_model *m, struct ac_stream **field, struct ac_stream *s) {
  struct ac_stream *old = *field;
  if (s) ac_model_stream_ref(s);
  *field = s;
  if (old) ac_model_stream_unref(m, old);
}

static void leave_members(struct ac_model *m, struct ac_alloc_more *x) {
  struct ac_stream *s = x->assoc_stream;
  if (s && AC_LIST_IN(x, member_prev)) AC_LIST_DEL(s->members, x, member_prev, member_next);
  set_ref(m, &x->assoc_stream, NULL);
}

static void leave_unsettled(struct ac_model *m, struct ac_alloc_more *x) {
  struct ac_stream *s = x->attach_stream;
  if (!s) return;
  if (AC_LIST_IN(x, unsettled_prev)) AC_LIST_DEL(s->unsettled, x, unsettled_prev, unsettled_next);
  if (!s->unsettled) AC_LIST_DEL(m->settling, s, settle_prev, settle_next);
  set_ref(m, &x->attach_stream, NULL);
  set_ref(m, &x->prev_stream, NULL);
}

/* The host has observed x's attach: only its new association binds now. */
static void settle(struct ac_model *m, struct ac_alloc_more *x) {
  leave_unsettled(m, x);
  ac_model_notify(m, x->alloc, false);
}

/* Settles the attaches the host has now observed. A stream's unsettled
 * attaches are in the order they were enqueued, so only those at the front
 * are looked at. */
void ac_order_settle_observed(struct ac_model *m) {
  struct ac_stream *s, *tmp;
  DL_FOREACH_SAFE2(m->settling, s, tmp, settle_next) {
    uint64_t seen = s->observed;
    while (s->unsettled && s->unsettled->attach_seq <= seen)
      settle(m, s->unsettled);
  }
}

bool ac_order_attach(struct ac_model *m, struct ac_alloc *a, enum ac_assoc assoc,
                     struct ac_stream *s, uint64_t seq, const struct ac_origin *origin) {
  struct ac_alloc_more *x = ac_model_more(a);
  if (!x) return false;
  struct ac_stream *old_stream = x->assoc_stream;
  if (old_stream) ac_model_stream_ref(old_stream); /* held while it moves to prev_stream */
  leave_unsettled(m, x);                           /* an earlier attach, replaced */
  leave_members(m, x);
  x->prev_assoc = (enum ac_assoc)a->assoc;
  set_ref(m, &x->prev_stream, old_stream);
  if (old_stream) ac_model_stream_unref(m, old_stream);
  a->assoc = (uint8_t)assoc;
  if (assoc == AC_ASSOC_SINGLE && s) {
    set_ref(m, &x->assoc_stream, s);
    DL_APPEND2(s->members, x, member_prev, member_next);
  }
  set_ref(m, &x->attach_stream, s);
  x->attach_seq = seq;
  if (s) {
    DL_APPEND2(s->unsettled, x, unsettled_prev, unsettled_next);
    AC_LIST_ADD(m->settling, s, settle_prev, settle_next);
  }
  if (origin) x->attach_origin = *origin;
  a->attached = true;
  m->generation++;
  m->layout++;
  ac_model_note_judged(m, a); /* attached once: never plain GLOBAL memory again */
  if (!s || s->observed >= seq) leave_unsettled(m, x); /* the host has seen it complete already */
  ac_model_notify(m, a, false);
  ac_model_forget_candidates(m);
  return true;
}

void ac_order_forget_alloc(struct ac_model *m, struct ac_alloc *a) {
  if (!a->more) return;
  leave_unsettled(m, a->more);
  leave_members(m, a->more);
  ac_model_forget_candidates(m);
}

int ac_order_binding_assocs(const struct ac_model *m, const struct ac_alloc *a,
                            enum ac_assoc assoc[2], struct ac_stream *stream[2]) {
  const struct ac_alloc_more *x = a->more;
  assoc[0] = (enum ac_assoc)a->assoc;
  stream[0] = x ? x->assoc_stream : NULL;
  (void)m;
  if (!x || !x->attach_stream || x->attach_stream->observed >= x->attach_seq) return 1;
  assoc[1] = x->prev_assoc;
  stream[1] = x->prev_stream;
  return 2;
}

int ac_order_binding_for_stream(const struct ac_model *m, const struct ac_alloc *a,
                                const struct ac_stream *x, enum ac_assoc assoc[2],
                                struct ac_stream *stream[2]) {
  int n = ac_order_binding_assocs(m, a, assoc, stream);
  const struct ac_alloc_more *y = a->more;
  if (n == 2 && x &&
      (y->attach_stream == x ||
       ac_clock_get(&x->waited, y->attach_stream->serial) >= y->attach_seq))
    return 1; /* x comes after the attach in stream order */
  return n;
}
