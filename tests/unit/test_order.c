/* test_order.c - the happens-before model: what makes a stream busy for the
 * host and which synchronisation makes it idle again. */
#include <string.h>

#include "model.h"
#include "test.h"

#define NON_BLOCKING 1u

static struct ac_model *m;

static struct ac_stream *stream(uintptr_t h, unsigned flags) {
  return ac_model_stream_created(m, h, flags, 0);
}

static void op(struct ac_stream *s) {
  ac_order_enqueue(m, s, NULL);
}

static void test_sync_and_query(void) {
  m = ac_model_create();
  struct ac_stream *a = stream(0x100, NON_BLOCKING);
  bool turned;
  CHECK(!ac_order_stream_busy(m, a));
  uint64_t g0 = ac_order_generation(m);
  ac_order_enqueue(m, a, &turned);
  CHECK(turned && ac_order_stream_busy(m, a) && ac_order_generation(m) != g0);
  ac_order_enqueue(m, a, &turned);
  CHECK(!turned && ac_order_outstanding(m, a) == 2);
  a->busy_origin.api = "cuLaunchKernel";
  uint64_t g1 = ac_order_generation(m);
  ac_order_host_syncs_stream(m, a);
  CHECK(!ac_order_stream_busy(m, a) && ac_order_generation(m) != g1);
  CHECK(a->busy_origin.api == NULL);
  ac_model_destroy(m);
}

static void test_legacy_stream(void) {
  m = ac_model_create();
  struct ac_stream *legacy = ac_model_legacy_stream(m);
  struct ac_stream *blocking = stream(0x100, 0), *free_running = stream(0x200, NON_BLOCKING);
  op(blocking);
  op(free_running);
  op(legacy); /* waits for the blocking stream, not the non-blocking one */
  ac_order_host_syncs_stream(m, legacy);
  CHECK(!ac_order_stream_busy(m, blocking));
  CHECK(ac_order_stream_busy(m, free_running));
  /* A blocking stream's next operation waits for the legacy stream. */
  op(legacy);
  op(blocking);
  ac_order_host_syncs_stream(m, blocking);
  CHECK(!ac_order_stream_busy(m, legacy));
  /* A non-blocking stream does not. */
  op(legacy);
  op(free_running);
  ac_order_host_syncs_stream(m, free_running);
  CHECK(ac_order_stream_busy(m, legacy));
  /* Per-thread default streams behave as blocking streams. */
  struct ac_stream *pt = ac_model_resolve_stream(m, 0, true, 9).stream;
  op(pt);
  op(legacy);
  ac_order_host_syncs_stream(m, legacy);
  CHECK(!ac_order_stream_busy(m, pt));
  ac_model_destroy(m);
}

static void test_events(void) {
  m = ac_model_create();
  struct ac_stream *a = stream(0x100, NON_BLOCKING), *b = stream(0x200, NON_BLOCKING);
  op(a);
  ac_order_event_recorded(m, 0xe1, a);
  op(a); /* after the record: the event does not cover it */
  CHECK(ac_order_host_syncs_event(m, 0xe1));
  CHECK(ac_order_stream_busy(m, a) && ac_order_outstanding(m, a) == 1);
  CHECK(!ac_order_host_syncs_event(m, 0xe2)); /* never recorded */
  /* b waits for the event: syncing b covers a's work before the record. */
  op(b);
  ac_order_event_recorded(m, 0xe3, a);
  ac_order_stream_waits_event(m, b, 0xe3);
  op(b);
  ac_order_host_syncs_stream(m, b);
  CHECK(!ac_order_stream_busy(m, a) && !ac_order_stream_busy(m, b));
  ac_order_event_destroyed(m, 0xe1);
  CHECK(!ac_order_host_syncs_event(m, 0xe1));
  ac_model_destroy(m);
}

static void test_destroyed_stream_stays_busy(void) {
  m = ac_model_create();
  struct ac_stream *a = stream(0x100, NON_BLOCKING);
  op(a);
  ac_model_stream_destroyed(m, 0x100);
  CHECK(ac_order_stream_busy(m, a));
  struct ac_stream *again = stream(0x100, NON_BLOCKING); /* handle reused */
  CHECK(again != a && !ac_order_stream_busy(m, again) && ac_order_stream_busy(m, a));
  CHECK(ac_order_any_busy(m, NULL) == a);
  ac_order_host_syncs_all(m);
  CHECK(!ac_order_stream_busy(m, a) && ac_order_any_busy(m, NULL) == NULL);
  ac_model_destroy(m);
}

static void test_host_function_start(void) {
  m = ac_model_create();
  struct ac_stream *a = stream(0x100, NON_BLOCKING);
  op(a);
  uint64_t callback = ac_order_enqueue(m, a, NULL);
  op(a);
  struct ac_clock c = {0};
  CHECK(ac_order_snapshot_before(m, a, callback, &c));
  ac_order_host_observes(m, &c);
  CHECK(ac_order_outstanding(m, a) == 2); /* the callback itself and what follows */
  ac_clock_free(&c);
  ac_model_destroy(m);
}

static void test_attach_binds_until_complete(void) {
  m = ac_model_create();
  struct ac_stream *a = stream(0x100, NON_BLOCKING);
  struct ac_alloc p;
  memset(&p, 0, sizeof p);
  p.base = 0x10000;
  p.size = 4096;
  p.assoc = AC_ASSOC_HOST;
  struct ac_alloc *al = ac_model_add_alloc(m, &p);
  enum ac_assoc assoc[2];
  struct ac_stream *streams[2];
  CHECK(ac_order_binding_assocs(m, al, assoc, streams) == 1 && assoc[0] == AC_ASSOC_HOST);
  uint64_t seq = ac_order_enqueue(m, a, NULL);
  ac_order_attach(m, al, AC_ASSOC_SINGLE, a, seq, NULL);
  CHECK(ac_order_binding_assocs(m, al, assoc, streams) == 2);
  CHECK(assoc[0] == AC_ASSOC_SINGLE && streams[0] == a && assoc[1] == AC_ASSOC_HOST);
  ac_order_host_syncs_stream(m, a);
  CHECK(ac_order_binding_assocs(m, al, assoc, streams) == 1 && assoc[0] == AC_ASSOC_SINGLE);
  ac_model_destroy(m);
}

/* A forward that failed takes its operation back: the stream it made busy is
 * idle again and the guard sees a transition; a later operation keeps it. */
static void test_retract(void) {
  m = ac_model_create();
  struct ac_stream *a = stream(0x100, NON_BLOCKING);
  bool turned;
  uint64_t seq = ac_order_enqueue(m, a, &turned);
  ac_order_note_busy_origin(m, a, "cuLaunchHostFunc", 1, seq);
  uint64_t g = ac_order_generation(m);
  CHECK(ac_order_retract(m, a, seq));
  CHECK(!ac_order_stream_busy(m, a) && ac_order_generation(m) != g);
  CHECK(a->busy_origin.api == NULL);
  seq = ac_order_enqueue(m, a, NULL);
  ac_order_enqueue(m, a, NULL);
  CHECK(!ac_order_retract(m, a, seq)); /* not the last one any more: it stays */
  CHECK(ac_order_stream_busy(m, a));
  ac_model_destroy(m);
}

static void test_clock(void) {
  struct ac_clock a = {0}, b = {0};
  for (uint64_t s = 20; s > 0; s--)
    CHECK(ac_clock_raise(&a, s * 3, s));
  CHECK(ac_clock_get(&a, 30) == 10 && ac_clock_get(&a, 31) == 0);
  ac_clock_raise(&a, 30, 5);
  CHECK(ac_clock_get(&a, 30) == 10);
  ac_clock_raise(&b, 31, 7);
  ac_clock_raise(&b, 30, 11);
  ac_clock_join(&a, &b);
  CHECK(ac_clock_get(&a, 30) == 11 && ac_clock_get(&a, 31) == 7 && a.n == 21);
  for (size_t i = 1; i < a.n; i++)
    CHECK(a.e[i - 1].stream < a.e[i].stream);
  ac_clock_free(&a);
  ac_clock_free(&b);
}

int main(void) {
  test_retract();
  test_clock();
  test_sync_and_query();
  test_legacy_stream();
  test_events();
  test_destroyed_stream_stays_busy();
  test_host_function_start();
  test_attach_binds_until_complete();
  return TEST_SUMMARY("test_order");
}
