/* test_guard_classes.c - the page guard's classes, kept allocation by
 * allocation (shim/guard/classes.c), checked against the grouping made from
 * scratch after every few of thousands of random changes: allocations made,
 * attached, retired and freed over a few pages (so ranges touch and come back),
 * streams made, used, synchronised, destroyed and their handles reused. The
 * pages to protect, kept up to date from what changed (shim/guard/wanted.c),
 * are checked the same way against those computed from scratch, with pages of
 * two cells, so that allocations share pages. */
#include <stdlib.h>
#include <string.h>

#include "classes.h"
#include "guard_internal.h"
#include "wanted.h"
#include "ranges.h"
#include "rules_host.h"
#include "shim.h"
#include "test.h"

/* What the shim defines and the classes use. */
struct ac_model *ac_model;
struct ac_guard_shared ac_guard;
struct ac_options ac_opts;
/* No protection keys: mprotect covers every class. */
const char ac_guard_global_class;
const struct range_list *ac_guard_keys_unkeyed(const void *id, const struct range_list *bytes) {
  (void)id;
  return bytes;
}
const struct range_list *ac_guard_keys_unkeyed_managed(const struct range_list *all_managed) {
  return all_managed;
}
bool ac_guard_keys_active(void) {
  return false;
}
const struct range_list *ac_guard_keys_take_rekeyed(bool *all) {
  static struct range_list none;
  *all = false;
  return &none;
}

/* ---- the reference: every allocation grouped from scratch ---- */

#define STREAMS 6
#define CELLS 48 /* of CELL bytes from BASE: allocations come and go over them */
#define CELL 4096u
#define BASE ((uintptr_t)0x7f0000000000)

struct reference {
  struct range_list all, global, single[STREAMS + 1];
  const struct ac_stream *stream[STREAMS + 1];
  int streams;
  struct ac_alloc *pending[CELLS];
  int pending_count;
};

static struct range_list *single_of(struct reference *r, const struct ac_stream *s) {
  for (int i = 0; i < r->streams; i++)
    if (r->stream[i] == s) return &r->single[i];
  r->stream[r->streams] = s;
  r->single[r->streams].n = 0;
  return &r->single[r->streams++];
}

static void group(struct ac_alloc *a, void *ctx) {
  struct reference *r = ctx;
  enum ac_assoc assoc[2];
  struct ac_stream *stream[2];
  if (!ac_alloc_is_managed(a) || a->size == 0 || a->retiring) return;
  range_push(&r->all, a->base, a->base + a->size);
  if (ac_order_binding_assocs(ac_model, a, assoc, stream) == 2)
    r->pending[r->pending_count++] = a;
  else if (assoc[0] == AC_ASSOC_GLOBAL)
    range_push(&r->global, a->base, a->base + a->size);
  else if (assoc[0] == AC_ASSOC_SINGLE && stream[0])
    range_push(single_of(r, stream[0]), a->base, a->base + a->size);
}

/* l is reference, or its part inside window when there is one. */
static bool same_within(const struct range_list *l, const struct range_list *reference,
                        const struct range_list *window) {
  static struct range_list clipped;
  if (!window) return range_equal(l, reference);
  range_clip(&clipped, reference, window);
  return range_equal(l, &clipped);
}

struct seen {
  struct reference *r;
  int classes, wrong;
  const struct range_list *window;
};

static void compare_stream(const struct ac_stream *s, const struct range_list *l, void *ctx) {
  struct seen *v = ctx;
  v->classes++;
  for (int i = 0; i < v->r->streams; i++)
    if (v->r->stream[i] == s) {
      v->wrong += !same_within(l, &v->r->single[i], v->window);
      return;
    }
  v->wrong++; /* a class the reference does not have */
}

static int by_address(const void *x, const void *y) {
  uintptr_t a = (uintptr_t) * (void *const *)x, b = (uintptr_t) * (void *const *)y;
  return (a > b) - (a < b);
}

static bool ac_host_may_touch_now(const struct ac_alloc *a) {
  struct ac_stream *blocker;
  enum ac_rule_id rule;
  return ac_host_may_touch(ac_model, a, NULL, &blocker, &rule);
}

static int saw_pending, saw_single, saw_touching, saw_wanted; /* the test reaches each case */
static int saw_logged; /* windows read through logs not yet merged */

/* Whether the pages kept up to date are those computed from scratch (the
 * classes are up to date: classes_right has just run). */
static bool wanted_right(void) {
  static struct range_list kept, scratch;
  bool any_busy = ac_order_any_busy(ac_model, NULL) != NULL;
  ac_guard_wanted_update(&kept, any_busy);
  ac_guard_wanted_from_scratch(&scratch, any_busy);
  saw_wanted += kept.n > 0;
  return range_equal(&kept, &scratch);
}

static uint64_t rng = 0x9e3779b97f4a7c15u;
static unsigned roll(unsigned n) {
  rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
  return (unsigned)(rng % n);
}

/* A few random runs of pages over the cells, as a refresh's window is. */
static const struct range_list *some_window(void) {
  static struct range_list w;
  uintptr_t page = ac_guard.page_size, pages = CELLS * CELL / page;
  w.n = 0;
  for (unsigned i = 1 + roll(3); i > 0; i--) {
    uintptr_t first = roll((unsigned)pages), count = 1 + roll(4);
    range_push(&w, BASE + first * page, BASE + (first + count) * page);
  }
  range_normalise(&w);
  return &w;
}

/* Whether the classes are exactly the reference's: inside a random window
 * (read through the logs) and, when whole, all of them (merged). */
static bool classes_right_as(bool whole) {
  static struct reference r;
  r.all.n = r.global.n = 0;
  r.streams = r.pending_count = 0;
  ac_model_for_each_alloc(ac_model, group, &r);
  range_normalise(&r.all);
  range_normalise(&r.global);
  for (int i = 0; i < r.streams; i++)
    range_normalise(&r.single[i]);
  ac_guard_classes_update();
  saw_pending += r.pending_count > 0;
  saw_single += r.streams > 0;
  for (size_t i = 0; i < r.all.n; i++) /* neighbours merged into one range */
    saw_touching += r.all.r[i].end - r.all.r[i].start > CELL;
  const struct range_list *window = some_window();
  saw_logged += ac_guard_classes_unmerged() > 0;
  bool right = same_within(ac_guard_classes_all_managed(window), &r.all, window) &&
               same_within(ac_guard_classes_global(window), &r.global, window);
  struct seen inside = {&r, 0, 0, window};
  ac_guard_classes_for_each_stream(false, window, compare_stream, &inside);
  right &= inside.wrong == 0 && inside.classes == r.streams;
  if (!whole) return right;
  right &= range_equal(ac_guard_classes_all_managed(NULL), &r.all) &&
           range_equal(ac_guard_classes_global(NULL), &r.global);
  struct seen all = {&r, 0, 0, NULL}, busy = {&r, 0, 0, NULL};
  ac_guard_classes_for_each_stream(false, NULL, compare_stream, &all);
  ac_guard_classes_for_each_stream(true, NULL, compare_stream, &busy);
  int busy_classes = 0;
  for (int i = 0; i < r.streams; i++)
    busy_classes += ac_order_stream_busy(ac_model, r.stream[i]);
  right &= all.wrong == 0 && all.classes == r.streams;
  right &= busy.wrong == 0 && busy.classes == busy_classes;
  size_t n;
  struct ac_alloc *const *pending = ac_guard_classes_pending(&n);
  struct ac_alloc *mine[CELLS];
  right &= n == (size_t)r.pending_count;
  if (right && n) {
    memcpy(mine, pending, n * sizeof mine[0]);
    qsort(mine, n, sizeof mine[0], by_address);
    qsort(r.pending, n, sizeof r.pending[0], by_address);
    right &= memcmp(mine, r.pending, n * sizeof mine[0]) == 0;
  }
  for (int i = 0; i < r.pending_count; i++)
    right &= (r.pending[i]->guard_tag & 0x80000000u) != 0;
  return right;
}

static bool classes_right(void) {
  return classes_right_as(true);
}

/* ---- random changes ---- */

static struct ac_stream *streams[STREAMS];

static struct ac_stream *some_stream(void) {
  unsigned i = roll(STREAMS + 1);
  if (i == STREAMS) return ac_model_legacy_stream(ac_model);
  if (!streams[i] || !streams[i]->live)
    streams[i] = ac_model_stream_created(ac_model, 0x1000 + i * 16, roll(2), 0);
  return streams[i];
}

static struct ac_alloc *some_alloc(void) {
  return ac_model_find_alloc(ac_model, BASE + roll(CELLS) * CELL + 8);
}

static void make(void) {
  unsigned cell = roll(CELLS);
  struct ac_alloc p;
  memset(&p, 0, sizeof p);
  p.base = BASE + cell * CELL;
  p.size = roll(3) ? CELL : 1 + roll(CELL - 1); /* whole cells touch their neighbours */
  p.kind = roll(8) ? AC_MEM_MANAGED : AC_MEM_DEVICE;
  p.assoc = p.default_flags = roll(4) ? AC_ASSOC_GLOBAL : AC_ASSOC_HOST;
  ac_model_forget_overlapping(ac_model, p.base, p.size);
  ac_model_add_alloc(ac_model, &p);
}

static void free_one(void) {
  struct ac_alloc *a = some_alloc();
  if (!a) return;
  if (roll(2)) ac_model_retire_alloc(ac_model, a);
  if (roll(4)) ac_model_remove_alloc(ac_model, a);
}

static void attach_one(void) {
  struct ac_alloc *a = some_alloc();
  if (!a) return;
  static const enum ac_assoc flags[] = {AC_ASSOC_SINGLE, AC_ASSOC_SINGLE, AC_ASSOC_GLOBAL,
                                        AC_ASSOC_HOST};
  struct ac_stream *s = some_stream();
  uint64_t seq = ac_order_enqueue(ac_model, s, NULL);
  ac_order_attach(ac_model, a, flags[roll(4)], s, seq, NULL);
}

static void ignore(struct ac_finding *f, void *ctx) {
  (void)f, (void)ctx;
}

static void step(void) {
  switch (roll(12)) {
  case 0:
  case 1:
    make();
    break;
  case 2:
    free_one();
    break;
  case 3:
  case 4:
    attach_one();
    break;
  case 5:
  case 6:
    ac_order_enqueue(ac_model, some_stream(), NULL);
    break;
  case 7:
    ac_order_host_syncs_stream(ac_model, some_stream());
    break;
  case 8:
    ac_order_event_recorded(ac_model, 0xe1, some_stream());
    break;
  case 9:
    ac_order_host_syncs_event(ac_model, 0xe1);
    break;
  case 10: {
    struct ac_stream *s = some_stream();
    if (s->kind == AC_STREAM_CREATED && ac_model_stream_destroyed(ac_model, s->handle))
      ac_judge_stream_destroyed(ac_model, s, ignore, NULL); /* the handle is taken next time */
    break;
  }
  default:
    if (!roll(8)) ac_order_host_syncs_all(ac_model);
    break;
  }
}

/* A test's own model, the kept pages computed afresh against it ... */
static void model_begin(void) {
  ac_model = ac_model_create();
  ac_guard_wanted_reset();
}
/* ... and its end, which the classes forget. */
static void model_end(void) {
  ac_model_destroy(ac_model);
  ac_guard_classes_reset();
}

/* Changes between checks: one, a few (logs merged in place), many (merged in
 * one pass), very many (logs merged as they grow). */
static void test_against_scratch(void) {
  model_begin();
  int wrong = 0, wrong_pages = 0;
  CHECK(classes_right() && wanted_right()); /* nothing yet */
  for (int round = 0; round < 3000; round++) {
    static const int batch[] = {1, 1, 3, 10, 40, 200};
    for (int i = batch[roll(6)]; i > 0; i--)
      step();
    /* Mostly windows only, so logs build up across rounds unmerged, and the
     * kept pages are brought up to date reading through them. */
    if (!classes_right_as(!roll(4))) wrong++;
    if (!wanted_right()) wrong_pages++;
  }
  CHECK(wrong == 0 && saw_logged > 100);
  CHECK(wrong_pages == 0 && saw_wanted > 100);
  CHECK(ac_guard.stats.resumed > 20);  /* the pages kept while nothing was busy, resumed */
  CHECK(ac_guard.stats.rebuilds == 1); /* grouped from scratch once */
  CHECK(saw_pending > 100 && saw_single > 100 && saw_touching > 100);
  model_end();
}

/* A new model (a forked child's) is grouped anew. */
static void test_new_model(void) {
  ac_model = ac_model_create();
  for (int i = 0; i < 200; i++)
    step();
  CHECK(classes_right());
  ac_model_destroy(ac_model);
  memset(streams, 0, sizeof streams);
  model_begin();
  CHECK(classes_right() && ac_guard_classes_all_managed(NULL)->n == 0 && wanted_right());
  for (int i = 0; i < 200; i++)
    step();
  CHECK(classes_right() && wanted_right());
  model_end();
}

/* A managed allocation of size bytes at base, attached assoc, into the model. */
static struct ac_alloc *add_managed(uintptr_t base, size_t size, enum ac_assoc assoc) {
  struct ac_alloc p;
  memset(&p, 0, sizeof p);
  p.base = base, p.size = size, p.kind = AC_MEM_MANAGED;
  p.assoc = p.default_flags = assoc;
  ac_model_add_alloc(ac_model, &p);
  return ac_model_find_alloc(ac_model, base);
}

/* Attached again while its attach is pending, with no stream turning busy or
 * idle: the allocation is judged again. SINGLE to u (busy), then HOST on s:
 * both bind, u forbids; HOST on s again: HOST and HOST bind, the CPU may
 * touch it. */
static void test_attached_again_while_pending(void) {
  model_begin();
  struct ac_stream *u = ac_model_stream_created(ac_model, 0x2000, 1, 0);
  struct ac_stream *s = ac_model_stream_created(ac_model, 0x2010, 1, 0);
  struct ac_alloc *a = add_managed(BASE, CELL, AC_ASSOC_HOST);
  ac_order_attach(ac_model, a, AC_ASSOC_SINGLE, u, ac_order_enqueue(ac_model, u, NULL), NULL);
  ac_order_host_syncs_stream(ac_model, u);
  ac_order_enqueue(ac_model, u, NULL);
  ac_order_attach(ac_model, a, AC_ASSOC_HOST, s, ac_order_enqueue(ac_model, s, NULL), NULL);
  CHECK(classes_right() && wanted_right() && !ac_host_may_touch_now(a));
  uint64_t busy_changes = ac_order_busy_changes(ac_model);
  ac_order_attach(ac_model, a, AC_ASSOC_HOST, s, ac_order_enqueue(ac_model, s, NULL), NULL);
  CHECK(ac_order_busy_changes(ac_model) == busy_changes && ac_host_may_touch_now(a));
  CHECK(classes_right() && wanted_right());
  model_end();
}

/* A pending allocation not judged yet moves down in the pending list when
 * one before it leaves, with no stream turning busy or idle: it is judged
 * where it went. */
static void test_moved_down_while_pending(void) {
  model_begin();
  struct ac_stream *u = ac_model_stream_created(ac_model, 0x2800, 1, 0);
  struct ac_alloc *a = add_managed(BASE, CELL, AC_ASSOC_HOST);
  struct ac_alloc *b = add_managed(BASE + 2 * CELL, CELL, AC_ASSOC_HOST); /* a page of its own */
  ac_order_attach(ac_model, a, AC_ASSOC_SINGLE, u, ac_order_enqueue(ac_model, u, NULL), NULL);
  CHECK(classes_right() && wanted_right());
  uint64_t busy_changes = ac_order_busy_changes(ac_model);
  ac_order_attach(ac_model, b, AC_ASSOC_SINGLE, u, ac_order_enqueue(ac_model, u, NULL), NULL);
  ac_model_retire_alloc(ac_model, a);
  CHECK(ac_order_busy_changes(ac_model) == busy_changes && !ac_host_may_touch_now(b));
  CHECK(classes_right() && wanted_right());
  model_end();
}

/* Kept from the start (the first update): allocations made one by one,
 * all globally attached (GLOBAL shares all_managed's list) while a stream is
 * busy, then one attached to it (GLOBAL gets its own), then more made. */
static void test_watched_from_the_start(void) {
  model_begin();
  ac_guard_classes_update();
  struct ac_stream *s = ac_model_stream_created(ac_model, 0x3000, 1, 0);
  ac_order_enqueue(ac_model, s, NULL);
  bool right = true;
  for (int i = 0; i < CELLS; i++) {
    add_managed(BASE + (uintptr_t)i * CELL, CELL / 2, AC_ASSOC_GLOBAL);
    if (i == CELLS / 2) {
      struct ac_alloc *a = ac_model_find_alloc(ac_model, BASE + CELL);
      ac_order_attach(ac_model, a, AC_ASSOC_SINGLE, s, ac_order_enqueue(ac_model, s, NULL), NULL);
    }
    right &= classes_right_as(i % 3 == 0) && wanted_right();
  }
  CHECK(right);
  CHECK(ac_guard.stats.rebuilds == 1); /* grouped once, when nothing was alive */
  model_end();
}

/* A page that holds a busy GLOBAL allocation and a HOST one: protected with
 * shared pages guarded, open without; the page of HOST memory alone is open
 * either way. */
static void test_shared_page(bool guarded) {
  static struct range_list want;
  model_begin();
  ac_opts.guard_shared_pages = guarded;
  ac_guard_classes_update();
  add_managed(BASE, CELL / 2, AC_ASSOC_GLOBAL);
  add_managed(BASE + CELL / 2, CELL / 2, AC_ASSOC_HOST);
  add_managed(BASE + 2 * CELL, CELL, AC_ASSOC_HOST); /* its page: HOST alone */
  struct ac_stream *s = ac_model_stream_created(ac_model, 0x3000, 1, 0);
  ac_order_enqueue(ac_model, s, NULL);
  CHECK(classes_right() && wanted_right());
  ac_guard_wanted_from_scratch(&want, true);
  CHECK(guarded ? want.n == 1 && want.r[0].start == BASE && want.r[0].end == BASE + 2 * CELL
                : want.n == 0);
  model_end();
}

int main(void) {
  ac_model_enter(); /* the classes are the model lock's, as in the shim */
  ac_guard.page_size = 2 * CELL;
  test_shared_page(true);
  test_shared_page(false);
  ac_guard.stats.rebuilds = 0;
  test_against_scratch(); /* shared pages left open */
  memset(streams, 0, sizeof streams);
  ac_opts.guard_shared_pages = true;
  ac_guard.stats.rebuilds = ac_guard.stats.resumed = 0;
  test_against_scratch();
  memset(streams, 0, sizeof streams);
  test_new_model();
  test_attached_again_while_pending();
  test_moved_down_while_pending();
  ac_guard.stats.rebuilds = 0;
  test_watched_from_the_start();
  return TEST_SUMMARY("test_guard_classes");
}
