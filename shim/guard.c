/* guard.c - the page guard: CPU accesses to managed memory the CPU may not
 * touch now are made visible by protecting that memory (PROT_NONE); the
 * SIGSEGV of an access is judged (AC201/AC202) and the access let through.
 *
 * Protection follows the ordering model and changes only when the model's
 * generation moves (a stream turned busy or idle): the allocations are
 * grouped, once per change of layout, into page ranges per class - globally
 * attached, single-attached to stream S, pending an attach - so a transition
 * costs a merge of a few coalesced range lists and the mprotect calls for what
 * changed, not a walk over every allocation.
 *
 * The signal handler runs on the faulting thread, which is executing the
 * program's own code and so never holds the model lock: it takes the lock,
 * judges against the model as it is at that instant, records a finding into
 * pre-allocated storage, lifts the protection of that page until the next
 * transition and returns, so the access completes. Formatting and writing the
 * report happen on a reporter thread woken through a pipe. A fault outside
 * the guarded ranges goes to the program's own handler (interceptors_signal.c).
 * Small allocations share pages: a fault on a guarded page in memory the CPU
 * may touch is never a finding; the page is lifted.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "rules_host.h"
#include "shim.h"

struct range {
  uintptr_t start, end; /* page-aligned, [start, end) */
};

struct range_list {
  size_t n, cap;
  struct range *r;
};

/* ---- range lists ---- */

static bool range_push(struct range_list *l, uintptr_t start, uintptr_t end) {
  if (l->n == l->cap) {
    size_t cap = l->cap ? l->cap * 2 : 16;
    struct range *grown = realloc(l->r, cap * sizeof *grown);
    if (!grown) return false;
    l->r = grown;
    l->cap = cap;
  }
  l->r[l->n++] = (struct range){start, end};
  return true;
}

static int by_start(const void *a, const void *b) {
  const struct range *x = a, *y = b;
  return (x->start > y->start) - (x->start < y->start);
}

/* Sorts and merges overlapping or touching ranges. */
static void range_normalise(struct range_list *l) {
  if (l->n < 2) return;
  qsort(l->r, l->n, sizeof l->r[0], by_start);
  size_t out = 0;
  for (size_t i = 1; i < l->n; i++) {
    if (l->r[i].start <= l->r[out].end) {
      if (l->r[i].end > l->r[out].end) l->r[out].end = l->r[i].end;
    } else {
      l->r[++out] = l->r[i];
    }
  }
  l->n = out + 1;
}

static bool range_append_list(struct range_list *dst, const struct range_list *src) {
  for (size_t i = 0; i < src->n; i++)
    if (!range_push(dst, src->r[i].start, src->r[i].end)) return false;
  return true;
}

static bool range_contains(const struct range_list *l, uintptr_t addr) {
  size_t lo = 0, hi = l->n;
  while (lo < hi) {
    size_t mid = (lo + hi) / 2;
    if (addr < l->r[mid].start)
      hi = mid;
    else if (addr >= l->r[mid].end)
      lo = mid + 1;
    else
      return true;
  }
  return false;
}

static bool range_has_exact(const struct range_list *l, struct range r) {
  for (size_t lo = 0, hi = l->n; lo < hi;) {
    size_t mid = (lo + hi) / 2;
    if (l->r[mid].start == r.start) return l->r[mid].end == r.end;
    if (l->r[mid].start < r.start)
      lo = mid + 1;
    else
      hi = mid;
  }
  return false;
}

/* ---- state (all under ac_model_lock) ---- */

static long page_size;
static bool enabled;
static uint64_t seen_generation = UINT64_MAX, seen_layout = UINT64_MAX;
static bool seen_any_busy;

/* The allocations by class, rebuilt when the layout changes. */
struct stream_ranges {
  const struct ac_stream *stream;
  struct range_list ranges;
};
static struct range_list global_ranges;
static struct stream_ranges *single_ranges;
static size_t single_count, single_cap;
static struct ac_alloc **pending;
static size_t pending_count, pending_cap;

static struct range_list protected_now; /* what is PROT_NONE, less lifted pages */
static struct range_list wanted_now;    /* what the CPU may not touch now */
/* Faults on ranges no longer wanted since the last refresh: past a few, the CPU
 * is working through that memory, and lifting it whole is cheaper. */
#define STALE_FAULT_LIMIT 32
/* Ranges up to this size are lifted at once when no longer wanted. */
#define LAZY_LIFT_MIN ((uintptr_t)256 << 10)
static unsigned stale_faults;
/* Set when pages were unprotected without being tracked (too many lifted
 * pages, memory freed): the next refresh starts from nothing protected. */
static bool protection_uncertain;

/* What the guard cost, for --verbose. */
static struct {
  unsigned long refreshes, rebuilds, mprotects, faults, largest;
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

/* Pages the handler lifted, for the next refresh to protect again. */
#define LIFTED_MAX 1024
static uintptr_t lifted[LIFTED_MAX];
static size_t lifted_count;

/* Findings made in the handler, for the reporter thread. */
#define PENDING_FINDINGS 64
static struct ac_finding handler_findings[PENDING_FINDINGS];
static size_t handler_findings_count;
static unsigned long handler_findings_dropped;
static int wake_pipe[2] = {-1, -1};

/* Set while this thread runs the fault handler: libunwind checks memory with
 * read(2) on a pipe, which must not come back into the guard (and its lock). */
static __thread bool in_fault_handler;

static uintptr_t page_floor(uintptr_t a) {
  return a & ~(uintptr_t)(page_size - 1);
}
static uintptr_t page_ceil(uintptr_t a) {
  return page_floor(a + (uintptr_t)page_size - 1);
}

static struct range_list *ranges_of_stream(const struct ac_stream *s) {
  for (size_t i = 0; i < single_count; i++)
    if (single_ranges[i].stream == s) return &single_ranges[i].ranges;
  if (single_count == single_cap) {
    size_t cap = single_cap ? single_cap * 2 : 8;
    struct stream_ranges *grown = realloc(single_ranges, cap * sizeof *grown);
    if (!grown) return NULL;
    single_ranges = grown;
    single_cap = cap;
  }
  single_ranges[single_count] = (struct stream_ranges){s, {0, 0, NULL}};
  return &single_ranges[single_count++].ranges;
}

static void classify(struct ac_alloc *a, void *ctx) {
  (void)ctx;
  if (!ac_alloc_is_managed(a) || a->size == 0) return;
  enum ac_assoc assoc[2];
  struct ac_stream *stream[2];
  uintptr_t start = page_floor(a->base), end = page_ceil(a->base + a->size);
  if (ac_order_binding_assocs(ac_model, a, assoc, stream) == 2) {
    if (pending_count == pending_cap) {
      size_t cap = pending_cap ? pending_cap * 2 : 16;
      struct ac_alloc **grown = realloc(pending, cap * sizeof *grown);
      if (!grown) return;
      pending = grown;
      pending_cap = cap;
    }
    pending[pending_count++] = a;
  } else if (assoc[0] == AC_ASSOC_GLOBAL) {
    range_push(&global_ranges, start, end);
  } else if (assoc[0] == AC_ASSOC_SINGLE && stream[0]) {
    struct range_list *l = ranges_of_stream(stream[0]);
    if (l) range_push(l, start, end);
  }
}

static void rebuild_classes(void) {
  global_ranges.n = 0;
  for (size_t i = 0; i < single_count; i++)
    free(single_ranges[i].ranges.r);
  single_count = 0;
  pending_count = 0;
  ac_model_for_each_alloc(ac_model, classify, NULL);
  range_normalise(&global_ranges);
  for (size_t i = 0; i < single_count; i++)
    range_normalise(&single_ranges[i].ranges);
}

/* Under `device` semantics, globally attached memory is off-limits only while
 * work that was given it runs: the busy streams' reach. */
static void add_reached_global(struct ac_stream *s, void *ctx) {
  struct range_list *want = ctx;
  if (!s->reach_count || !ac_order_stream_busy(ac_model, s)) return;
  for (size_t i = 0; i < s->reach_count; i++) {
    struct ac_alloc *a = ac_model_find_alloc_at(ac_model, s->reach[i].base);
    enum ac_assoc assoc[2];
    struct ac_stream *stream[2];
    if (!a || a->serial != s->reach[i].serial) continue;
    int n = ac_order_binding_assocs(ac_model, a, assoc, stream);
    if (assoc[0] == AC_ASSOC_GLOBAL || (n == 2 && assoc[1] == AC_ASSOC_GLOBAL))
      range_push(want, page_floor(a->base), page_ceil(a->base + a->size));
  }
}

static void desired_ranges(struct range_list *want, bool any_busy) {
  want->n = 0;
  if (!any_busy) return;
  if (ac_model_reach_semantics(ac_model))
    ac_model_for_each_stream(ac_model, add_reached_global, want);
  else
    range_append_list(want, &global_ranges);
  for (size_t i = 0; i < single_count; i++)
    if (ac_order_stream_busy(ac_model, single_ranges[i].stream))
      range_append_list(want, &single_ranges[i].ranges);
  for (size_t i = 0; i < pending_count; i++) {
    struct ac_stream *blocker;
    enum ac_rule_id rule;
    const struct ac_alloc *a = pending[i];
    if (!ac_host_may_touch(ac_model, a, NULL, &blocker, &rule))
      range_push(want, page_floor(a->base), page_ceil(a->base + a->size));
  }
  range_normalise(want);
}

static void publish(void) {
  __atomic_add_fetch(&published_seq, 1, __ATOMIC_RELEASE); /* odd: being written */
  published_overflow = protected_now.n > PUBLISHED_MAX;
  published_count = published_overflow ? 0 : protected_now.n;
  memcpy(published, protected_now.r, published_count * sizeof published[0]);
  __atomic_add_fetch(&published_seq, 1, __ATOMIC_RELEASE);
}

/* The lifted pages inside r: protected again (still wanted) or forgotten. */
static void settle_lifted_in(struct range r, bool protect_again) {
  size_t out = 0;
  for (size_t j = 0; j < lifted_count; j++) {
    if (lifted[j] < r.start || lifted[j] >= r.end)
      lifted[out++] = lifted[j];
    else if (protect_again)
      guard_mprotect(lifted[j], lifted[j] + (uintptr_t)page_size, PROT_NONE);
  }
  lifted_count = out;
}

static bool overlaps(const struct range_list *l, struct range r) {
  for (size_t i = 0; i < l->n; i++)
    if (l->r[i].start < r.end && r.start < l->r[i].end) return true;
  return false;
}

/* Unprotects every range that is protected but no longer wanted. */
static void lift_stale_ranges(void) {
  size_t out = 0;
  for (size_t i = 0; i < protected_now.n; i++) {
    struct range r = protected_now.r[i];
    if (range_has_exact(&wanted_now, r)) {
      protected_now.r[out++] = r;
      continue;
    }
    guard_mprotect(r.start, r.end, PROT_READ | PROT_WRITE);
    settle_lifted_in(r, false);
  }
  protected_now.n = out;
  stale_faults = 0;
}

static void install_handler_once(void);

void ac_guard_refresh_locked(void) {
  if (!enabled) return;
  uint64_t generation = ac_order_generation(ac_model), layout = ac_model_layout(ac_model);
  /* Nothing moved; or only the layout did while nothing is busy (then nothing
   * is wanted, and the regrouping waits until something is). */
  if (generation == seen_generation && (layout == seen_layout || !seen_any_busy)) return;
  double started = now_seconds();
  stats.refreshes++;
  /* With no stream busy the CPU may touch everything: the classes are needed
   * only once something is busy again (so a program allocating 10,000 times
   * between synchronisations does not regroup 10,000 times). */
  bool any_busy = ac_order_any_busy(ac_model, NULL) != NULL;
  seen_any_busy = any_busy;
  if (any_busy && (layout != seen_layout || pending_count)) {
    rebuild_classes();
    stats.rebuilds++;
    seen_layout = layout;
  }
  seen_generation = generation;

  desired_ranges(&wanted_now, any_busy);
  if (wanted_now.n) install_handler_once();
  if (protection_uncertain) {
    for (size_t i = 0; i < protected_now.n; i++)
      guard_mprotect(protected_now.r[i].start, protected_now.r[i].end, PROT_READ | PROT_WRITE);
    protected_now.n = 0;
    lifted_count = 0;
    protection_uncertain = false;
  }
  /* Protection is lifted lazily: a range no longer wanted stays protected
   * until the CPU touches it (the fault lifts one page, the access being
   * legal), so a launch/synchronise loop costs a page or two per transition
   * instead of two mprotect calls over every allocation. */
  static struct range_list next;
  next.n = 0;
  for (size_t i = 0; i < protected_now.n; i++) {
    struct range r = protected_now.r[i];
    if (range_has_exact(&wanted_now, r)) {
      settle_lifted_in(r, true); /* wanted again: protect what was touched */
      range_push(&next, r.start, r.end);
    } else if (overlaps(&wanted_now, r) || r.end - r.start <= LAZY_LIFT_MIN) {
      /* Reshaped, or small enough that one call now is cheaper than the
       * faults of touching it page by page: lift it whole. */
      guard_mprotect(r.start, r.end, PROT_READ | PROT_WRITE);
      settle_lifted_in(r, false);
    } else {
      range_push(&next, r.start, r.end); /* stale: lifted when touched */
    }
  }
  for (size_t i = 0; i < wanted_now.n; i++)
    if (!range_has_exact(&protected_now, wanted_now.r[i])) {
      guard_mprotect(wanted_now.r[i].start, wanted_now.r[i].end, PROT_NONE);
      range_push(&next, wanted_now.r[i].start, wanted_now.r[i].end);
    }
  qsort(next.r, next.n, sizeof next.r[0], by_start);
  struct range_list swap = protected_now;
  protected_now = next;
  next = swap;
  stale_faults = 0;
  publish();
  if (protected_now.n > stats.largest) stats.largest = protected_now.n;
  stats.seconds += now_seconds() - started;
}

/* Before memory goes back to the driver: it must not stay protected. */
void ac_guard_forget_range_locked(uintptr_t base, size_t size) {
  if (!enabled || !protected_now.n) return;
  uintptr_t start = page_floor(base), end = page_ceil(base + size);
  for (size_t i = 0; i < protected_now.n; i++)
    if (protected_now.r[i].start < end && start < protected_now.r[i].end) {
      mprotect((void *)start, end - start, PROT_READ | PROT_WRITE);
      protection_uncertain = true; /* the rest is protected again by the next refresh */
      break;
    }
}

/* ---- the handler's side ---- */

/* Whether addr is in a published protected range (async-signal-safe). */
static bool published_contains(uintptr_t addr, bool *overflow) {
  unsigned seq;
  bool hit;
  do {
    seq = __atomic_load_n(&published_seq, __ATOMIC_ACQUIRE);
    hit = false;
    *overflow = published_overflow;
    for (size_t i = 0; i < published_count && !hit; i++)
      hit = addr >= published[i].start && addr < published[i].end;
  } while ((seq & 1) || seq != __atomic_load_n(&published_seq, __ATOMIC_ACQUIRE));
  return hit;
}

static void lift_page(uintptr_t addr) {
  uintptr_t page = page_floor(addr);
  mprotect((void *)page, (size_t)page_size, PROT_READ | PROT_WRITE);
  if (lifted_count < LIFTED_MAX)
    lifted[lifted_count++] = page;
  else
    protection_uncertain = true; /* too many to track: the next refresh redoes it all */
}

static void wake_reporter(void) {
  char byte = 1;
  if (wake_pipe[1] >= 0 && write(wake_pipe[1], &byte, 1) < 0) { /* a wake-up is pending */
  }
}

enum ac_guard_claim ac_guard_on_fault(void *addr, bool is_write, void *ucontext) {
  if (!enabled) return AC_GUARD_NOT_OURS;
  uintptr_t a = (uintptr_t)addr;
  bool overflow;
  bool guarded = published_contains(a, &overflow);
  int saved_errno = errno;
  ac_model_enter();
  struct ac_alloc *alloc = ac_model_find_alloc(ac_model, a);
  if (!guarded && !overflow) {
    /* Not protected as far as the published ranges say. If the page is in
     * managed memory, a refresh on another thread lifted it between the fault
     * and now: retry the access. Otherwise it is the program's fault. */
    bool ours = alloc && ac_alloc_is_managed(alloc);
    ac_model_leave();
    errno = saved_errno;
    return ours ? AC_GUARD_RETRY : AC_GUARD_NOT_OURS;
  }
  if (!range_contains(&protected_now, a)) {
    ac_model_leave();
    errno = saved_errno;
    return alloc && ac_alloc_is_managed(alloc) ? AC_GUARD_RETRY : AC_GUARD_NOT_OURS;
  }
  in_fault_handler = true;
  stats.faults++;
  double handler_started = ac_opts.verbose ? now_seconds() : 0;
  bool found = false;
  if (alloc && ac_alloc_is_managed(alloc) && handler_findings_count < PENDING_FINDINGS) {
    struct ac_host_access access = {
        {a, 0, is_write ? AC_ACCESS_WRITE : AC_ACCESS_READ, "page fault"},
        ac_thread_id(),
        ac_current_host_function_stream()};
    struct ac_finding *f = &handler_findings[handler_findings_count];
    if (ac_judge_host_access(ac_model, alloc, &access, f)) {
      ac_stack_capture_from_signal(ucontext, &f->stack);
      handler_findings_count++;
      found = true;
    }
  } else if (alloc && ac_alloc_is_managed(alloc)) {
    handler_findings_dropped++;
  }
  if (!range_contains(&wanted_now, a) && ++stale_faults > STALE_FAULT_LIMIT) {
    lift_stale_ranges();
    publish();
  }
  if (range_contains(&protected_now, a)) lift_page(a);
  in_fault_handler = false;
  if (ac_opts.verbose) stats.handler_seconds += now_seconds() - handler_started;
  ac_model_leave();
  if (found) wake_reporter();
  errno = saved_errno;
  return AC_GUARD_HANDLED;
}

/* ---- CPU accesses through system calls ----
 * The kernel does not raise SIGSEGV for a protected buffer handed to read(2)
 * or write(2): it fails with EFAULT, which the program would never have seen.
 * So buffers are checked and lifted before such calls. */
void ac_guard_check_buffer(const char *via, const void *buf, size_t len, bool cpu_writes) {
  if (!enabled || !len || in_fault_handler || !__atomic_load_n(&published_count, __ATOMIC_RELAXED))
    return;
  uintptr_t start = (uintptr_t)buf, end = start + len;
  struct ac_finding f;
  bool found = false;
  ac_model_enter();
  for (uintptr_t page = page_floor(start); page < end; page += (uintptr_t)page_size) {
    if (!range_contains(&protected_now, page)) continue;
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
  ac_model_leave();
  if (found) {
    ac_stack_capture(&f.stack);
    ac_emit_finding(&f, AC_DRIVER_RETURNED, CUDA_SUCCESS);
  }
}

/* ---- reporting what the handler found ---- */

/* Held while a batch is reported, so the exit-time drain waits for a batch the
 * reporter thread has taken but not yet written. */
static pthread_mutex_t drain_lock = PTHREAD_MUTEX_INITIALIZER;

void ac_guard_drain(void) {
  static struct ac_finding batch[PENDING_FINDINGS];
  size_t n;
  unsigned long dropped;
  pthread_mutex_lock(&drain_lock);
  ac_model_enter();
  n = handler_findings_count;
  memcpy(batch, handler_findings, n * sizeof batch[0]);
  handler_findings_count = 0;
  dropped = handler_findings_dropped;
  handler_findings_dropped = 0;
  ac_model_leave();
  for (size_t i = 0; i < n; i++)
    ac_emit_finding(&batch[i], AC_DRIVER_RETURNED, CUDA_SUCCESS);
  if (dropped)
    ac_log("%lu CPU accesses were not judged: too many at once for the signal handler", dropped);
  pthread_mutex_unlock(&drain_lock);
}

static void *reporter(void *unused) {
  (void)unused;
  char buf[64];
  for (;;) {
    ssize_t n = read(wake_pipe[0], buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return NULL;
    ac_guard_drain();
  }
}

static void start_reporter(void) {
  if (pipe2(wake_pipe, O_CLOEXEC | O_NONBLOCK) != 0) return;
  int flags = fcntl(wake_pipe[0], F_GETFL);
  fcntl(wake_pipe[0], F_SETFL, flags & ~O_NONBLOCK); /* the reporter blocks; the handler never */
  pthread_t tid;
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old); /* the program's signals are not for it */
  if (pthread_create(&tid, &attr, reporter, NULL) != 0) {
    close(wake_pipe[0]);
    close(wake_pipe[1]);
    wake_pipe[0] = wake_pipe[1] = -1;
  }
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  pthread_attr_destroy(&attr);
}

static void install_handler_once(void) {
  static bool installed;
  if (installed) return;
  installed = true;
  start_reporter();
  ac_signal_install_guard_handler();
}

void ac_guard_print_stats(void) {
  if (!enabled || !ac_opts.verbose) return;
  ac_model_enter();
  ac_log("page guard: %lu refreshes (%lu rebuilds), %lu mprotect calls, %lu faults, at most %lu "
         "ranges protected, %.3f ms refreshing, %.3f ms judging faults",
         stats.refreshes, stats.rebuilds, stats.mprotects, stats.faults, stats.largest,
         stats.seconds * 1e3, stats.handler_seconds * 1e3);
  ac_model_leave();
}

void ac_guard_start(void) {
  page_size = sysconf(_SC_PAGESIZE);
  enabled = ac_opts.guard_pages;
}

/* In a forked child: nothing is protected any more that the child could use,
 * and the reporter thread did not survive. */
void ac_guard_after_fork_child(void) {
  protected_now.n = 0;
  lifted_count = 0;
  handler_findings_count = 0;
  seen_generation = seen_layout = UINT64_MAX;
  published_count = 0;
  if (wake_pipe[0] >= 0) {
    close(wake_pipe[0]);
    close(wake_pipe[1]);
    wake_pipe[0] = wake_pipe[1] = -1;
  }
  if (enabled) start_reporter();
}
