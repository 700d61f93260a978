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

/* A quiet operation (a prefetch) turns no stream busy for the host, but is
 * ordered like any other: the legacy stream's prefetch still waits for a
 * blocking stream, and a later operation waiting for it waits for that too.
 * Behind work, it is outstanding with it. */
static void test_quiet_operation(void) {
  m = ac_model_create();
  struct ac_stream *legacy = ac_model_legacy_stream(m);
  struct ac_stream *a = stream(0x100, 0), *b = stream(0x200, 0), *c = stream(0x300, NON_BLOCKING);
  uint64_t g0 = ac_order_generation(m), changes = ac_order_busy_changes(m);
  ac_order_enqueue_quiet(m, c);
  CHECK(!ac_order_stream_busy(m, c) && ac_order_generation(m) == g0);
  CHECK(ac_order_busy_changes(m) == changes && ac_order_outstanding(m, c) == 0);
  op(a);
  ac_order_enqueue_quiet(m, legacy); /* waits for a's work */
  CHECK(!ac_order_stream_busy(m, legacy) && ac_order_stream_busy(m, a));
  op(b); /* waits for the legacy stream's prefetch, so for a */
  ac_order_host_syncs_stream(m, b);
  CHECK(!ac_order_stream_busy(m, a) && !ac_order_stream_busy(m, b));
  /* Work, then a prefetch: busy until the work is observed; both outstanding. */
  bool turned;
  uint64_t seq = ac_order_enqueue(m, c, &turned);
  c->busy_origin = (struct ac_origin){"cuLaunchKernel", 1, seq, 0};
  ac_order_enqueue_quiet(m, c);
  CHECK(turned && ac_order_stream_busy(m, c) && ac_order_outstanding(m, c) == 2);
  ac_order_event_recorded(m, 0xe1, c);
  ac_order_host_syncs_event(m, 0xe1);
  CHECK(!ac_order_stream_busy(m, c) && ac_order_outstanding(m, c) == 0);
  /* Work behind an unobserved prefetch: only the work is counted. */
  ac_order_enqueue_quiet(m, c);
  seq = ac_order_enqueue(m, c, &turned);
  c->busy_origin = (struct ac_origin){"cuLaunchKernel", 1, seq, 0};
  CHECK(turned && ac_order_outstanding(m, c) == 1);
  ac_model_destroy(m);
}

/* Each context has its own legacy stream and per-thread streams: a blocking
 * stream orders with its own context's legacy stream only, and the host's
 * synchronisation with one context's legacy stream says nothing of another's. */
static void test_legacy_stream_per_context(void) {
  m = ac_model_create();
  const uintptr_t A = 0xa000, B = 0xb000;
  struct ac_stream *la = ac_model_legacy_stream_in(m, A), *lb = ac_model_legacy_stream_in(m, B);
  CHECK(la == ac_model_legacy_stream(m) && lb != la && ac_model_legacy_count(m) == 2);
  CHECK(ac_model_resolve_stream_in(m, 0, false, 1, B).stream == lb);
  CHECK(ac_model_resolve_stream_in(m, 1, false, 1, A).stream == la);
  CHECK(ac_model_resolve_stream(m, 0, false, 1).stream == la); /* context not known: the first */
  struct ac_stream *pa = ac_model_resolve_stream_in(m, 0, true, 7, A).stream;
  struct ac_stream *pb = ac_model_resolve_stream_in(m, 0, true, 7, B).stream;
  CHECK(pa && pb && pa != pb && pb->legacy == lb);
  struct ac_stream *ba = stream(0x100, 0), *bb = stream(0x200, 0);
  ac_model_stream_set_context(m, ba, A);
  ac_model_stream_set_context(m, bb, B);
  CHECK(ba->context == A && ba->legacy == la && bb->legacy == lb);
  /* B's legacy stream joins B's blocking streams, not A's. */
  op(ba);
  op(bb);
  op(lb);
  ac_order_host_syncs_stream(m, lb);
  CHECK(!ac_order_stream_busy(m, bb));
  CHECK(ac_order_stream_busy(m, ba));
  op(la);
  ac_order_host_syncs_stream(m, la);
  CHECK(!ac_order_stream_busy(m, ba));
  /* A's blocking stream waits for A's legacy stream, not B's. */
  op(lb);
  op(la);
  op(ba);
  ac_order_host_syncs_stream(m, ba);
  CHECK(!ac_order_stream_busy(m, la));
  CHECK(ac_order_stream_busy(m, lb));
  ac_order_host_syncs_stream(m, lb);
  /* A per-thread stream orders with its own context's legacy stream. */
  op(pb);
  op(la);
  ac_order_host_syncs_stream(m, la);
  CHECK(ac_order_stream_busy(m, pb));
  op(lb);
  ac_order_host_syncs_stream(m, lb);
  CHECK(!ac_order_stream_busy(m, pb));
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

/* An event recorded over several streams covers each one's work before the
 * record; over none it covers nothing, and a new record replaces the old. */
static void test_event_over_streams(void) {
  m = ac_model_create();
  struct ac_stream *a = stream(0x100, NON_BLOCKING), *b = stream(0x200, NON_BLOCKING);
  struct ac_stream *both[] = {a, b};
  op(a), op(b);
  ac_order_event_recorded_over(m, 0xe1, both, 2);
  op(b);
  CHECK(ac_order_host_syncs_event(m, 0xe1));
  CHECK(!ac_order_stream_busy(m, a) && ac_order_outstanding(m, b) == 1);
  op(a);
  ac_order_event_recorded(m, 0xe2, a);
  ac_order_event_recorded_over(m, 0xe2, NULL, 0);
  CHECK(ac_order_host_syncs_event(m, 0xe2) && ac_order_stream_busy(m, a));
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
  uint64_t serial = a->serial;
  size_t held = ac_model_stream_count(m);
  ac_order_host_syncs_all(m);
  /* Its work complete and its handle another stream's: forgotten. */
  CHECK(ac_order_any_busy(m, NULL) == NULL && ac_model_stream_by_serial(m, serial) == NULL);
  CHECK(ac_model_stream_count(m) == held - 1 && !ac_order_stream_busy(m, again));
  ac_model_destroy(m);
}

/* A stream that waits for an event recorded in a capture joins it; its work
 * is captured, not run, until the origin ends the capture for all of them. */
static void test_capture_joins(void) {
  m = ac_model_create();
  struct ac_stream *origin = stream(0x100, NON_BLOCKING), *fork = stream(0x200, NON_BLOCKING);
  struct ac_stream *other = stream(0x300, NON_BLOCKING), *gone = stream(0x400, NON_BLOCKING);
  ac_capture_begin(m, origin);
  ac_order_event_captured(m, 0xe1, origin);
  CHECK(!ac_order_stream_waits_event(m, fork, 0xe1));
  CHECK(fork->capturing && fork->capture == origin->capture);
  CHECK(!ac_order_stream_waits_event(m, gone, 0xe1) && gone->capturing);
  ac_model_stream_destroyed(m, 0x400);
  stream(0x400, NON_BLOCKING); /* its handle again: the record is forgotten */
  ac_capture_end(m, fork);     /* only the origin ends a capture */
  CHECK(fork->capturing);
  ac_order_event_captured(m, 0xe2, fork);
  CHECK(!ac_order_stream_waits_event(m, origin, 0xe2)); /* the join, inside the graph */
  CHECK(!ac_order_host_syncs_event(m, 0xe2));           /* it covers no work that runs */
  ac_capture_end(m, origin);
  CHECK(!origin->capturing && !fork->capturing && origin->capture == 0);
  /* The capture is over: waiting for its event joins nothing, orders nothing. */
  CHECK(ac_order_stream_waits_event(m, other, 0xe1) && !other->capturing);
  /* Recorded outside a capture, it is an ordinary event again. */
  op(fork);
  ac_order_event_recorded(m, 0xe1, fork);
  ac_order_stream_waits_event(m, other, 0xe1);
  op(other);
  ac_order_host_syncs_stream(m, other);
  CHECK(!ac_order_stream_busy(m, fork));
  /* A context's end ends its captures. */
  ac_capture_begin(m, origin);
  ac_order_event_captured(m, 0xe3, origin);
  ac_order_stream_waits_event(m, fork, 0xe3);
  ac_capture_end_all(m);
  CHECK(!origin->capturing && !fork->capturing);
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

/* Inside a host function, a stream whose outstanding work all waits for the
 * function is idle; one with work beside it, or that turned busy before the
 * wait, is not. */
static void test_host_function_gates(void) {
  m = ac_model_create();
  struct ac_stream *a = stream(0x100, NON_BLOCKING), *b = stream(0x200, NON_BLOCKING);
  struct ac_stream *c = stream(0x300, NON_BLOCKING);
  uint64_t fn = ac_order_enqueue(m, a, NULL);
  ac_order_event_recorded(m, 0xe1, a);
  ac_order_stream_waits_event(m, b, 0xe1);
  op(b); /* behind the function */
  op(c); /* beside it */
  ac_order_stream_waits_event(m, c, 0xe1);
  op(c);
  CHECK(!ac_order_idle_inside(m, b, a)); /* no function runs yet */
  ac_order_host_function_runs(m, a, fn);
  CHECK(ac_order_idle_inside(m, a, a) && ac_order_idle_inside(m, b, a));
  CHECK(!ac_order_idle_inside(m, c, a) && !ac_order_idle_inside(m, b, NULL));
  CHECK(ac_order_any_busy(m, a) == c);
  ac_order_host_function_runs(m, a, 0);
  CHECK(!ac_order_idle_inside(m, b, a));
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

/* The history ring keeps the latest AC_HISTORY_MAX operations of a stream in
 * the model's order, shared with other streams and the host. */
static void test_history_ring(void) {
  m = ac_model_create();
  struct ac_stream *a = stream(0x100, 0), *b = stream(0x200, 0);
  struct ac_op_record out[AC_HISTORY_MAX];
  CHECK(ac_history_copy(&a->history, UINT64_MAX, out) == 0);
  for (int i = 0; i < AC_HISTORY_MAX + 4; i++) {
    op(a);
    ac_history_push(m, a, AC_OP_WORK, "cuLaunchKernel", 7);
  }
  op(b);
  ac_history_push(m, b, AC_OP_WORK, "cuMemcpyAsync", 8);
  ac_history_push(m, NULL, AC_OP_CTX_SYNC, NULL, 7);
  CHECK(a->history.total == AC_HISTORY_MAX + 4);
  int n = ac_history_copy(&a->history, UINT64_MAX, out);
  CHECK(n == AC_HISTORY_MAX);
  CHECK(out[0].seq == 5 && out[n - 1].seq == AC_HISTORY_MAX + 4); /* the oldest were cut */
  for (int i = 1; i < n; i++)
    CHECK(out[i].tick == out[i - 1].tick + 1);
  CHECK(ac_history_copy(&b->history, UINT64_MAX, out) == 1 && out[0].tick > a->history.total);
  CHECK(ac_history_copy(ac_history_host(m), UINT64_MAX, out) == 1 && out[0].kind == AC_OP_CTX_SYNC);
  CHECK(ac_history_tick(m) == AC_HISTORY_MAX + 6);
  /* Only what came before a tick. */
  CHECK(ac_history_copy(&a->history, 10, out) == 10 && out[0].tick == 1 && out[9].tick == 10);
  CHECK(ac_history_total_upto(&a->history, 10) == 10);
  CHECK(ac_history_total_upto(&a->history, UINT64_MAX) == AC_HISTORY_MAX + 4);
  /* A finding reported late still gets the operations before it. */
  for (int i = 0; i < AC_HISTORY_MAX / 2; i++) {
    op(a);
    ac_history_push(m, a, AC_OP_WORK, "cuMemsetD8Async", 7);
  }
  uint64_t judged = AC_HISTORY_MAX + 4;
  CHECK(ac_history_copy(&a->history, judged, out) == AC_HISTORY_MAX);
  CHECK(out[AC_HISTORY_MAX - 1].tick == judged && out[0].tick == judged - AC_HISTORY_MAX + 1);
  const struct ac_op_record *later =
      ac_history_find_after(&a->history, judged, "cuMemsetD8Async", 7);
  CHECK(later && later->tick > ac_history_tick(m) - AC_HISTORY_MAX / 2 - 1 &&
        later->seq == AC_HISTORY_MAX + 5);
  CHECK(!ac_history_find_after(&a->history, judged, "cuMemsetD8Async", 8));
  ac_model_destroy(m);
}

/* A launch's kernel is named after its record, even past a later record. */
static void test_history_kernel_and_lookup(void) {
  m = ac_model_create();
  struct ac_stream *a = stream(0x100, 0);
  op(a);
  ac_history_push(m, a, AC_OP_WORK, "cuLaunchKernel", 1);
  uint64_t seq = a->seq;
  ac_order_event_recorded(m, 0xe1, a);
  ac_history_push(m, a, AC_OP_EVENT_RECORD, NULL, 2)->addr = 0xe1;
  ac_history_note_kernel(m, a, seq, "scale");
  ac_history_note_kernel(m, a, seq + 9, "other"); /* no such operation: nothing changes */
  struct ac_op_record out[AC_HISTORY_MAX];
  CHECK(ac_history_copy(&a->history, UINT64_MAX, out) == 2);
  CHECK(out[0].kernel && strcmp(out[0].kernel, "scale") == 0 && out[1].kernel == NULL);
  CHECK(out[1].addr == 0xe1 && strcmp(ac_op_kind_name(out[1].kind), "event_record") == 0);
  CHECK(ac_history_last(a) == &a->history.op[1]);
  CHECK(ac_model_stream_by_serial(m, a->serial) == a);
  CHECK(ac_model_stream_by_serial(m, ac_model_legacy_stream(m)->serial) ==
        ac_model_legacy_stream(m));
  CHECK(ac_model_stream_by_serial(m, 999) == NULL && ac_model_stream_by_serial(m, 0) == NULL);
  ac_model_destroy(m);
}

/* A managed allocation is a record of the host's history; device memory is not. */
static void test_history_allocations(void) {
  m = ac_model_create();
  struct ac_alloc proto = {0};
  proto.base = 0x7000000;
  proto.size = 4096;
  proto.kind = AC_MEM_DEVICE;
  proto.origin_api = ac_api_intern("cuMemAlloc");
  ac_model_add_alloc(m, &proto);
  CHECK(ac_history_host(m)->total == 0);
  proto.base = 0x9000000;
  proto.kind = AC_MEM_MANAGED;
  proto.assoc = AC_ASSOC_GLOBAL;
  proto.origin_api = ac_api_intern("cuMemAllocManaged");
  struct ac_alloc *a = ac_model_add_alloc(m, &proto);
  struct ac_op_record out[AC_HISTORY_MAX];
  CHECK(ac_history_copy(ac_history_host(m), UINT64_MAX, out) == 1);
  CHECK(out[0].kind == AC_OP_ALLOC && out[0].addr == 0x9000000 && out[0].alloc_serial == a->serial);
  CHECK(a->tick == out[0].tick && a->tick == ac_history_tick(m));
  /* The entry point that made it, kept as a byte, reads back by name. */
  CHECK(strcmp(ac_alloc_origin_api(a), "cuMemAllocManaged") == 0);
  CHECK(ac_api_intern("cuMemAllocManaged") == a->origin_api && ac_api_name(0) == NULL);
  /* Advice inside it names it, and changes nothing the rules judge. */
  uint64_t layout = ac_model_layout(m);
  ac_history_advice(m, 0x9000100, 1, "cuMemAdvise_v2", 7);
  CHECK(ac_history_copy(ac_history_host(m), UINT64_MAX, out) == 2);
  CHECK(out[1].kind == AC_OP_ADVICE && out[1].addr == 0x9000100 &&
        out[1].alloc_serial == a->serial);
  CHECK(out[1].flags == 1 && out[1].thread == 7 &&
        strcmp(ac_op_kind_name(out[1].kind), "advice") == 0);
  CHECK(ac_model_layout(m) == layout && a->assoc == AC_ASSOC_GLOBAL);
  ac_model_destroy(m);
}

int main(void) {
  test_quiet_operation();
  test_history_ring();
  test_history_kernel_and_lookup();
  test_history_allocations();
  test_retract();
  test_clock();
  test_sync_and_query();
  test_legacy_stream();
  test_legacy_stream_per_context();
  test_events();
  test_event_over_streams();
  test_destroyed_stream_stays_busy();
  test_capture_joins();
  test_host_function_start();
  test_host_function_gates();
  test_attach_binds_until_complete();
  return TEST_SUMMARY("test_order");
}
