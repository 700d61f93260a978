/* keys_follow.c - the protection-keys backend (backend.h): how the keys
 * follow the classes at each transition - laid out, patched between
 * layouts, given up where a running thread disagrees, standing aside - and
 * the backend's table. keys.c owns the keys and their tags, keys_patch.c
 * the patches, keys_fault.c the verdicts and the faults, threads.c each
 * thread's PKRU.
 */
#define _GNU_SOURCE
#include <limits.h>
#include <stdlib.h>

#include "backend.h"
#include "classes.h"
#include "guard_internal.h"
#include "pkeys.h"
#include "shim.h"

struct class_fn {
  void (*fn)(const void *id, const struct range_list *bytes);
};

static void stream_class_to(const struct ac_stream *s, const struct range_list *ranges, void *ctx) {
  ((const struct class_fn *)ctx)->fn(s, ranges);
}

/* The classes that may get protection keys, their bytes within window (NULL:
 * all of them) to fn: each stream's, and GLOBAL's where all of it is
 * off-limits at once (strict semantics). Laying out and patching both ask. */
static void each_keyable_class(const struct range_list *window,
                               void (*fn)(const void *id, const struct range_list *bytes)) {
  struct class_fn f = {fn};
  if (!ac_model_reach_semantics(ac_model))
    fn(&ac_guard_global_class, ac_guard_classes_global(window));
  ac_guard_classes_for_each_stream(false, window, stream_class_to, &f);
}

static void offer_classes_to_keys(void) {
  ac_guard_keys_layout_begin();
  each_keyable_class(NULL, ac_guard_keys_layout_class);
}

static void lay_out_keys(void) {
  offer_classes_to_keys();
  ac_guard_keys_layout_end(ac_guard_classes_all_managed(NULL));
  ac_guard_install_handler_once();
}

/* pages (normalised, page-aligned) are looked at again (keys_patch.c):
 * where a keyed class's bytes lie alone they keep or get its key - unless
 * give_up, when every page holding bytes gives its key up to the page
 * tables; false when so many pages were looked at that the keys should
 * stand aside. */
static bool patch_pages(const struct range_list *pages, bool give_up) {
  if (!ac_guard_keys_patch_begin(pages, give_up)) return false;
  each_keyable_class(pages, ac_guard_keys_patch_class);
  ac_guard_keys_patch_end(ac_guard_classes_all_managed(pages));
  return true;
}

/* The pages of the bytes that moved since the keys last followed are patched;
 * false when they are too many: the keys stand aside. */
static bool patch_keys(void) {
  static struct range_list pages;
  bool all;
  const struct range_list *moved = ac_guard_classes_moved_for_keys(&all);
  return !all && range_round_out(&pages, moved, (uintptr_t)ac_guard.page_size) &&
         patch_pages(&pages, false);
}

/* Keys given up because a running thread disagreed (agree_with_threads) are
 * laid out again once that many refreshes passed: twice as many each time
 * the next layout is given up again soon, so a thread that never catches up
 * costs a layout now and then, not one per transition. */
static unsigned long relayout_at = ULONG_MAX, relayout_wait = 2;

static bool keys_given_up_may_return(void) {
  return ac_guard.stats.refreshes >= relayout_at;
}

/* A slot some running thread disagrees with - its PKRU still enables the
 * class's key though the class is forbidden now, or disables it though it is
 * allowed - gives its pages up too: only that thread can write its PKRU,
 * while the page tables hold for every thread at once (threads.c). A thread
 * parked in a call that blocks disagrees with nothing: it catches up before
 * it runs the program's code again. */
static void agree_with_threads(bool any_busy) {
  static struct range_list give_up;
  static unsigned long last_given_up;
  if (!ac_guard_keys_count()) return;
  ac_guard_keys_agree(any_busy, !ac_model_reach_semantics(ac_model), &give_up);
  if (!give_up.n) return;
  if (!any_busy) ac_guard_classes_update();
  if (!patch_pages(&give_up, true)) ac_guard_keys_stand_aside();
  unsigned long now = ac_guard.stats.refreshes;
  relayout_wait =
      now - last_given_up <= 2 * relayout_wait && relayout_wait < 4096 ? 2 * relayout_wait : 2;
  last_given_up = now;
  relayout_at = now + relayout_wait;
}

/* The keys follow every move of class - made, attached, an attach settled,
 * freed. A few moves since they last followed patch them: the pages moved
 * bytes lie on give their keys up to mprotect, a cost of what moved, so that
 * a loop allocating or attaching a little at each step keeps its keys. More
 * (a burst of attaches) and the keys stand aside - mprotect covers
 * everything, exactly as without them. They are laid out again, which looks
 * at everything alive and gives the pages patched away their keys back, when
 * the moves pause (two refreshes without one), or have added up to twice the
 * allocations alive since the last layout, so that laying out costs a
 * constant a move. (An attach is two moves: into pending, and into its
 * stream's class when it settles. At an eighth of the ranges laid out,
 * attaching allocation after allocation in bursts laid the keys out every
 * few bursts; at a half of the allocations, 10,000 attaches laid them out 4
 * times and ran 10% slower than at twice, which lays them out once.) */
static void follow_classes_with_keys(void) {
  static uint64_t followed_at = UINT64_MAX, laid_out_at = UINT64_MAX, seen_moves = UINT64_MAX;
  static unsigned quiet;
  uint64_t moves = ac_guard_classes_moves();
  if (!ac_guard_keys_count()) return;
  quiet = moves == seen_moves ? quiet + 1 : 0;
  seen_moves = moves;
  /* Followed, and laid out since, or patched and not yet paused. */
  if (moves == followed_at && (followed_at == laid_out_at || quiet < 2) &&
      !keys_given_up_may_return())
    return;
  if (laid_out_at == UINT64_MAX || quiet >= 2 || keys_given_up_may_return() ||
      moves - laid_out_at >= 32 + 2 * ac_model_alloc_count(ac_model)) {
    lay_out_keys();
    ac_guard.stats.layouts++;
    relayout_at = ULONG_MAX;
    laid_out_at = followed_at = moves;
    quiet = 0;
    ac_guard_classes_keys_followed();
  } else if (patch_keys()) {
    followed_at = moves;
    ac_guard_classes_keys_followed();
  } else {
    ac_guard_keys_stand_aside();
  }
}

/* --guard-verify: the keys as laid out must fit the classes as they are. */
static void verify_keys(void) {
  if (!ac_guard_keys_active()) return;
  offer_classes_to_keys();
  const char *wrong = ac_guard_keys_layout_wrong(ac_guard_classes_all_managed(NULL));
  if (!wrong) return;
  ac_log("internal error: --guard-verify: protection keys: %s", wrong);
  abort();
}

/* At a transition: the keys follow the classes (when something is busy),
 * give up what a running thread disagrees with, and are checked. */
static void follow(bool any_busy) {
  if (any_busy) follow_classes_with_keys();
  agree_with_threads(any_busy);
  if (any_busy && ac_opts.guard_verify) verify_keys();
}

static void print_stats(void) {
  if (!ac_guard_keys_count()) return;
  ac_log("page guard: protection keys: %lu layouts, %lu patches (standing aside %lu times "
         "between), %lu ranges tagged, %lu faults on keyed memory, %lu transitions some running "
         "thread had not caught up with, %lu pages of freed memory kept their key (%lu lost it "
         "when unmapped or mapped over), %lu fresh mappings of managed memory tagged whole",
         ac_guard.stats.layouts, ac_guard.stats.patches, ac_guard.stats.stood_aside,
         (unsigned long)ac_pkeys_tags_made(), ac_guard.stats.key_faults,
         ac_guard.stats.disagreements, ac_guard.stats.parked, ac_guard.stats.remapped,
         ac_guard.stats.fresh_tagged);
}

const struct ac_guard_backend ac_guard_keys_backend = {
    .name = "pkeys",
    .follow = follow,
    .restore_lifted = ac_guard_keys_restore_lifted,
    .transition = ac_guard_keys_transition,
    .pages_shut = ac_guard_keys_pages_shut,
    .shut_pages = ac_guard_keys_shut_pages,
    .forget = ac_guard_keys_forget,
    .on_fault = ac_guard_keys_on_fault,
    .after_fork_child = ac_guard_keys_after_fork_child,
    .print_stats = print_stats,
};
