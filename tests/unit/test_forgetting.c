/* test_forgetting.c - the model at scale: the lists each walk takes instead
 * of every stream (busy streams, attaches to settle, allocations attached to
 * a stream), and destroyed streams forgotten once nothing can need them -
 * with nothing left naming them. White-box: it looks at the model's insides
 * (model_internal.h) to see what is held. */
#include <string.h>

#include "model_fixture.h"
#include "model_internal.h"
#include "rules_host.h"
#include "test.h"

static struct ac_stream *stream(uintptr_t h, unsigned flags) {
  return ac_model_stream_created(m, h, flags, 0);
}

static bool held(uint64_t serial) {
  return ac_model_stream_by_serial(m, serial) != NULL;
}

/* A destroyed stream stays with its handle (AC106 names it) and goes when
 * the handle is handed out again. */
static void test_destroyed_stream_kept_by_its_handle(void) {
  m = ac_model_create();
  size_t base = ac_model_stream_count(m);
  struct ac_stream *s = stream(0x100, NON_BLOCKING);
  ac_order_enqueue(m, s, NULL);
  ac_order_host_syncs_stream(m, s);
  ac_model_stream_destroyed(m, 0x100);
  uint64_t serial = s->serial;
  struct ac_stream_ref r = ac_model_resolve_stream(m, 0x100, false, 1);
  CHECK(r.kind == AC_STREAM_DESTROYED && r.stream == s && held(serial));
  struct ac_stream *t = stream(0x100, NON_BLOCKING);
  CHECK(!held(serial) && held(t->serial) && ac_model_stream_count(m) == base + 1);
  ac_model_destroy(m);
}

/* Its handle taken while its work runs: kept, busy, until the host sees the
 * work complete. */
static void test_orphan_waits_for_its_work(void) {
  m = ac_model_create();
  struct ac_stream *s = stream(0x100, NON_BLOCKING);
  ac_order_enqueue(m, s, NULL);
  ac_order_event_recorded(m, 0xe1, s);
  ac_model_stream_destroyed(m, 0x100);
  struct ac_stream *t = stream(0x100, NON_BLOCKING);
  uint64_t serial = s->serial;
  CHECK(held(serial) && ac_order_any_busy(m, NULL) == s && ac_order_busy_count(m) == 1);
  ac_order_host_syncs_event(m, 0xe1);
  CHECK(!held(serial) && ac_order_any_busy(m, NULL) == NULL && ac_order_busy_count(m) == 0);
  CHECK(ac_model_resolve_stream(m, 0x100, false, 1).stream == t);
  ac_model_destroy(m);
}

/* An allocation that names a stream keeps it: reverted by a destroy (the
 * revert completes with the stream's work), or single-attached to a stream
 * whose destroy the model never saw. */
static void test_allocations_keep_their_streams(void) {
  m = ac_model_create();
  struct ac_alloc *a = managed(0x10000, AC_ASSOC_GLOBAL), *b = managed(0x20000, AC_ASSOC_GLOBAL);
  struct ac_stream *s = stream(0x100, NON_BLOCKING);
  attach(a, AC_ASSOC_SINGLE, s);
  ac_order_enqueue(m, s, NULL);
  ac_model_stream_destroyed(m, 0x100);
  ac_order_attach(m, a, AC_ASSOC_GLOBAL, s, s->seq, NULL); /* AC402's revert */
  stream(0x100, NON_BLOCKING);                             /* the handle, taken */
  uint64_t serial = s->serial;
  enum ac_assoc assoc[2];
  struct ac_stream *st[2];
  CHECK(held(serial) && ac_order_binding_assocs(m, a, assoc, st) == 2 && st[1] == s);
  ac_order_host_syncs_all(m);
  CHECK(!held(serial) && ac_order_binding_assocs(m, a, assoc, st) == 1);
  CHECK(assoc[0] == AC_ASSOC_GLOBAL && ac_alloc_attach_stream(a) == NULL);

  struct ac_stream *u = stream(0x200, NON_BLOCKING);
  attach(b, AC_ASSOC_SINGLE, u);
  ac_order_host_syncs_all(m);
  struct ac_stream *v = stream(0x200, NON_BLOCKING); /* u destroyed unseen */
  serial = u->serial;
  CHECK(held(serial) && ac_alloc_assoc_stream(b) == u);
  attach(b, AC_ASSOC_GLOBAL, v);
  CHECK(held(serial)); /* the previous association binds until the attach completes */
  ac_order_host_syncs_stream(m, v);
  CHECK(!held(serial) && ac_alloc_assoc_stream(b) == NULL);
  ac_model_remove_alloc(m, b);
  ac_model_destroy(m);
}

/* Pinned (a finding on its way names it), a forgettable stream waits. */
static void test_pinned_streams_wait(void) {
  m = ac_model_create();
  struct ac_stream *s = stream(0x100, NON_BLOCKING);
  ac_order_enqueue(m, s, NULL);
  ac_model_stream_destroyed(m, 0x100);
  stream(0x100, NON_BLOCKING);
  uint64_t serial = s->serial;
  ac_model_pin_streams(m);
  ac_model_pin_streams(m);
  ac_order_host_syncs_all(m);
  CHECK(held(serial));
  ac_model_unpin_streams(m, 1);
  CHECK(held(serial));
  ac_model_unpin_streams(m, 1);
  CHECK(!held(serial));
  ac_model_destroy(m);
}

/* Thousands of streams made, used, destroyed, with events outliving them:
 * the records and the clock entries held stay few. */
static void test_cycles_hold_little(void) {
  m = ac_model_create();
  struct ac_stream *waiter = stream(0x900, 0);
  for (int i = 0; i < 5000; i++) {
    struct ac_stream *c = stream(0x100, i % 2 ? NON_BLOCKING : 0);
    ac_order_enqueue(m, c, NULL);
    ac_order_event_recorded(m, 0xe1, c);
    ac_order_stream_waits_event(m, waiter, 0xe1);
    ac_model_stream_destroyed(m, 0x100);
    ac_order_enqueue(m, ac_model_legacy_stream(m), NULL); /* joins the blocking ones */
    ac_order_host_syncs_stream(m, ac_model_legacy_stream(m));
    ac_order_host_syncs_event(m, 0xe1);
  }
  CHECK(ac_model_stream_count(m) <= 4);
  CHECK(m->host_observed.n < 200 && waiter->waited.n < 200);
  CHECK(ac_model_legacy_stream(m)->waited.n < 200);
  ac_order_host_syncs_all(m);
  CHECK(ac_order_busy_count(m) == 0);
  ac_model_destroy(m);
}

/* The busy list: the stream busy longest with an origin first. */
static void test_busy_order(void) {
  m = ac_model_create();
  struct ac_stream *a = stream(0x100, NON_BLOCKING), *b = stream(0x200, NON_BLOCKING),
                   *c = stream(0x300, NON_BLOCKING);
  uint64_t seq = ac_order_enqueue(m, a, NULL);
  ac_order_enqueue(m, b, NULL);
  ac_order_note_busy_origin(m, b, "cuLaunchKernel", 1, 1);
  ac_order_enqueue(m, c, NULL);
  ac_order_note_busy_origin(m, c, "cuLaunchKernel", 1, 1);
  CHECK(ac_order_busy_count(m) == 3 && ac_order_any_busy(m, NULL) == b);
  CHECK(ac_order_any_busy(m, b) == c);
  ac_order_host_syncs_stream(m, b);
  ac_order_host_syncs_stream(m, c);
  CHECK(ac_order_any_busy(m, NULL) == a && ac_order_any_busy(m, a) == NULL);
  CHECK(ac_order_retract(m, a, seq) && ac_order_busy_count(m) == 0);
  ac_model_destroy(m);
}

static int notes, leaving;
static void count_notes(struct ac_alloc *a, bool gone, void *ctx) {
  (void)a, (void)ctx;
  notes++;
  leaving += gone;
}

/* The observer hears of each change of class, the settling of an attach too. */
static void test_observer(void) {
  m = ac_model_create();
  ac_model_set_alloc_observer(m, count_notes, NULL);
  CHECK(ac_model_alloc_observer(m) == count_notes);
  struct ac_stream *s = stream(0x100, NON_BLOCKING);
  struct ac_alloc *a = managed(0x10000, AC_ASSOC_GLOBAL);
  CHECK(notes == 1);
  attach(a, AC_ASSOC_SINGLE, s);
  CHECK(notes == 2 && ac_alloc_attach_stream(a) == s);
  ac_order_host_syncs_stream(m, s); /* settled */
  CHECK(notes == 3 && ac_alloc_attach_stream(a) == NULL && ac_alloc_assoc_stream(a) == s);
  ac_model_retire_alloc(m, a);
  ac_model_remove_alloc(m, a);
  CHECK(notes == 5 && leaving == 1);
  ac_model_destroy(m);
}

static int emitted;
static uintptr_t emitted_base[8];
static void keep(struct ac_finding *f, void *ctx) {
  (void)ctx;
  emitted_base[emitted++] = f->alloc.base;
}

/* A destroy looks at the stream's own members, in address order. */
static void test_destroy_reverts_members(void) {
  m = ac_model_create();
  struct ac_stream *s = stream(0x100, NON_BLOCKING), *t = stream(0x200, NON_BLOCKING);
  struct ac_alloc *x = managed(0x30000, AC_ASSOC_GLOBAL), *y = managed(0x10000, AC_ASSOC_HOST),
                  *z = managed(0x20000, AC_ASSOC_GLOBAL);
  attach(x, AC_ASSOC_SINGLE, s);
  attach(y, AC_ASSOC_SINGLE, s);
  attach(z, AC_ASSOC_SINGLE, t);
  ac_model_stream_destroyed(m, 0x100);
  CHECK(ac_judge_stream_destroyed(m, s, keep, NULL) == 2);
  CHECK(emitted == 2 && emitted_base[0] == 0x10000 && emitted_base[1] == 0x30000);
  CHECK(x->assoc == AC_ASSOC_GLOBAL && y->assoc == AC_ASSOC_HOST && z->assoc == AC_ASSOC_SINGLE);
  CHECK(s->members == NULL && ac_judge_stream_destroyed(m, s, keep, NULL) == 0);
  ac_model_destroy(m);
}

/* Each stream keeps the host's clock entry for it (ac_stream.observed), so
 * that asking whether it is busy reads a field: after every step of a random
 * program of work, events, synchronisations and streams destroyed and made
 * again with their handles, every stream the model holds must keep what the
 * host's clock says, and be busy exactly when the clock says it is. */
static void test_observed_follows_the_host(void) {
  m = ac_model_create();
  enum { STREAMS = 6, EVENTS = 3 };
  struct ac_stream *live[STREAMS];
  for (int i = 0; i < STREAMS; i++)
    live[i] = stream(0x100 + (uintptr_t)i * 0x10, i % 2 ? NON_BLOCKING : 0);
  unsigned state = 12345u, steps = 0, mismatches = 0, busy_seen = 0;
  for (; steps < 4000; steps++) {
    state = state * 1103515245u + 12345u;
    unsigned r = state >> 16, i = r % STREAMS, e = (r / STREAMS) % EVENTS;
    uintptr_t event = 0xe000 + e;
    switch ((r / (STREAMS * EVENTS)) % 8) {
    case 0:
    case 1:
    case 2:
      ac_order_enqueue(m, live[i], NULL);
      break;
    case 3:
      ac_order_event_recorded(m, event, live[i]);
      break;
    case 4:
      ac_order_stream_waits_event(m, live[i], event);
      break;
    case 5:
      ac_order_host_syncs_event(m, event);
      break;
    case 6:
      ac_order_host_syncs_stream(m, live[i]);
      break;
    default:
      if (r % 3 == 0) {
        ac_order_host_syncs_all(m);
      } else { /* destroyed with its work outstanding, and its handle used again */
        uintptr_t h = live[i]->handle;
        ac_model_stream_destroyed(m, h);
        live[i] = stream(h, i % 2 ? NON_BLOCKING : 0);
      }
    }
    struct ac_stream *s, *tmp;
    HASH_ITER(by_serial, m->by_serial, s, tmp) {
      uint64_t seen = ac_clock_get(&m->host_observed, s->serial);
      mismatches += s->observed != seen || ac_order_stream_busy(m, s) != (s->host_seq > seen);
      busy_seen += ac_order_stream_busy(m, s);
    }
  }
  CHECK(mismatches == 0 && busy_seen > 0 && steps == 4000);
  ac_model_destroy(m);
}

int main(void) {
  test_observed_follows_the_host();
  test_destroyed_stream_kept_by_its_handle();
  test_orphan_waits_for_its_work();
  test_allocations_keep_their_streams();
  test_pinned_streams_wait();
  test_cycles_hold_little();
  test_busy_order();
  test_observer();
  test_destroy_reverts_members();
  return TEST_SUMMARY("test_forgetting");
}
