/* classes.c - the page guard's classes (classes.h): the managed
 * allocations grouped by what decides whether the CPU may touch them -
 * globally attached, HOST, single-attached to stream S, or with an attach
 * still pending - as normalised byte ranges.
 *
 * Incremental. The model tells of every allocation that may change class
 * (ac_model_set_alloc_observer: made, retiring, attached, its attach settled,
 * forgotten) and only that one moves: its range is logged as added to one
 * class and removed from another. A class's logs are sorted, and a range that
 * comes back to where it left cancels out, so the class's bytes inside a
 * window of pages are read through them with a few searches: a refresh that
 * looks at the pages of one attach costs the same with 10,000 allocations
 * alive as with ten. A list is merged with its logs when it is read whole -
 * one linear pass, which reading it costs anyway - or once keeping the logs
 * sorted has moved as many entries as a merge would (class_log.c): O(sqrt(n))
 * a change in random order, O(1) amortised in address order, the usual one.
 * (Merging at every refresh, as before, moved the whole list in memory for
 * each range that left its middle: 57% of attaching 10,000 allocations one
 * by one.) Each allocation carries the class it is in (ac_alloc.guard_tag),
 * so leaving one needs no search.
 *
 * The classes are kept from the guard's start (its first update), not
 * grouped when something first turns busy: grouping 10,000 allocations alive
 * then took about 1 ms on the H100's host, a hiccup in the program's first
 * launch. An allocation above every other - as the driver mostly hands them
 * out - goes onto the end of its class's list at once, with no log; and
 * while every allocation is globally attached GLOBAL shares all_managed's
 * list (global_is_all), so keeping them costs one 16-byte range an
 * allocation. A forked child's model is grouped in one pass, in address
 * order, the first time its guard looks.
 *
 * The classes also say what changed since the guard's wanted pages were last
 * brought up to date (wanted.c): the bytes of every allocation that
 * moved, the stream classes that turned busy or idle, the pending attaches
 * whose verdict changed - so that a transition recomputes those pages only.
 */
#include <stdlib.h>
#include <string.h>

#include <uthash.h>

#include "grow.h"
#include "class_log.h"
#include "class_pending.h"
#include "classes.h"
#include "guard_internal.h"
#include "shim.h"

/* ac_alloc.guard_tag: which class holds the allocation. */
#define TAG_NONE 0u                /* not managed memory the guard looks at */
#define TAG_HOST 1u                /* in all_managed only: the CPU may always touch it */
#define TAG_GLOBAL 2u              /* globally attached */
#define TAG_STREAM 3u              /* + the slot of its stream's class */
#define TAG_PENDING AC_TAG_PENDING /* | its index (class_pending.c) */

struct stream_class {
  struct class c;
  const struct ac_stream *stream; /* NULL: a free slot */
  uint32_t slot;                  /* its index in slots[] */
  size_t members;
  uint64_t busy_round; /* the last busy_flips round that found its stream busy */
  UT_hash_handle hh;   /* by stream */
};

static bool built;
static struct class all_managed, global;
/* While every managed allocation is globally attached - most programs, until
 * they attach one - GLOBAL's bytes are all_managed's and are not kept twice:
 * half the memory and half the work for each allocation. The first to be
 * anything else gives GLOBAL a list of its own (split_global). */
static bool global_is_all;
static struct stream_class **slots; /* index: TAG_STREAM + slot */
static size_t slot_count, slot_cap, live_classes;
static uint32_t *free_slots;
static size_t free_count, free_cap;
static struct stream_class *by_stream;
/* What changed since the wanted pages were last brought up to date. */
static struct range_list moved; /* bytes of allocations that changed class */
static bool moved_all;          /* more than is worth listing, or regrouped: everything */
/* Every move of class ever, for the protection keys (refresh.c), which follow
 * moves of class as they come - an attach settling is one, though the
 * model's layout stays. */
static uint64_t moves;
/* The bytes that moved since the keys last followed (refresh.c patches the
 * keys over their pages when they are few); *_all past a handful. */
#define KEYS_MOVED_MAX 64
static struct range_list keys_moved;
static bool keys_moved_all = true;
static uint32_t *was_busy, *now_busy; /* slots of the classes busy at the last two rounds */
static size_t was_busy_count, now_busy_count, was_busy_cap, now_busy_cap;
static uint64_t busy_round = 1;

/* ---- streams' classes ---- */

static struct stream_class *class_of_stream(const struct ac_stream *s, bool make) {
  struct stream_class *sc;
  HASH_FIND_PTR(by_stream, &s, sc);
  if (sc || !make) return sc;
  if (free_count) {
    sc = slots[free_slots[--free_count]];
  } else {
    if (!AC_GROW(slots, slot_count, slot_cap, 8)) return NULL;
    sc = calloc(1, sizeof *sc);
    if (!sc) return NULL;
    sc->slot = (uint32_t)slot_count;
    slots[slot_count++] = sc;
  }
  sc->stream = s;
  sc->members = 0;
  sc->busy_round = 0;
  HASH_ADD_PTR(by_stream, stream, sc);
  live_classes++;
  return sc;
}

/* Its last member left: the class goes, so none outlives its stream. */
static void stream_class_release(struct stream_class *sc) {
  if (--sc->members) return;
  ac_class_free(&sc->c);
  HASH_DEL(by_stream, sc);
  sc->stream = NULL;
  live_classes--;
  if (AC_GROW(free_slots, free_count, free_cap, 8)) free_slots[free_count++] = sc->slot;
}

/* ---- which class an allocation belongs in ---- */

struct place {
  uint32_t kind; /* TAG_NONE, TAG_HOST, TAG_GLOBAL, TAG_STREAM or TAG_PENDING */
  const struct ac_stream *stream;
};

static struct place place_of(const struct ac_alloc *a) {
  enum ac_assoc assoc[2];
  struct ac_stream *stream[2];
  if (!ac_alloc_is_managed(a) || a->size == 0 || a->retiring) return (struct place){TAG_NONE, 0};
  if (ac_order_binding_assocs(ac_model, a, assoc, stream) == 2)
    return (struct place){TAG_PENDING, NULL};
  if (assoc[0] == AC_ASSOC_GLOBAL) return (struct place){TAG_GLOBAL, NULL};
  if (assoc[0] == AC_ASSOC_SINGLE && stream[0]) return (struct place){TAG_STREAM, stream[0]};
  return (struct place){TAG_HOST, NULL}; /* the CPU may always touch it */
}

static struct place place_tagged(const struct ac_alloc *a) {
  uint32_t tag = a->guard_tag;
  if (tag & TAG_PENDING) return (struct place){TAG_PENDING, NULL};
  if (tag >= TAG_STREAM) return (struct place){TAG_STREAM, slots[tag - TAG_STREAM]->stream};
  return (struct place){tag, NULL};
}

/* GLOBAL's own list: all_managed's, as every member of that is GLOBAL. */
static void split_global(void) {
  if (!global_is_all) return;
  global_is_all = false;
  global.ranges.n = 0;
  range_append_list(&global.ranges, ac_class_all(&all_managed));
}

static void leave(struct ac_alloc *a) {
  uint32_t tag = a->guard_tag;
  if (tag & TAG_PENDING) {
    ac_pending_remove(a);
  } else if (tag == TAG_GLOBAL) {
    if (!global_is_all) ac_class_log_move(&global, &global.removed, a);
  } else if (tag >= TAG_STREAM) {
    struct stream_class *sc = slots[tag - TAG_STREAM];
    ac_class_log_move(&sc->c, &sc->c.removed, a);
    stream_class_release(sc);
  }
  a->guard_tag = TAG_NONE;
}

/* false when memory ran out: a is then in no class but all_managed's. */
static bool enter(struct ac_alloc *a, struct place p) {
  a->guard_tag = p.kind == TAG_NONE ? TAG_NONE : TAG_HOST;
  if (p.kind == TAG_PENDING) {
    if (!ac_pending_add(a)) return false;
  } else if (p.kind == TAG_GLOBAL) {
    if (!global_is_all) ac_class_log_move(&global, &global.added, a);
    a->guard_tag = TAG_GLOBAL;
  } else if (p.kind == TAG_STREAM) {
    struct stream_class *sc = class_of_stream(p.stream, true);
    if (!sc) return false;
    sc->members++;
    ac_class_log_move(&sc->c, &sc->c.added, a);
    a->guard_tag = TAG_STREAM + sc->slot;
  }
  return true;
}

/* a's bytes changed class: the keys follow them over their pages, as long
 * as a few such ranges are logged (merged when the log is full). */
static void log_moved_for_keys(const struct ac_alloc *a) {
  if (keys_moved_all) return;
  if (keys_moved.n == KEYS_MOVED_MAX) range_normalise(&keys_moved);
  if (keys_moved.n == KEYS_MOVED_MAX || !range_push(&keys_moved, a->base, a->base + a->size)) {
    keys_moved_all = true;
    keys_moved.n = 0;
  }
}

/* a's bytes changed class: the wanted pages there are to be looked at again.
 * Past a quarter of what all_managed lists, a window is no cheaper than
 * looking at everything (a program allocating thousands of times while
 * nothing is busy logs each one). */
static void log_moved(const struct ac_alloc *a) {
  moves++;
  log_moved_for_keys(a);
  if (moved_all) return;
  if (moved.n > 64 + all_managed.ranges.n / 4 || !range_push(&moved, a->base, a->base + a->size)) {
    moved_all = true;
    moved.n = 0;
  }
}

/* The model's observer: a may have changed class. */
static void note(struct ac_alloc *a, bool leaving, void *unused) {
  (void)unused;
  struct place was = place_tagged(a);
  struct place now = leaving ? (struct place){TAG_NONE, NULL} : place_of(a);
  if (was.kind == now.kind && was.stream == now.stream) {
    if (now.kind == TAG_PENDING) { /* attached again while pending: judged again */
      ac_pending_rejudge(a);
      log_moved(a);
    }
    return;
  }
  if (now.kind != TAG_NONE && now.kind != TAG_GLOBAL) split_global();
  log_moved(a);
  if (was.kind != TAG_NONE && now.kind == TAG_NONE)
    ac_class_log_move(&all_managed, &all_managed.removed, a);
  if (was.kind == TAG_NONE && now.kind != TAG_NONE)
    ac_class_log_move(&all_managed, &all_managed.added, a);
  leave(a);
  enter(a, now);
}

/* ---- the whole of it ---- */

/* a, in no class yet, into its own (its tag may be a former model's). */
static void place_first(struct ac_alloc *a, void *unused) {
  a->guard_tag = TAG_NONE;
  note(a, false, unused);
}

void ac_guard_classes_reset(void) {
  HASH_CLEAR(hh, by_stream);
  ac_class_free(&all_managed);
  ac_class_free(&global);
  ac_pending_reset();
  for (size_t i = 0; i < slot_count; i++) {
    ac_class_free(&slots[i]->c);
    free(slots[i]);
  }
  free(slots);
  free(free_slots);
  slots = NULL;
  free_slots = NULL;
  slot_count = slot_cap = free_count = free_cap = live_classes = 0;
  built = global_is_all = false;
  moved.n = keys_moved.n = was_busy_count = now_busy_count = 0;
  moved_all = keys_moved_all = true;
}

struct collected {
  struct ac_alloc **next, **end;
};

/* One more allocation into the array; past its end (never, while the
 * count is right) it is placed at once, out of order. */
static void collect(struct ac_alloc *a, void *ctx) {
  struct collected *c = ctx;
  if (c->next < c->end)
    *c->next++ = a;
  else
    place_first(a, NULL);
}

static int by_base(const void *x, const void *y) {
  const struct ac_alloc *a = *(struct ac_alloc *const *)x, *b = *(struct ac_alloc *const *)y;
  return (a->base > b->base) - (a->base < b->base);
}

/* Groups every allocation: once, or when the model is a new one (a forked
 * child's), which has no observer yet. In address order, so that each class's
 * list is built by appending, with no log and no merge (one sort of the
 * allocations, skipped when they are in order, instead of one per class). */
static void build(void) {
  ac_guard_classes_reset();
  global_is_all = true; /* until place_first meets another kind */
  ac_model_set_alloc_observer(ac_model, note, NULL);
  size_t n = ac_model_alloc_count(ac_model);
  struct ac_alloc **all = n ? malloc(n * sizeof *all) : NULL;
  if (all) {
    struct collected c = {all, all + n};
    ac_model_for_each_alloc(ac_model, collect, &c);
    /* The model lists them as they came, which is mostly address order. */
    ac_sort_unless_sorted(all, (size_t)(c.next - all), sizeof *all, by_base);
    for (struct ac_alloc **a = all; a < c.next; a++)
      place_first(*a, NULL);
    free(all);
  } else {
    ac_model_for_each_alloc(ac_model, place_first, NULL);
  }
  built = true;
  ac_guard.stats.rebuilds++;
}

void ac_guard_classes_update(void) {
  AC_ASSERT_MODEL_HELD();
  if (!built || ac_model_alloc_observer(ac_model) != note) build();
}

const struct range_list *ac_guard_classes_all_managed(const struct range_list *window) {
  return ac_class_bytes(&all_managed, window);
}

const struct range_list *ac_guard_classes_global(const struct range_list *window) {
  return ac_class_bytes(global_is_all ? &all_managed : &global, window);
}

/* Calls visit for each stream class, or (busy_only) each whose stream is busy
 * now - found through whichever is shorter, the busy streams or the classes. */
struct walk {
  void (*visit)(struct stream_class *sc, void *ctx);
  void *ctx;
};

static void visit_busy(struct ac_stream *s, void *arg) {
  struct walk *w = arg;
  struct stream_class *sc = class_of_stream(s, false);
  if (sc) w->visit(sc, w->ctx);
}

static void walk_classes(bool busy_only, void (*visit)(struct stream_class *, void *), void *ctx) {
  struct walk w = {visit, ctx};
  if (busy_only && ac_order_busy_count(ac_model) < live_classes) {
    ac_model_for_each_busy_stream(ac_model, visit_busy, &w);
    return;
  }
  for (size_t i = 0; i < slot_count; i++) {
    struct stream_class *sc = slots[i];
    if (sc->stream && (!busy_only || ac_order_stream_busy(ac_model, sc->stream))) visit(sc, ctx);
  }
}

struct stream_fn {
  void (*fn)(const struct ac_stream *, const struct range_list *, void *);
  void *ctx;
  const struct range_list *window;
};

static void call_stream_fn(struct stream_class *sc, void *arg) {
  struct stream_fn *f = arg;
  f->fn(sc->stream, ac_class_bytes(&sc->c, f->window), f->ctx);
}

void ac_guard_classes_for_each_stream(bool busy_only, const struct range_list *window,
                                      void (*fn)(const struct ac_stream *s,
                                                 const struct range_list *ranges, void *ctx),
                                      void *ctx) {
  struct stream_fn f = {fn, ctx, window};
  walk_classes(busy_only, call_stream_fn, &f);
}

struct busy_fn {
  void (*fn)(const struct ac_stream *, void *);
  void *ctx;
};

static void call_busy_fn(struct stream_class *sc, void *arg) {
  struct busy_fn *f = arg;
  f->fn(sc->stream, f->ctx);
}

void ac_guard_classes_for_each_busy_stream(void (*fn)(const struct ac_stream *s, void *ctx),
                                           void *ctx) {
  struct busy_fn f = {fn, ctx};
  walk_classes(true, call_busy_fn, &f);
}

/* ---- what changed since the wanted pages were brought up to date ---- */

const struct range_list *ac_guard_classes_moved(bool *all) {
  *all = moved_all;
  return &moved;
}

void ac_guard_classes_moved_clear(void) {
  moved.n = 0;
  moved_all = false;
}

uint64_t ac_guard_classes_moves(void) {
  return moves;
}

const struct range_list *ac_guard_classes_moved_for_keys(bool *all) {
  range_normalise(&keys_moved);
  *all = keys_moved_all;
  return &keys_moved;
}

void ac_guard_classes_keys_followed(void) {
  keys_moved.n = 0;
  keys_moved_all = false;
}

/* A class busy this round: a flip if it was not busy the round before. */
static void mark_busy(struct stream_class *sc, void *arg) {
  struct stream_fn *f = arg;
  if (sc->busy_round != busy_round - 1) f->fn(sc->stream, ac_class_all(&sc->c), f->ctx);
  sc->busy_round = busy_round;
  if (AC_GROW(now_busy, now_busy_count, now_busy_cap, 16)) now_busy[now_busy_count++] = sc->slot;
}

void ac_guard_classes_busy_flips(void (*fn)(const struct ac_stream *s,
                                            const struct range_list *ranges, void *ctx),
                                 void *ctx) {
  struct stream_fn f = {fn, ctx, NULL};
  busy_round++;
  now_busy_count = 0;
  walk_classes(true, mark_busy, &f);
  /* Busy last round and not now. A slot given to another stream since is
   * looked at for nothing: its members all moved, so are looked at anyway. */
  for (size_t i = 0; i < was_busy_count; i++) {
    struct stream_class *sc = slots[was_busy[i]];
    if (sc->stream && sc->busy_round == busy_round - 1) fn(sc->stream, ac_class_all(&sc->c), ctx);
  }
  uint32_t *swap = was_busy;
  size_t swap_cap = was_busy_cap;
  was_busy = now_busy, was_busy_cap = now_busy_cap, was_busy_count = now_busy_count;
  now_busy = swap, now_busy_cap = swap_cap, now_busy_count = 0;
}

bool ac_guard_classes_forbid_now(const struct ac_alloc *a) {
  uint32_t tag = a->guard_tag;
  if (tag & TAG_PENDING) return ac_pending_forbidden(a);
  if (tag >= TAG_STREAM) return ac_order_stream_busy(ac_model, slots[tag - TAG_STREAM]->stream);
  return tag == TAG_GLOBAL;
}

void ac_guard_classes_forget_flips(void) {
  busy_round += 2; /* no class was busy the round before the next */
  was_busy_count = 0;
  ac_pending_forget_flips();
}

size_t ac_guard_classes_unmerged(void) {
  size_t n = all_managed.added.n + all_managed.removed.n + global.added.n + global.removed.n;
  for (size_t i = 0; i < slot_count; i++)
    n += slots[i]->c.added.n + slots[i]->c.removed.n;
  return n;
}
