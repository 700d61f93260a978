/* wanted.c - the pages the page guard protects with mprotect: those
 * holding memory the CPU may not touch now (and, under
 * --guard-shared-pages off, none that it may).
 *
 * From scratch that is a few merges of sorted lists over every class -
 * linear in everything alive, at every transition: a program attaching
 * 10,000 allocations one by one while work runs would pay 10,000 times
 * 10,000. So the pages are kept up to date instead: a refresh looks again
 * only at the pages where something changed since the last one - those of
 * allocations that changed class, of stream classes whose stream turned busy
 * or idle, of pending attaches whose verdict changed (classes.c keeps
 * that log) - and leaves every other page as it was. A page's verdict
 * depends on the bytes in it alone, so recomputing a window of pages with
 * the same arithmetic as from scratch gives what from scratch would give
 * there.
 *
 * Where protection keys are laid out again or stand aside, what mprotect
 * covers changes on the pages whose key changed, which keys.c lists:
 * they join the window. From scratch still: the first time, when keys are
 * given up (in a signal handler, too), under `device` semantics (where what of
 * GLOBAL is forbidden follows each busy stream's reach), and when more moved
 * than is worth listing. --guard-verify checks every update against it.
 */
#include "wanted.h"

#include "classes.h"
#include "guard_internal.h"
#include "ranges.h"
#include "rules_host.h"
#include "shim.h"

/* The state the window is computed against (under ac_model_lock). */
static bool up_to_date;            /* want holds the last update's result */
static bool last_busy;             /* the last update found something busy */
static bool keys_were_active;      /* ac_guard_keys_active() then */
static uint64_t busy_changes_seen; /* ac_order_busy_changes() then */

/* While nothing is busy nothing is protected, but the pages of the last
 * update that found something busy are kept, with what changed since logged
 * against them (the moves, the streams busy then, the pending verdicts then):
 * when work starts again they are brought up to date through a window of
 * what changed. Without them, the first update after every synchronisation
 * would look at every class whole - GLOBAL turned forbidden again - and a
 * program attaching one allocation after another between synchronisations
 * would pay for everything alive each time. */
static struct range_list kept;
static bool kept_valid;

/* ---- the arithmetic, over every byte or over a window ---- */

/* forbidden = forbidden joined with l (both normalised). */
static void join(struct range_list *forbidden, const struct range_list *l) {
  static struct range_list joined;
  range_union(&joined, forbidden, l);
  range_swap(forbidden, &joined);
}

/* l, or its part inside window when there is one. */
static const struct range_list *within(const struct range_list *l,
                                       const struct range_list *window) {
  static struct range_list clipped;
  if (!window) return l;
  range_clip(&clipped, l, window);
  return &clipped;
}

/* What mprotect covers of bytes (a class's, inside window already): bytes
 * themselves, or - where protection keys cover some of them - unkeyed, the
 * keys' remainder (ac_guard_keys_unkeyed*), clipped to window. */
static const struct range_list *unkeyed_within(const struct range_list *bytes,
                                               const struct range_list *unkeyed,
                                               const struct range_list *window) {
  return unkeyed == bytes ? bytes : within(unkeyed, window);
}

/* Under `device` semantics, globally attached memory is off-limits only while
 * work that was given it runs: the busy streams' reach. */
static void add_reached_global(struct ac_stream *s, void *ctx) {
  struct range_list *forbidden = ctx;
  if (!s->reach_count || !ac_order_stream_busy(ac_model, s)) return;
  for (size_t i = 0; i < s->reach_count; i++) {
    struct ac_alloc *a = ac_model_find_alloc_at(ac_model, s->reach[i].base);
    enum ac_assoc assoc[2];
    struct ac_stream *stream[2];
    if (!a || a->serial != s->reach[i].serial || a->retiring) continue;
    int n = ac_order_binding_assocs(ac_model, a, assoc, stream);
    if (assoc[0] == AC_ASSOC_GLOBAL || (n == 2 && assoc[1] == AC_ASSOC_GLOBAL))
      range_push(forbidden, a->base, a->base + a->size);
  }
}

struct joining {
  struct range_list *forbidden;
  const struct range_list *window; /* NULL: everything */
};

/* A busy stream's memory (inside the window). */
static void join_stream_class(const struct ac_stream *s, const struct range_list *ranges,
                              void *ctx) {
  struct joining *j = ctx;
  join(j->forbidden, unkeyed_within(ranges, ac_guard_keys_unkeyed(s, ranges), j->window));
}

static bool pending_forbidden(const struct ac_alloc *a) {
  struct ac_stream *blocker;
  enum ac_rule_id rule;
  return !ac_host_may_touch(ac_model, a, NULL, &blocker, &rule);
}

/* The pending allocations the CPU may not touch now (normalised); with a
 * window, by the verdicts the last pending_flips kept (it has just run). */
static void add_pending(struct range_list *extra, const struct range_list *window) {
  if (window) {
    range_append_list(extra, ac_guard_classes_forbidden_pending(window));
    return;
  }
  size_t count;
  struct ac_alloc *const *pending = ac_guard_classes_pending(&count);
  for (size_t i = 0; i < count; i++)
    if (pending_forbidden(pending[i]))
      range_push(extra, pending[i]->base, pending[i]->base + pending[i]->size);
  range_normalise(extra);
}

/* The bytes the CPU may not touch now, all or inside window (normalised).
 * Lists are merged, never sorted again: from scratch over 10,000
 * allocations it stays linear. */
static void forbidden_bytes(struct range_list *forbidden, const struct range_list *window) {
  static struct range_list extra;
  struct joining j = {forbidden, window};
  forbidden->n = extra.n = 0;
  if (ac_model_reach_semantics(ac_model)) { /* never with a window */
    ac_model_for_each_busy_stream(ac_model, add_reached_global, &extra);
    range_normalise(&extra);
    join(forbidden, &extra);
  } else {
    const struct range_list *global = ac_guard_classes_global(window);
    join(forbidden,
         unkeyed_within(global, ac_guard_keys_unkeyed(&ac_guard_global_class, global), window));
  }
  ac_guard_classes_for_each_stream(true, window, join_stream_class, &j);
  extra.n = 0;
  add_pending(&extra, window);
  join(forbidden, &extra);
}

/* Pages to protect, all or inside window: those of forbidden bytes - less,
 * under --guard-shared-pages off, every page that also holds bytes the CPU
 * may touch (allocations are disjoint, so the allowed bytes are all managed
 * bytes less the forbidden ones). With shared pages guarded (the default)
 * an access to their allowed part faults and is let through (fault.c). */
static void wanted_pages(struct range_list *want, const struct range_list *window) {
  static struct range_list forbidden, allowed, forbidden_pages, allowed_pages;
  want->n = 0;
  forbidden_bytes(&forbidden, window);
  if (!forbidden.n) return;
  if (ac_opts.guard_shared_pages) {
    range_round_out(want, &forbidden, (uintptr_t)ac_guard.page_size);
    return;
  }
  const struct range_list *managed = ac_guard_classes_all_managed(window);
  range_subtract(&allowed, unkeyed_within(managed, ac_guard_keys_unkeyed_managed(managed), window),
                 &forbidden);
  range_round_out(&forbidden_pages, &forbidden, (uintptr_t)ac_guard.page_size);
  range_round_out(&allowed_pages, &allowed, (uintptr_t)ac_guard.page_size);
  range_subtract(want, &forbidden_pages, &allowed_pages);
}

/* ---- the window: the pages where something changed ---- */

/* The bytes of what changed, as sorted lists are merged into it (a class's
 * list is long: it is joined, never sorted again). */
static struct range_list window_bytes, loose;

static void add_stream_flip(const struct ac_stream *s, const struct range_list *ranges, void *ctx) {
  (void)ctx;
  join(&window_bytes, ac_guard_keys_unkeyed(s, ranges));
}

static void add_pending_flip(const struct ac_alloc *a, void *ctx) {
  (void)ctx;
  range_push(&loose, a->base, a->base + a->size);
}

/* Whether the move of the allocation of bytes r changed nothing on its
 * pages: it is forbidden now and they were all protected. Each of them then
 * still holds forbidden bytes only - unless something else in it changed
 * too, which puts the page in the window by itself - and what mprotect
 * covers of a page depends on the bytes in it alone. (Where keys changed,
 * the rekeyed pages are in the window.) Attaching allocation after
 * allocation to a busy stream under strict semantics is mostly such moves:
 * GLOBAL to pending, forbidden both. */
static bool move_changed_nothing(const struct range *r, const struct range_list *want) {
  if (!ac_guard_pages_covered(want, r->start, r->end)) return false;
  struct ac_alloc *a = ac_model_find_alloc_at(ac_model, r->start);
  return a && a->base + a->size == r->end && ac_guard_classes_forbid_now(a);
}

/* The pages of what changed since the last update (want): moved (the
 * allocations that changed class), rekeyed (the pages whose key changed),
 * and the flips. global_flipped: the GLOBAL class turned forbidden (the last
 * update found nothing busy). */
static void changed_pages(struct range_list *window, const struct range_list *want,
                          const struct range_list *moved, const struct range_list *rekeyed,
                          bool global_flipped) {
  window_bytes.n = loose.n = 0;
  /* Under strict semantics, with something busy, a pending allocation's
   * verdict depends only on which streams are busy: judged again only when
   * that changed (or it moved). */
  uint64_t busy_changes = ac_order_busy_changes(ac_model);
  ac_guard_classes_pending_flips(busy_changes != busy_changes_seen, pending_forbidden,
                                 add_pending_flip, NULL);
  busy_changes_seen = busy_changes;
  for (size_t i = 0; i < moved->n; i++)
    if (global_flipped || !move_changed_nothing(&moved->r[i], want))
      range_push(&loose, moved->r[i].start, moved->r[i].end);
  ac_guard_classes_moved_clear();
  range_append_list(&loose, rekeyed);
  range_normalise(&loose);
  join(&window_bytes, &loose);
  ac_guard_classes_busy_flips(add_stream_flip, NULL);
  if (global_flipped)
    join(&window_bytes,
         ac_guard_keys_unkeyed(&ac_guard_global_class, ac_guard_classes_global(NULL)));
  range_round_out(window, &window_bytes, (uintptr_t)ac_guard.page_size);
}

/* want = want outside window, and fresh inside it. */
static void update_within(struct range_list *want, const struct range_list *window) {
  static struct range_list fresh, rest;
  if (!window->n) return;
  wanted_pages(&fresh, window);
  range_subtract(&rest, want, window);
  range_union(want, &rest, &fresh);
}

/* ---- the interface ---- */

void ac_guard_wanted_from_scratch(struct range_list *want, bool any_busy) {
  AC_ASSERT_MODEL_HELD();
  want->n = 0;
  if (any_busy) wanted_pages(want, NULL);
}

static void ignore_stream(const struct ac_stream *s, const struct range_list *ranges, void *ctx) {
  (void)s, (void)ranges, (void)ctx;
}

static void ignore_alloc(const struct ac_alloc *a, void *ctx) {
  (void)a, (void)ctx;
}

/* want is from scratch: the log and the verdicts are brought level with it. */
static void level_with_scratch(void) {
  ac_guard_classes_moved_clear();
  ac_guard_classes_busy_flips(ignore_stream, NULL);
  ac_guard_classes_pending_flips(true, pending_forbidden, ignore_alloc, NULL);
  busy_changes_seen = ac_order_busy_changes(ac_model);
}

/* Nothing is busy: nothing is forbidden. The last busy update's pages are
 * kept while what they were computed against still holds; otherwise what
 * changes meanwhile is looked at once something is busy, against nothing
 * forbidden. */
static void update_idle(struct range_list *want, bool keys_active, bool rekeyed) {
  if (up_to_date && last_busy) {
    range_swap(&kept, want);
    kept_valid = !ac_model_reach_semantics(ac_model);
  }
  if (rekeyed || keys_active != keys_were_active) kept_valid = false;
  want->n = 0;
  if (kept_valid) return;
  ac_guard_classes_moved_clear();
  ac_guard_classes_forget_flips();
}

void ac_guard_wanted_update(struct range_list *want, bool any_busy) {
  static struct range_list window;
  AC_ASSERT_MODEL_HELD();
  bool keys_active = ac_guard_keys_active();
  bool moved_all, rekeyed_all, global_flipped = !last_busy;
  const struct range_list *moved = ac_guard_classes_moved(&moved_all);
  const struct range_list *rekeyed = ac_guard_keys_take_rekeyed(&rekeyed_all);
  if (!any_busy) {
    update_idle(want, keys_active, rekeyed->n || rekeyed_all);
  } else if (!up_to_date || moved_all || rekeyed_all || keys_active != keys_were_active ||
             ac_model_reach_semantics(ac_model)) {
    wanted_pages(want, NULL);
    level_with_scratch();
    kept_valid = false;
    ac_guard.stats.from_scratch++;
  } else {
    if (!last_busy && kept_valid) { /* against the kept pages: GLOBAL was forbidden there too */
      range_swap(&kept, want);
      kept_valid = global_flipped = false;
      ac_guard.stats.resumed++;
    }
    changed_pages(&window, want, moved, rekeyed, global_flipped);
    update_within(want, &window);
    ac_guard.stats.window_ranges += window.n;
  }
  up_to_date = true;
  last_busy = any_busy;
  keys_were_active = keys_active;
}

void ac_guard_wanted_reset(void) {
  up_to_date = kept_valid = false;
}
