/* test_model.c - the allocation map and the stream registry. */
#include <stdlib.h>
#include <string.h>

#include "model.h"
#include "test.h"

static struct ac_alloc proto(uintptr_t base, size_t size) {
  struct ac_alloc a;
  memset(&a, 0, sizeof a);
  a.base = base;
  a.size = size;
  a.kind = AC_MEM_MANAGED;
  a.assoc = AC_ASSOC_GLOBAL;
  return a;
}

static void test_lookup_by_address(void) {
  struct ac_model *m = ac_model_create();
  struct ac_alloc p = proto(0x7f0000200000, 4 << 20); /* 4 MiB, two granules */
  struct ac_alloc *big = ac_model_add_alloc(m, &p);
  CHECK(big != NULL);
  CHECK(ac_model_find_alloc(m, 0x7f0000200000) == big);
  CHECK(ac_model_find_alloc(m, 0x7f0000200000 + (3 << 20)) == big);
  CHECK(ac_model_find_alloc(m, 0x7f0000200000 + (4 << 20) - 1) == big);
  CHECK(ac_model_find_alloc(m, 0x7f0000200000 + (4 << 20)) == NULL);
  CHECK(ac_model_find_alloc(m, 0x7f00001fffff) == NULL);
  CHECK(ac_model_find_alloc_at(m, 0x7f0000200000 + 100) == NULL);
  CHECK(ac_model_find_alloc_at(m, 0x7f0000200000) == big);
  ac_model_remove_alloc(m, big);
  CHECK(ac_model_find_alloc(m, 0x7f0000200000) == NULL);
  CHECK(ac_model_alloc_count(m) == 0);
  ac_model_destroy(m);
}

/* Small managed allocations come back 512 bytes apart in one region. */
static void test_small_allocations_share_a_granule(void) {
  struct ac_model *m = ac_model_create();
  struct ac_alloc *small[64];
  for (int i = 0; i < 64; i++) {
    struct ac_alloc p = proto(0x7f0000400000 + (uintptr_t)i * 512, 100);
    small[i] = ac_model_add_alloc(m, &p);
  }
  for (int i = 0; i < 64; i++) {
    CHECK(ac_model_find_alloc(m, 0x7f0000400000 + (uintptr_t)i * 512 + 99) == small[i]);
    CHECK(ac_model_find_alloc(m, 0x7f0000400000 + (uintptr_t)i * 512 + 100) == NULL);
  }
  ac_model_remove_alloc(m, small[10]);
  CHECK(ac_model_find_alloc(m, 0x7f0000400000 + 10 * 512) == NULL);
  CHECK(ac_model_find_alloc(m, 0x7f0000400000 + 11 * 512) == small[11]);
  CHECK(ac_model_alloc_count(m) == 63);
  ac_model_destroy(m); /* frees the rest: ASan checks for leaks */
}

/* Thousands of allocations in one granule, one allocation spanning it, and
 * addresses in the gaps between them. */
static void test_dense_granule(void) {
  struct ac_model *m = ac_model_create();
  const uintptr_t g = 0x7f0000800000;
  struct ac_alloc p = proto(g - 0x1000, (2u << 20) + 0x2000); /* spans the granule */
  struct ac_alloc *span = ac_model_add_alloc(m, &p);
  struct ac_alloc *small[2000];
  for (int i = 1999; i >= 0; i--) { /* inserted out of order */
    p = proto(g + 0x100000 + (uintptr_t)i * 512, 256);
    small[i] = ac_model_add_alloc(m, &p);
  }
  for (int i = 0; i < 2000; i++) {
    CHECK(ac_model_find_alloc(m, g + 0x100000 + (uintptr_t)i * 512 + 255) == small[i]);
    CHECK(ac_model_find_alloc(m, g + 0x100000 + (uintptr_t)i * 512 + 300) == span); /* gap */
  }
  CHECK(ac_model_find_alloc(m, g + 16) == span);
  ac_model_remove_alloc(m, small[1000]);
  CHECK(ac_model_find_alloc(m, g + 0x100000 + 1000 * 512) == span);
  CHECK(ac_model_find_alloc(m, g + 0x100000 + 1001 * 512) == small[1001]);
  ac_model_destroy(m);
}

/* One granule's 4,096 slots of 512 bytes, made and freed in every order -
 * as made (a queue of temporaries), the reverse, at random - against a
 * plain array of what lives where: each lookup answers the array's. */
static bool slots_agree(struct ac_model *m, uintptr_t g, struct ac_alloc **live) {
  for (int i = 0; i < 4096; i++)
    if (ac_model_find_alloc(m, g + (uintptr_t)i * 512 + 100) != live[i]) return false;
  return true;
}

static void test_granule_made_and_freed_in_any_order(void) {
  struct ac_model *m = ac_model_create();
  const uintptr_t g = 0x7f0001000000;
  static struct ac_alloc *live[4096];
  memset(live, 0, sizeof live);
  struct ac_alloc p;
  for (int i = 0; i < 4096; i++) {
    p = proto(g + (uintptr_t)i * 512, 256);
    live[i] = ac_model_add_alloc(m, &p);
  }
  CHECK(slots_agree(m, g, live));
  int head = 0, tail = 4096; /* a queue over the slots, wrapping */
  for (int round = 0; round < 20000; round++) {
    ac_model_remove_alloc(m, live[head % 4096]); /* the oldest goes */
    live[head++ % 4096] = NULL;
    p = proto(g + (uintptr_t)(tail % 4096) * 512, 256); /* a new one where it was */
    live[tail++ % 4096] = ac_model_add_alloc(m, &p);
    if (round % 4999 == 0) CHECK(slots_agree(m, g, live));
  }
  CHECK(slots_agree(m, g, live));
  for (int i = 4095; i >= 2048; i--) { /* the reverse order */
    ac_model_remove_alloc(m, live[i]);
    live[i] = NULL;
  }
  CHECK(slots_agree(m, g, live));
  unsigned seed = 12345;
  for (int round = 0; round < 50000; round++) {
    seed = seed * 1103515245u + 12345u;
    int i = (int)((seed >> 8) % 4096);
    if (live[i]) {
      ac_model_remove_alloc(m, live[i]);
      live[i] = NULL;
    } else {
      p = proto(g + (uintptr_t)i * 512, 256);
      live[i] = ac_model_add_alloc(m, &p);
    }
    if (round % 9973 == 0) CHECK(slots_agree(m, g, live));
    /* One lookup right after each change, near the last one or anywhere:
     * the search starts from where the last one ended, and entries moved. */
    int k = (int)((seed >> 20) % 4096), near = (i + 1) % 4096;
    CHECK(ac_model_find_alloc(m, g + (uintptr_t)k * 512 + 100) == live[k]);
    CHECK(ac_model_find_alloc(m, g + (uintptr_t)near * 512 + 7) == live[near]);
  }
  CHECK(slots_agree(m, g, live));
  ac_model_destroy(m); /* frees the rest: ASan checks for leaks */
}

/* The granule the last search ended in is freed with its last allocation:
 * the next lookup there finds nothing, and one after a new allocation
 * finds it (ASan: nothing freed is read). */
static void test_search_after_granule_freed(void) {
  struct ac_model *m = ac_model_create();
  const uintptr_t g = 0x7f0003000000;
  struct ac_alloc p = proto(g, 256), *a[3];
  for (int i = 0; i < 3; i++) {
    p = proto(g + (uintptr_t)i * 512, 256);
    a[i] = ac_model_add_alloc(m, &p);
  }
  CHECK(ac_model_find_alloc(m, g + 512 + 8) == a[1]);
  for (int i = 0; i < 3; i++)
    ac_model_remove_alloc(m, a[i]);
  CHECK(ac_model_find_alloc(m, g + 512 + 8) == NULL);
  p = proto(g + 1024, 256);
  struct ac_alloc *b = ac_model_add_alloc(m, &p);
  CHECK(ac_model_find_alloc(m, g + 1024 + 8) == b && ac_model_find_alloc(m, g + 8) == NULL);
  ac_model_destroy(m);
}

static void test_serials_are_unique(void) {
  struct ac_model *m = ac_model_create();
  struct ac_alloc p = proto(0x1000, 10);
  struct ac_alloc *a = ac_model_add_alloc(m, &p);
  uint64_t first = a->serial;
  ac_model_remove_alloc(m, a);
  a = ac_model_add_alloc(m, &p);
  CHECK(a->serial != first);
  ac_model_destroy(m);
}

static void test_stream_handles_are_reused(void) {
  struct ac_model *m = ac_model_create();
  struct ac_stream *s1 = ac_model_stream_created(m, 0x5000, 0, 0);
  struct ac_stream_ref r = ac_model_resolve_stream(m, 0x5000, false, 1);
  CHECK(r.kind == AC_STREAM_CREATED && r.stream == s1);
  CHECK(ac_model_stream_destroyed(m, 0x5000) == s1);
  r = ac_model_resolve_stream(m, 0x5000, false, 1);
  CHECK(r.kind == AC_STREAM_DESTROYED);
  CHECK(ac_model_stream_destroyed(m, 0x5000) == NULL); /* twice: nothing live */
  uint64_t first = s1->serial;
  struct ac_stream *s2 = ac_model_stream_created(m, 0x5000, 1, -1); /* s1 is forgotten */
  CHECK(s2->serial != first && ac_model_stream_by_serial(m, first) == NULL);
  r = ac_model_resolve_stream(m, 0x5000, false, 1);
  CHECK(r.kind == AC_STREAM_CREATED && r.stream == s2 && s2->flags == 1);
  ac_model_destroy(m);
}

/* Thread A destroys handle H; the driver hands H to thread B's new stream
 * before A records the destroy: A's record must not end B's stream. */
static void test_destroy_recorded_after_reuse(void) {
  struct ac_model *m = ac_model_create();
  struct ac_stream *a = ac_model_stream_created(m, 0x5000, 0, 0);
  uint64_t serial = ac_model_live_stream_serial(m, 0x5000);
  CHECK(serial == a->serial);
  struct ac_stream *b = ac_model_stream_created(m, 0x5000, 0, 0); /* B, after the real destroy */
  CHECK(ac_model_stream_destroyed_if(m, 0x5000, serial) == NULL); /* A's late record */
  struct ac_stream_ref r = ac_model_resolve_stream(m, 0x5000, false, 2);
  CHECK(r.kind == AC_STREAM_CREATED && r.stream == b && b->live);
  CHECK(ac_model_stream_destroyed_if(m, 0x5000, b->serial) == b); /* B's own destroy */
  r = ac_model_resolve_stream(m, 0x5000, false, 2);
  CHECK(r.kind == AC_STREAM_DESTROYED);
  ac_model_destroy(m);
}

static void test_special_stream_handles(void) {
  struct ac_model *m = ac_model_create();
  struct ac_stream_ref r = ac_model_resolve_stream(m, 0, false, 7);
  CHECK(r.kind == AC_STREAM_NULL_LEGACY && r.stream != NULL);
  r = ac_model_resolve_stream(m, 0x1, false, 7);
  CHECK(r.kind == AC_STREAM_LEGACY);
  struct ac_stream_ref pt7 = ac_model_resolve_stream(m, 0, true, 7);
  CHECK(pt7.kind == AC_STREAM_PER_THREAD && pt7.stream->owner_thread == 7);
  struct ac_stream_ref pt7b = ac_model_resolve_stream(m, 0x2, false, 7);
  CHECK(pt7b.stream == pt7.stream);
  struct ac_stream_ref pt8 = ac_model_resolve_stream(m, 0x2, true, 8);
  CHECK(pt8.stream != pt7.stream);
  r = ac_model_resolve_stream(m, 0x1234, false, 7);
  CHECK(r.kind == AC_STREAM_UNTRACKED && r.stream == NULL);
  ac_model_destroy(m);
}

/* The filter that lets strict judging skip kernel arguments without a lookup:
 * only granules with attached or HOST managed memory need one. */
static void test_granules_that_need_judging(void) {
  struct ac_model *m = ac_model_create();
  const uintptr_t g = 0x7f0000c00000; /* granule-aligned */
  struct ac_alloc plain = proto(g, 4096), host = proto(g + (2u << 20), 4096);
  host.assoc = AC_ASSOC_HOST;
  struct ac_alloc device = proto(g + (4u << 20), 4096);
  device.kind = AC_MEM_DEVICE;
  struct ac_alloc *a = ac_model_add_alloc(m, &plain);
  ac_model_add_alloc(m, &host);
  ac_model_add_alloc(m, &device);
  CHECK(!ac_model_may_need_judging(m, g + 64));              /* plain GLOBAL: skipped */
  CHECK(ac_model_may_need_judging(m, g + (2u << 20) + 64));  /* HOST-attached */
  CHECK(!ac_model_may_need_judging(m, g + (4u << 20) + 64)); /* device memory: never judged */
  CHECK(!ac_model_may_need_judging(m, 0x1234));              /* not memory at all */
  struct ac_stream *s = ac_model_stream_created(m, 0x5000, 0, 0);
  ac_order_attach(m, a, AC_ASSOC_SINGLE, s, 1, NULL);
  CHECK(ac_model_may_need_judging(m, g + 64)); /* attached: judged from now on */
  ac_order_attach(m, a, AC_ASSOC_GLOBAL, s, 2, NULL);
  CHECK(ac_model_may_need_judging(m, g + 64)); /* and still after going back to GLOBAL */
  struct ac_alloc huge = proto(0x100000000000, (size_t)16 << 30); /* 16 GiB: every bit */
  huge.assoc = AC_ASSOC_HOST;
  ac_model_add_alloc(m, &huge);
  CHECK(ac_model_may_need_judging(m, 0x1234));
  ac_model_destroy(m);
}

/* Two stale records over a range the driver hands out again (frees on other
 * threads not yet recorded): both go, and one beside the range stays. */
static void test_forget_overlapping(void) {
  struct ac_model *m = ac_model_create();
  struct ac_alloc p = proto(0x7f0000a00000, 4 << 20), q = proto(0x7f0000c00000, 1 << 20),
                  r = proto(0x7f0001000000, 1 << 20);
  ac_model_add_alloc(m, &p); /* [a00000, e00000) */
  ac_model_add_alloc(m, &q); /* [c00000, d00000), inside it */
  struct ac_alloc *beside = ac_model_add_alloc(m, &r);
  CHECK(ac_model_forget_overlapping(m, 0x7f0000c00000, 2 << 20) == 2);
  CHECK(ac_model_find_alloc(m, 0x7f0000a00000) == NULL);
  CHECK(ac_model_find_alloc(m, 0x7f0000c00000) == NULL);
  CHECK(ac_model_find_alloc(m, 0x7f0001000000) == beside);
  CHECK(ac_model_forget_overlapping(m, 0x7f0000000000, 4096) == 0);
  CHECK(ac_model_alloc_count(m) == 1);
  ac_model_destroy(m);
}

/* Nested records in one granule (the model allows them, the driver never
 * makes them) are all found; records side by side, found by search. */
static void test_forget_nested_and_neighbours(void) {
  struct ac_model *m = ac_model_create();
  struct ac_alloc outer = proto(0x7f0000400000, 0x10000), a = proto(0x7f0000401000, 0x100),
                  b = proto(0x7f0000408000, 0x100);
  ac_model_add_alloc(m, &outer);
  ac_model_add_alloc(m, &a);
  ac_model_add_alloc(m, &b);
  CHECK(ac_model_forget_overlapping(m, 0x7f0000408000, 0x10) == 2); /* b and outer */
  CHECK(ac_model_find_alloc(m, 0x7f0000401000) != NULL && ac_model_alloc_count(m) == 1);
  ac_model_destroy(m);
  m = ac_model_create();
  struct ac_alloc *row[100];
  for (int i = 0; i < 100; i++) {
    struct ac_alloc p = proto(0x7f0000600000 + (uintptr_t)i * 512, 100);
    row[i] = ac_model_add_alloc(m, &p);
  }
  CHECK(ac_model_forget_overlapping(m, 0x7f0000600000 + 50 * 512 + 50, 1024) == 3);
  CHECK(ac_model_find_alloc(m, 0x7f0000600000 + 49 * 512) == row[49]);
  CHECK(ac_model_find_alloc(m, 0x7f0000600000 + 53 * 512) == row[53]);
  CHECK(ac_model_find_alloc(m, 0x7f0000600000 + 51 * 512) == NULL);
  CHECK(ac_model_forget_overlapping(m, 0x7f0000600000 + 51 * 512, 512) == 0);
  ac_model_destroy(m);
}

/* What a tracked allocation costs: the record, with its stack a depot id;
 * what only attached or named ones need is elsewhere. */
static void test_record_is_small(void) {
  CHECK(sizeof(struct ac_alloc) <= 64);
  struct ac_model *m = ac_model_create();
  struct ac_alloc p = proto(0x1000, 64);
  struct ac_alloc *a = ac_model_add_alloc(m, &p);
  CHECK(a->more == NULL && strcmp(ac_alloc_name(a), "") == 0 && ac_alloc_module(a) == 0);
  CHECK(ac_model_name_alloc(m, a, 0xabc, "counter"));
  CHECK(strcmp(ac_alloc_name(a), "counter") == 0 && ac_alloc_module(a) == 0xabc);
  ac_model_destroy(m);
}

int main(void) {
  test_forget_nested_and_neighbours();
  test_record_is_small();
  test_forget_overlapping();
  test_granules_that_need_judging();
  test_lookup_by_address();
  test_small_allocations_share_a_granule();
  test_dense_granule();
  test_granule_made_and_freed_in_any_order();
  test_search_after_granule_freed();
  test_serials_are_unique();
  test_stream_handles_are_reused();
  test_destroy_recorded_after_reuse();
  test_special_stream_handles();
  return TEST_SUMMARY("test_model");
}
