/* refresh.c - the page guard: CPU accesses to managed memory the CPU may not
 * touch now are made visible by protecting that memory (PROT_NONE); the
 * SIGSEGV of an access is judged (AC201/AC202) and the access let through.
 *
 * Protection is exact and eager: after every transition of the ordering
 * model (a stream turned busy or idle, an allocation made, attached or
 * freed) the protected pages are exactly those the model forbids the CPU,
 * before the call that made the transition returns. A page of memory the
 * program may touch alone is never left protected, so a correct program
 * faults only on pages it shares with forbidden memory, and a system call
 * the shim wraps never sees EFAULT. The allocations are grouped into classes of
 * byte ranges - globally attached, HOST, single-attached to stream S, pending
 * an attach - kept up to date allocation by allocation (classes.c), and
 * the pages to protect are recomputed only where something changed
 * (wanted.c), so a transition costs what it changed, not what is alive,
 * and the mprotect calls for it.
 *
 * Small allocations of every kind share pages. A page is protected when
 * some forbidden byte lies in it: a touch of its allowed part faults, is
 * found allowed, and lifts the page for that thread until the next
 * transition (fault.c). Under --guard-shared-pages off a page that also
 * holds allowed bytes stays open and its forbidden part unwatched.
 *
 * This file is the refresh side. The fault side - judging an access in the
 * SIGSEGV handler or before a system call, and lifting its page - is
 * fault.c; what the two share is guard_internal.h.
 */
#define _GNU_SOURCE
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "backend.h"
#include "grow.h"
#include "classes.h"
#include "guard_internal.h"
#include "remaps.h"
#include "wanted.h"
#include "ranges.h"
#include "rules_host.h"
#include "repair.h"
#include "shim.h"
#include "sys.h"

/* ---- state (under ac_model_lock) ---- */

struct ac_guard_shared ac_guard = {.driver_lo = UINTPTR_MAX, .backend = &ac_guard_mprotect_backend};

static uint64_t seen_generation = UINT64_MAX, seen_layout = UINT64_MAX;
static bool seen_any_busy;
/* The model the protected pages are known right for: the last refresh's, or
 * the last skipped one's (ac_guard_refresh_after_move_locked). */
static uint64_t right_generation = UINT64_MAX, right_layout = UINT64_MAX;

static struct range_list wanted_now; /* what the CPU may not touch now (pages) */

/* Closes (or opens) pages for every thread, counted for --verbose. */
static int guard_protect(uintptr_t start, uintptr_t end, bool close) {
  ac_guard.stats.mprotects++;
  return close ? ac_guard_close_pages(start, end) : ac_guard_open_pages(start, end);
}

/* --guard-verify: pages, the guard's own answer, must be the pages to
 * protect computed from scratch - outside the pages in shut, when given -; a
 * difference is a bug of the guard's own: said, and the process stops. */
static void verify_with_scratch(const struct range_list *pages, const struct range_list *shut,
                                bool any_busy, const char *which) {
  static struct range_list scratch, outside_scratch, outside_pages;
  ac_guard_wanted_from_scratch(&scratch, any_busy);
  if (shut) {
    range_subtract(&outside_scratch, &scratch, shut);
    range_subtract(&outside_pages, pages, shut);
    if (range_equal(&outside_scratch, &outside_pages)) return;
  } else if (range_equal(&scratch, pages)) {
    return;
  }
  ac_log("internal error: --guard-verify: the pages %s (%zu ranges) differ from those computed "
         "from scratch (%zu ranges)",
         which, pages->n, scratch.n);
  abort();
}

/* The pages to protect now, into wanted_now: kept up to date from what
 * changed (wanted.c), and with --guard-verify checked. */
static void desired_pages(bool any_busy) {
  ac_guard_wanted_update(&wanted_now, any_busy);
  if (ac_opts.guard_verify) verify_with_scratch(&wanted_now, NULL, any_busy, "kept up to date");
}

/* ---- transitions ---- */

static void publish(const struct range_list *closed) {
  ac_published_set(&ac_guard.closed, closed->r, NULL, closed->n);
}

/* What is really protected now: protected_now less the pages the handler
 * lifted, or nothing (after lifting everything) when that is not known. */
static void settle_actual_protection(void) {
  static struct range_list pages, rest;
  ac_guard.settles++; /* a new busy period: no thread was judged in it yet */
  bool unlocked = __atomic_exchange_n(&ac_guard.lifted_unlocked, 0, __ATOMIC_ACQ_REL);
  if (ac_guard.protection_uncertain || unlocked) {
    for (size_t i = 0; i < ac_guard.protected_now.n; i++)
      guard_protect(ac_guard.protected_now.r[i].start, ac_guard.protected_now.r[i].end, false);
    ac_guard.protected_now.n = 0;
    if (ac_guard.lifted_count) ac_guard_keys_lifts_ended();
  } else if (ac_guard.lifted_count) {
    /* Lifted for their threads alone, the pages still carry the lift key:
     * opened here, and closed again below where they must be. */
    bool by_key = ac_guard_keys_lifted_for_threads();
    pages.n = 0;
    for (size_t i = 0; i < ac_guard.lifted_count; i++) {
      uintptr_t page = ac_guard.lifted[i];
      if (by_key) ac_guard_open_pages(page, page + (uintptr_t)ac_guard.page_size);
      range_push(&pages, page, page + (uintptr_t)ac_guard.page_size);
    }
    if (by_key) ac_guard_keys_lifts_ended();
    range_normalise(&pages);
    range_subtract(&rest, &ac_guard.protected_now, &pages);
    range_swap(&ac_guard.protected_now, &rest);
  }
  ac_guard.lifted_count = 0;
  ac_guard.protection_uncertain = false;
}

/* The pages wanted_now holds that the last refresh left open for system
 * calls in flight (pins.c), until a refresh closes them. */
static struct range_list left_open;

/* Makes the protected pages wanted_now, less the pages of system calls in
 * flight (left_open). While it changes them, what is published covers both
 * what was closed and what will be: a fault on a page closed a moment ago is
 * the guard's, also for a signal handler that interrupted this very refresh
 * (fault.c's lift_without_lock). */
static void apply_wanted(void) {
  static struct range_list change, cover, pinned, goal, kept_closed;
  if (range_union(&cover, &ac_guard.protected_now, &wanted_now)) publish(&cover);
  /* The pages of system calls in flight stay open (pins.c): read after the
   * publishing above, so a call pinned later sees its pages published. */
  const struct range_list *target = &wanted_now;
  bool crowded = ac_guard_pins_read(&pinned);
  if (pinned.n || crowded) {
    range_subtract(&goal, &wanted_now, &pinned);
    if (crowded) { /* a call without a slot: nothing is closed anew */
      range_subtract(&kept_closed, &goal, &ac_guard.protected_now); /* what would be */
      range_subtract(&change, &goal, &kept_closed);
      range_swap(&goal, &change);
    }
    ac_guard.stats.left_open_for_calls += !range_equal(&goal, &wanted_now);
    target = &goal;
  }
  range_subtract(&left_open, &wanted_now, target);
  range_subtract(&change, &ac_guard.protected_now, target);
  for (size_t i = 0; i < change.n; i++)
    guard_protect(change.r[i].start, change.r[i].end, false);
  range_subtract(&change, target, &ac_guard.protected_now);
  for (size_t i = 0; i < change.n; i++)
    guard_protect(change.r[i].start, change.r[i].end, true);
  ac_guard.protected_now.n = 0;
  range_append_list(&ac_guard.protected_now, target);
  publish(&ac_guard.protected_now);
  if (ac_guard.protected_now.n > ac_guard.stats.largest)
    ac_guard.stats.largest = ac_guard.protected_now.n;
}

/* Whether no transition happened since the last refresh. Pages the fault
 * side lifted, or could not account for, stay as they are until the next
 * transition: the refresh runs at every release of the model lock, and a
 * lifted page protected again by a reporter's or another thread's release
 * would fault twice for one access. */
static bool nothing_to_do(uint64_t generation, uint64_t layout) {
  if (generation != seen_generation) return false;
  /* Only the layout moved while nothing is busy and nothing protected: the
   * classes are regrouped once something is busy again (a program
   * allocating 10,000 times between synchronisations regroups once). */
  return layout == seen_layout ||
         (!seen_any_busy && ac_guard.protected_now.n == 0 && ac_guard.lifted_count == 0);
}

void ac_guard_refresh_locked(void) {
  AC_ASSERT_MODEL_HELD();
  if (!ac_guard_on()) return;
  uint64_t generation = ac_order_generation(ac_model), layout = ac_model_layout(ac_model);
  if (nothing_to_do(generation, layout)) {
    ac_guard.backend->transition(); /* a thread that left a call behind catches up here */
    return;
  }
  double started = ac_opts.verbose ? ac_sys_now_seconds() : 0; /* a clock read costs */
  ac_guard.stats.refreshes++;
  bool any_busy = ac_order_any_busy(ac_model, NULL) != NULL;
  if (any_busy) ac_guard_classes_update();
  ac_guard.backend->follow(any_busy);
  seen_any_busy = any_busy;
  seen_generation = generation;
  seen_layout = layout;
  desired_pages(any_busy);
  if (wanted_now.n) ac_guard_install_handler_once();
  ac_guard.backend->restore_lifted();
  settle_actual_protection();
  apply_wanted();
  ac_guard.backend->transition();
  right_generation = generation;
  right_layout = layout;
  if (ac_opts.verbose) ac_guard.stats.seconds += ac_sys_now_seconds() - started;
}

void ac_guard_before_locked(struct ac_guard_before *before) {
  AC_ASSERT_MODEL_HELD();
  before->generation = ac_order_generation(ac_model);
  before->layout = ac_model_layout(ac_model);
  before->busy_changes = ac_order_busy_changes(ac_model);
}

/* Whether moving a changed no page that protection covers or should: the
 * pages were right before the operation, no stream turned busy or idle
 * since (so no other allocation's verdict changed), and a is forbidden now
 * with every page it touches protected by mprotect or by a key disabled now
 * (a keyed page keeps its key past the move: the keys follow the move at
 * the next refresh, which runs before anything on the page is allowed).
 * Each of those pages then held no allowed bytes before and holds none now,
 * and nothing else moved.
 * Attaching allocation after allocation to a busy stream under strict
 * semantics is this: GLOBAL to pending, forbidden both. Device semantics
 * (what work reaches decides) and pages the fault handler lifted take the
 * whole refresh. */
static bool move_changed_no_page(const struct ac_guard_before *before, const struct ac_alloc *a) {
  struct ac_stream *blocker;
  enum ac_rule_id rule;
  if (before->generation != right_generation || before->layout != right_layout ||
      before->busy_changes != ac_order_busy_changes(ac_model))
    return false;
  if (ac_model_reach_semantics(ac_model) || ac_guard.protection_uncertain ||
      ac_guard.lifted_count || __atomic_load_n(&ac_guard.lifted_unlocked, __ATOMIC_ACQUIRE))
    return false;
  if (!a || !ac_alloc_is_managed(a) || a->retiring || !a->size) return false;
  return ac_guard.backend->pages_shut(&ac_guard.protected_now, a->base, a->base + a->size) &&
         !ac_host_may_touch(ac_model, a, NULL, &blocker, &rule);
}

/* --guard-verify after a skipped refresh: the pages protected are those
 * from scratch, but where a key disabled now shuts the pages (an allocation
 * moved on them keeps their key until the next refresh, which mprotect
 * computed from scratch does not know). */
static void verify_skipped(void) {
  static struct range_list shut, meant;
  ac_guard.backend->shut_pages(&shut);
  range_union(&meant, &ac_guard.protected_now, &left_open);
  verify_with_scratch(&meant, &shut, true, "protected after a skipped refresh");
}

void ac_guard_refresh_after_move_locked(const struct ac_guard_before *before,
                                        const struct ac_alloc *a) {
  AC_ASSERT_MODEL_HELD();
  if (!ac_guard_on()) return;
  if (!move_changed_no_page(before, a)) {
    ac_guard_refresh_locked();
    return;
  }
  /* The move stays logged in the classes, and the next refresh that has
   * something to do reads it; until then there is nothing to do. */
  right_generation = seen_generation = ac_order_generation(ac_model);
  right_layout = seen_layout = ac_model_layout(ac_model);
  ac_guard.stats.skipped++;
  if (ac_opts.guard_verify) verify_skipped();
}

/* Before memory goes back to the driver: it leaves the classes, and no
 * protection outlives it into memory the driver may hand out again (the
 * refresh when the model lock is left, before the driver call, lifts it). */
void ac_guard_allocated_locked(const struct ac_alloc *a) {
  AC_ASSERT_MODEL_HELD();
  ac_guard_note_guardable(a->base, a->base + a->size);
  ac_guard_fresh_allocation_locked(a->base, a->size, a->assoc == AC_ASSOC_GLOBAL);
}

void ac_guard_retire_locked(struct ac_alloc *a) {
  AC_ASSERT_MODEL_HELD();
  ac_model_retire_alloc(ac_model, a);
  ac_guard.backend->forget(a->base, a->base + a->size);
}

/* ---- start-up, statistics, fork ---- */

void ac_guard_install_handler_once(void) {
  static bool installed;
  if (installed) return;
  installed = true;
  ac_guard_reporter_start();
  ac_repair_start();
  ac_signal_install_guard_handler();
}

void ac_guard_print_stats(void) {
  if (!ac_guard_on() || !ac_opts.verbose) return;
  ac_model_enter();
  ac_log("page guard: %lu refreshes (%lu rebuilds, %lu from scratch, %lu ranges of pages looked "
         "at again in the others, %lu of those resumed the pages kept while idle; %lu skipped "
         "after attaches that could change no page), %lu mprotect calls, %lu faults (%lu by the "
         "driver, %lu judged late, %lu unjudged, %lu allowed: memory the CPU may touch on a "
         "page shared with memory it may not; %lu more on pages already let go; %lu accesses "
         "stepped, their page closed again after), %lu refreshes "
         "that left the pages of system calls in flight open, at most %lu "
         "ranges protected, %.3f ms "
         "refreshing, %.3f ms "
         "judging faults",
         ac_guard.stats.refreshes, ac_guard.stats.rebuilds, ac_guard.stats.from_scratch,
         ac_guard.stats.window_ranges, ac_guard.stats.resumed, ac_guard.stats.skipped,
         ac_guard.stats.mprotects, ac_guard.stats.faults, ac_guard.stats.driver_faults,
         ac_guard.stats.judged_late, ac_guard.stats.unjudged, ac_guard.stats.allowed_faults,
         ac_guard.stats.let_go_again, ac_guard.stats.steps, ac_guard.stats.left_open_for_calls,
         ac_guard.stats.largest, ac_guard.stats.seconds * 1e3,
         ac_guard.stats.handler_seconds * 1e3);
  if (ac_guard.stats.steps_timed)
    ac_log("page guard: a stepped access's page was open to every thread %.1f us on average, "
           "%.1f us at most (%lu steps)",
           ac_guard.stats.step_open_seconds * 1e6 / (double)ac_guard.stats.steps_timed,
           ac_guard.stats.step_open_longest * 1e6, ac_guard.stats.steps_timed);
  ac_guard.backend->print_stats();
  if (ac_guard.stats.ahead || ac_guard.stats.ahead_refused || ac_guard.stats.ahead_held)
    ac_log("page guard: %lu prefetches of closed memory to the GPU ahead of work (%.1f MiB), %lu "
           "refused by the driver; %lu times memory moved before was left where the GPU held it "
           "(%lu without asking the kernel: no page fault since)",
           ac_guard.stats.ahead, (double)ac_guard.stats.ahead_bytes / (1 << 20),
           ac_guard.stats.ahead_refused, ac_guard.stats.ahead_held, ac_guard.stats.ahead_unasked);
  ac_model_leave();
}

/* In a forked child: nothing is protected any more that the child could use
 * (UVM unmaps managed memory there), and the reporter thread did not survive. */
void ac_guard_after_fork_child(void) {
  ac_guard_pins_after_fork_child();
  ac_guard.protected_now.n = wanted_now.n = left_open.n = 0;
  ac_guard.lifted_count = 0;
  seen_generation = seen_layout = right_generation = right_layout = UINT64_MAX;
  ac_guard_classes_reset();
  ac_guard_wanted_reset();
  ac_published_set(&ac_guard.closed, NULL, NULL, 0);
  ac_guard.backend->after_fork_child();
  ac_guard_program_prot_after_fork_child();
  ac_guard_remaps_after_fork_child();
  ac_guard_deferred_after_fork_child();
  ac_guard_step_after_fork_child();
  ac_guard_reporter_after_fork_child();
  ac_repair_after_fork_child();
}
