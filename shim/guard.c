/* guard.c - the page guard: CPU accesses to managed memory the CPU may not
 * touch now are made visible by protecting that memory (PROT_NONE); the
 * SIGSEGV of an access is judged (AC201/AC202) and the access let through.
 *
 * Protection is exact and eager: after every transition of the ordering
 * model (a stream turned busy or idle, an allocation made, attached or
 * freed) the protected pages are exactly those the model forbids the CPU,
 * before the call that made the transition returns. Memory the program may
 * touch is never left protected, so a correct program never faults and never
 * sees EFAULT from a system call. The allocations are grouped, once per
 * change of layout, into classes of byte ranges - globally attached, HOST,
 * single-attached to stream S, pending an attach - so a transition costs a
 * few merges of sorted lists and the mprotect calls for what changed.
 *
 * Small allocations share pages. A page is protected only if some forbidden
 * allocation lies in it and no allowed one does: a touch of the forbidden
 * part of such a shared page goes unseen, which is the price of never
 * faulting a correct program.
 *
 * The fault side (ac_guard_on_fault) runs in the SIGSEGV handler on the
 * faulting thread: it judges the access against the model as it is at that
 * instant, leaves the finding for the reporter (guard_reporter.c), lifts the
 * page until the next transition and returns, so the access completes. An
 * access made by the driver itself (its instruction is in libcuda) is the
 * driver's business, never judged as the program's.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <link.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "grow.h"
#include "ranges.h"
#include "rules_host.h"
#include "shim.h"

/* ---- state (under ac_model_lock unless said otherwise) ---- */

static long page_size;
static bool enabled;
static uint64_t seen_generation = UINT64_MAX, seen_layout = UINT64_MAX;
static uint64_t classes_layout = UINT64_MAX;
static bool seen_any_busy;

/* The allocations by class (exact bytes), rebuilt when the layout changes. */
struct stream_ranges {
  const struct ac_stream *stream;
  struct range_list ranges;
};
static struct range_list all_managed; /* every managed allocation not being freed */
static struct range_list global_ranges;
static struct stream_ranges *single_ranges;
static size_t single_count, single_cap;
static struct ac_alloc **pending;
static size_t pending_count, pending_cap;

static struct range_list protected_now; /* what was made PROT_NONE (pages) */
static struct range_list wanted_now;    /* what the CPU may not touch now (pages) */
/* Pages the handler lifted inside protected_now, until the next transition. */
#define LIFTED_MAX 1024
static uintptr_t lifted[LIFTED_MAX];
static size_t lifted_count;
/* Set when protection is not known exactly (too many lifted pages; a page
 * lifted by a handler that could not take the lock): the next refresh starts
 * from nothing protected. */
static bool protection_uncertain;
static int lifted_unlocked; /* atomic: set by a handler without the lock */

/* Where libcuda's code is: faults there are the driver's own accesses. */
static uintptr_t driver_lo = UINTPTR_MAX, driver_hi;

/* What the guard cost, for --verbose. */
static struct {
  unsigned long refreshes, rebuilds, mprotects, faults, driver_faults, unjudged, largest;
  double seconds, handler_seconds;
} stats;

static int guard_mprotect(uintptr_t start, uintptr_t end, int prot) {
  stats.mprotects++;
  return mprotect((void *)start, end - start, prot);
}

static double now_seconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* The protected ranges as the signal handler sees them: a seqlock'd copy. */
#define PUBLISHED_MAX 8192
static struct range published[PUBLISHED_MAX];
static size_t published_count;
static unsigned published_seq;
static bool published_overflow; /* more ranges than fit: the handler trusts the model */

/* Set while this thread judges a fault or a buffer: libunwind checks memory
 * with write(2) on a pipe, which must not come back into the guard. */
static __thread bool in_guard;

static uintptr_t page_floor(uintptr_t a) {
  return a & ~(uintptr_t)(page_size - 1);
}

/* ---- classes ---- */

static struct range_list *ranges_of_stream(const struct ac_stream *s) {
  for (size_t i = 0; i < single_count; i++)
    if (single_ranges[i].stream == s) return &single_ranges[i].ranges;
  if (!AC_GROW(single_ranges, single_count, single_cap, 8)) return NULL;
  single_ranges[single_count] = (struct stream_ranges){s, {0, 0, NULL}};
  return &single_ranges[single_count++].ranges;
}

static void note_pending(struct ac_alloc *a) {
  if (AC_GROW(pending, pending_count, pending_cap, 16)) pending[pending_count++] = a;
}

static void classify(struct ac_alloc *a, void *ctx) {
  (void)ctx;
  if (!ac_alloc_is_managed(a) || a->size == 0 || a->retiring) return;
  enum ac_assoc assoc[2];
  struct ac_stream *stream[2];
  uintptr_t start = a->base, end = a->base + a->size;
  range_push(&all_managed, start, end);
  if (ac_order_binding_assocs(ac_model, a, assoc, stream) == 2) {
    note_pending(a);
  } else if (assoc[0] == AC_ASSOC_GLOBAL) {
    range_push(&global_ranges, start, end);
  } else if (assoc[0] == AC_ASSOC_SINGLE && stream[0]) {
    struct range_list *l = ranges_of_stream(stream[0]);
    if (l) range_push(l, start, end);
  } /* HOST: the CPU may always touch it */
}

static void rebuild_classes(void) {
  all_managed.n = global_ranges.n = 0;
  for (size_t i = 0; i < single_count; i++)
    range_free(&single_ranges[i].ranges);
  single_count = 0;
  pending_count = 0;
  ac_model_for_each_alloc(ac_model, classify, NULL);
  range_normalise(&all_managed);
  range_normalise(&global_ranges);
  for (size_t i = 0; i < single_count; i++)
    range_normalise(&single_ranges[i].ranges);
  stats.rebuilds++;
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

/* forbidden = forbidden joined with l (both normalised). */
static void join(struct range_list *forbidden, const struct range_list *l) {
  static struct range_list joined;
  range_union(&joined, forbidden, l);
  struct range_list swap = *forbidden;
  *forbidden = joined;
  joined = swap;
}

/* The allocations the CPU may not touch now, in exact bytes (normalised).
 * Lists are merged, never sorted again: a transition over 10,000 allocations
 * stays linear. */
static void forbidden_bytes(struct range_list *forbidden) {
  static struct range_list extra;
  forbidden->n = extra.n = 0;
  if (ac_model_reach_semantics(ac_model)) {
    ac_model_for_each_stream(ac_model, add_reached_global, &extra);
    range_normalise(&extra);
    join(forbidden, &extra);
  } else {
    join(forbidden, &global_ranges);
  }
  for (size_t i = 0; i < single_count; i++)
    if (ac_order_stream_busy(ac_model, single_ranges[i].stream))
      join(forbidden, &single_ranges[i].ranges);
  extra.n = 0;
  for (size_t i = 0; i < pending_count; i++) {
    struct ac_stream *blocker;
    enum ac_rule_id rule;
    const struct ac_alloc *a = pending[i];
    if (!ac_host_may_touch(ac_model, a, NULL, &blocker, &rule))
      range_push(&extra, a->base, a->base + a->size);
  }
  range_normalise(&extra);
  join(forbidden, &extra);
}

/* Pages to protect: those of forbidden allocations, less every page that
 * also holds memory the CPU may touch (allocations are disjoint, so the
 * allowed bytes are all managed bytes less the forbidden ones). */
static void desired_pages(struct range_list *want, bool any_busy) {
  static struct range_list forbidden, allowed, forbidden_pages, allowed_pages;
  want->n = 0;
  if (!any_busy) return;
  forbidden_bytes(&forbidden);
  if (!forbidden.n) return;
  range_subtract(&allowed, &all_managed, &forbidden);
  range_round_out(&forbidden_pages, &forbidden, (uintptr_t)page_size);
  range_round_out(&allowed_pages, &allowed, (uintptr_t)page_size);
  range_subtract(want, &forbidden_pages, &allowed_pages);
}

/* ---- transitions ---- */

static void publish(void) {
  __atomic_add_fetch(&published_seq, 1, __ATOMIC_RELEASE); /* odd: being written */
  published_overflow = protected_now.n > PUBLISHED_MAX;
  published_count = published_overflow ? 0 : protected_now.n;
  if (published_count) memcpy(published, protected_now.r, published_count * sizeof published[0]);
  __atomic_add_fetch(&published_seq, 1, __ATOMIC_RELEASE);
}

/* What is really protected now: protected_now less the pages the handler
 * lifted, or nothing (after lifting everything) when that is not known. */
static void settle_actual_protection(void) {
  static struct range_list pages, rest;
  bool unlocked = __atomic_exchange_n(&lifted_unlocked, 0, __ATOMIC_ACQ_REL);
  if (protection_uncertain || unlocked) {
    for (size_t i = 0; i < protected_now.n; i++)
      guard_mprotect(protected_now.r[i].start, protected_now.r[i].end, PROT_READ | PROT_WRITE);
    protected_now.n = 0;
  } else if (lifted_count) {
    pages.n = 0;
    for (size_t i = 0; i < lifted_count; i++)
      range_push(&pages, lifted[i], lifted[i] + (uintptr_t)page_size);
    range_normalise(&pages);
    range_subtract(&rest, &protected_now, &pages);
    struct range_list swap = protected_now;
    protected_now = rest;
    rest = swap;
  }
  lifted_count = 0;
  protection_uncertain = false;
}

static void install_handler_once(void);

/* Makes the protected pages exactly wanted_now. */
static void apply_wanted(void) {
  static struct range_list change;
  range_subtract(&change, &protected_now, &wanted_now);
  for (size_t i = 0; i < change.n; i++)
    guard_mprotect(change.r[i].start, change.r[i].end, PROT_READ | PROT_WRITE);
  range_subtract(&change, &wanted_now, &protected_now);
  for (size_t i = 0; i < change.n; i++)
    guard_mprotect(change.r[i].start, change.r[i].end, PROT_NONE);
  protected_now.n = 0;
  range_append_list(&protected_now, &wanted_now);
  publish();
  if (protected_now.n > stats.largest) stats.largest = protected_now.n;
}

static bool nothing_to_do(uint64_t generation, uint64_t layout) {
  if (protection_uncertain || __atomic_load_n(&lifted_unlocked, __ATOMIC_ACQUIRE)) return false;
  if (generation != seen_generation) return false;
  /* Only the layout moved while nothing is busy and nothing protected: the
   * classes are regrouped once something is busy again (a program
   * allocating 10,000 times between synchronisations regroups once). */
  return layout == seen_layout || (!seen_any_busy && protected_now.n == 0 && lifted_count == 0);
}

void ac_guard_refresh_locked(void) {
  AC_ASSERT_MODEL_HELD();
  if (!enabled) return;
  uint64_t generation = ac_order_generation(ac_model), layout = ac_model_layout(ac_model);
  if (nothing_to_do(generation, layout)) return;
  double started = now_seconds();
  stats.refreshes++;
  bool any_busy = ac_order_any_busy(ac_model, NULL) != NULL;
  if (any_busy && (layout != classes_layout || pending_count)) {
    rebuild_classes();
    classes_layout = layout;
  }
  seen_any_busy = any_busy;
  seen_generation = generation;
  seen_layout = layout;
  desired_pages(&wanted_now, any_busy);
  if (wanted_now.n) install_handler_once();
  settle_actual_protection();
  apply_wanted();
  stats.seconds += now_seconds() - started;
}

/* Before memory goes back to the driver: it leaves the classes, and no
 * protection outlives it into memory the driver may hand out again. */
void ac_guard_retire_locked(struct ac_alloc *a) {
  AC_ASSERT_MODEL_HELD();
  ac_model_retire_alloc(ac_model, a);
  ac_guard_refresh_locked();
}

/* ---- the handler's side ---- */

/* Whether [start, end) meets a published protected range, without the lock
 * (async-signal-safe). With more ranges than were published, maybe. */
static bool published_overlaps(uintptr_t start, uintptr_t end, bool *overflow) {
  unsigned seq;
  bool hit;
  do {
    seq = __atomic_load_n(&published_seq, __ATOMIC_ACQUIRE);
    *overflow = published_overflow;
    size_t lo = 0, hi = published_count; /* sorted: the first range ending after start */
    while (lo < hi) {
      size_t mid = (lo + hi) / 2;
      if (published[mid].end <= start)
        lo = mid + 1;
      else
        hi = mid;
    }
    hit = lo < published_count && published[lo].start < end;
  } while ((seq & 1) || seq != __atomic_load_n(&published_seq, __ATOMIC_ACQUIRE));
  return hit;
}

static bool page_lifted(uintptr_t page) {
  for (size_t i = 0; i < lifted_count; i++)
    if (lifted[i] == page) return true;
  return false;
}

static void lift_page(uintptr_t addr) {
  uintptr_t page = page_floor(addr);
  mprotect((void *)page, (size_t)page_size, PROT_READ | PROT_WRITE);
  if (lifted_count < LIFTED_MAX)
    lifted[lifted_count++] = page;
  else
    protection_uncertain = true; /* too many to track: the next refresh redoes it all */
}

bool ac_pc_in_driver(uintptr_t pc) {
  return pc >= driver_lo && pc < driver_hi;
}

/* The fault of a thread interrupted inside the shim with the model lock held
 * (a signal handler of the program touched guarded memory): the lock cannot
 * be taken and the model may be half-changed, so the page is lifted unjudged
 * and the next transition protects again from scratch. */
static enum ac_guard_claim lift_without_lock(uintptr_t a) {
  static __thread uintptr_t last;
  uintptr_t page = page_floor(a);
  if (last == page) { /* lifted already and faulted again: not ours */
    last = 0;
    return AC_GUARD_NOT_OURS;
  }
  last = page;
  syscall(SYS_mprotect, page, page_size, PROT_READ | PROT_WRITE);
  __atomic_store_n(&lifted_unlocked, 1, __ATOMIC_RELEASE);
  __atomic_add_fetch(&stats.unjudged, 1, __ATOMIC_RELAXED);
  return AC_GUARD_HANDLED;
}

/* Judges the access at a against the model (lock held); a finding goes to the
 * reporter's ring. */
static void judge_fault(uintptr_t a, struct ac_alloc *alloc, bool is_write, void *ucontext) {
  struct ac_host_access access = {{a, 0, is_write ? AC_ACCESS_WRITE : AC_ACCESS_READ, "page fault"},
                                  ac_thread_id(),
                                  ac_current_host_function_stream()};
  static __thread struct ac_finding f; /* large: not on a signal stack */
  if (!ac_judge_host_access(ac_model, alloc, &access, &f)) return;
  ac_stack_capture_from_signal(ucontext, &f.stack);
  struct ac_finding *slot = ac_guard_ring_slot_locked();
  if (!slot) return;
  *slot = f;
  ac_guard_ring_commit_locked();
}

enum ac_guard_claim ac_guard_on_fault(void *addr, bool is_write, uintptr_t pc, void *ucontext) {
  if (!enabled) return AC_GUARD_NOT_OURS;
  uintptr_t a = (uintptr_t)addr;
  if (ac_model_held) return lift_without_lock(a);
  bool overflow;
  bool guarded = published_overlaps(a, a + 1, &overflow);
  int saved_errno = errno;
  ac_model_enter();
  struct ac_alloc *alloc = ac_model_find_alloc(ac_model, a);
  bool managed = alloc && ac_alloc_is_managed(alloc);
  enum ac_guard_claim claim = AC_GUARD_HANDLED;
  if (!guarded && !overflow && !managed) {
    claim = AC_GUARD_NOT_OURS;
  } else if (!range_contains(&protected_now, a) || page_lifted(page_floor(a))) {
    /* Not protected as far as the guard knows: a transition on another
     * thread lifted it between the fault and now, or a protection made for
     * memory freed since outlived it. Managed memory is always the CPU's to
     * map: make sure the page is, and let the access run again. */
    if (managed) mprotect((void *)page_floor(a), (size_t)page_size, PROT_READ | PROT_WRITE);
    claim = managed ? AC_GUARD_RETRY : AC_GUARD_NOT_OURS;
  } else {
    in_guard = true;
    stats.faults++;
    double started = ac_opts.verbose ? now_seconds() : 0;
    if (ac_pc_in_driver(pc))
      stats.driver_faults++; /* the driver's own access, e.g. inside a synchronous 2D copy */
    else if (managed && !alloc->retiring)
      judge_fault(a, alloc, is_write, ucontext);
    if (range_contains(&protected_now, a)) lift_page(a);
    in_guard = false;
    if (ac_opts.verbose) stats.handler_seconds += now_seconds() - started;
  }
  ac_model_leave();
  errno = saved_errno;
  return claim;
}

/* ---- CPU accesses through system calls ----
 * The kernel does not raise SIGSEGV for a protected buffer handed to read(2)
 * or write(2): it fails with EFAULT. Protection is exact, so only a buggy
 * program hands the kernel a protected buffer; the calls the shim sees are
 * judged and the buffer lifted before they run, so they still succeed. */
void ac_guard_check_buffer(const char *via, const void *buf, size_t len, bool cpu_writes) {
  if (!enabled || !len || in_guard || ac_model_held) return;
  uintptr_t start = (uintptr_t)buf, end = start + len;
  bool overflow;
  /* Without the lock first: the shim's own I/O, and every correct program's,
   * never meets protected memory, and must not wait for the model. */
  if (!published_overlaps(start, end, &overflow) && !overflow) return;
  struct ac_finding f;
  bool found = false;
  ac_model_enter();
  in_guard = true;
  for (uintptr_t page = page_floor(start); page < end; page += (uintptr_t)page_size) {
    if (!range_contains(&protected_now, page) || page_lifted(page)) continue;
    uintptr_t probe = page < start ? start : page;
    struct ac_alloc *alloc = ac_model_find_alloc(ac_model, probe);
    if (!found && alloc && ac_alloc_is_managed(alloc)) {
      struct ac_host_access access = {
          {probe, len, cpu_writes ? AC_ACCESS_WRITE : AC_ACCESS_READ, via},
          ac_thread_id(),
          ac_current_host_function_stream()};
      found = ac_judge_host_access(ac_model, alloc, &access, &f);
    }
    lift_page(page);
  }
  in_guard = false;
  ac_model_leave();
  if (found) {
    ac_stack_capture(&f.stack);
    ac_emit_finding(&f, AC_DRIVER_RETURNED, CUDA_SUCCESS);
  }
}

/* ---- start-up, statistics, fork ---- */

static void install_handler_once(void) {
  static bool installed;
  if (installed) return;
  installed = true;
  ac_guard_reporter_start();
  ac_signal_install_guard_handler();
}

void ac_guard_print_stats(void) {
  if (!enabled || !ac_opts.verbose) return;
  ac_model_enter();
  ac_log("page guard: %lu refreshes (%lu rebuilds), %lu mprotect calls, %lu faults (%lu by the "
         "driver, %lu unjudged), at most %lu ranges protected, %.3f ms refreshing, %.3f ms "
         "judging faults",
         stats.refreshes, stats.rebuilds, stats.mprotects, stats.faults, stats.driver_faults,
         stats.unjudged, stats.largest, stats.seconds * 1e3, stats.handler_seconds * 1e3);
  ac_model_leave();
}

static int find_driver_code(struct dl_phdr_info *info, size_t size, void *entry) {
  (void)size;
  uintptr_t lo = UINTPTR_MAX, hi = 0, e = (uintptr_t)entry;
  for (int i = 0; i < info->dlpi_phnum; i++) {
    if (info->dlpi_phdr[i].p_type != PT_LOAD || !(info->dlpi_phdr[i].p_flags & PF_X)) continue;
    uintptr_t start = info->dlpi_addr + info->dlpi_phdr[i].p_vaddr;
    uintptr_t end = start + info->dlpi_phdr[i].p_memsz;
    if (start < lo) lo = start;
    if (end > hi) hi = end;
  }
  if (e < lo || e >= hi) return 0;
  driver_lo = lo, driver_hi = hi;
  return 1;
}

void ac_guard_start(void) {
  page_size = sysconf(_SC_PAGESIZE);
  enabled = ac_opts.guard_pages;
  void *entry = ac_driver_entry[AC_ID_cuInit];
  if (entry) dl_iterate_phdr(find_driver_code, entry);
}

/* In a forked child: nothing is protected any more that the child could use
 * (UVM unmaps managed memory there), and the reporter thread did not survive. */
void ac_guard_after_fork_child(void) {
  protected_now.n = wanted_now.n = 0;
  lifted_count = 0;
  seen_generation = seen_layout = classes_layout = UINT64_MAX;
  published_count = 0;
  ac_guard_reporter_after_fork_child();
}
