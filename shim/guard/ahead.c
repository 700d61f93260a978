/* ahead.c - under mprotect, managed memory the guard closed is moved to the
 * GPU just before the work that reaches it.
 *
 * The GPU's first write to managed memory whose CPU mapping is not writable
 * takes the driver's slow path (docs/driver-facts.md): on an H200, a kernel
 * writing a fresh 4 MiB allocation the guard had closed ran in 4.9 ms
 * instead of 0.77 ms, and a set or a copy into it alike, whether its pages
 * were never touched or last touched by the CPU. Pages the GPU holds already
 * are not slowed, and a prefetch to the device takes the fast path whatever
 * the protection (0.11 ms, the prefetch included). A framework that makes a
 * fresh allocation for every tensor while its streams work has each one
 * closed at birth, and paid the slow path at nearly every kernel.
 *
 * So before a launch, a graph launch, an asynchronous copy or a set is
 * forwarded, what it reaches - a kernel's pointer arguments (a graph's
 * kernel nodes' too), the destination of a copy or a set (a graph's copy
 * and set nodes' too) - that lies on pages the guard closed is prefetched
 * to the current
 * device on the work's own stream: in stream order just before the work,
 * which would have waited for its own faults instead. A kernel argument
 * moves its whole allocation (a kernel may touch any of it); a copy or set
 * its own bytes. Once moved, an allocation is not moved again until the
 * guard opens some pages (ac_guard.opened moves): until then the CPU has not
 * touched it, so it is still where the prefetch put it.
 *
 * After that, only what the CPU holds is moved. Pages the GPU holds already
 * are not slowed, and a prefetch is not free: a CuPy loop over a memory pool
 * and a Numba pipeline, whose arrays the guard closes at each launch and
 * opens again at each synchronisation, ran 2x and 3.4x with a prefetch of
 * each argument every step, at the bare speed with none. The kernel tells
 * which pages the CPU maps (mincore: a managed page is mapped on the CPU
 * only while the CPU holds it, closed or not; docs/driver-facts.md), so
 * memory moved whole once is moved again only where the CPU mapped at least
 * AHEAD_HELD_MIN of it since, and only from its first such page to its last.
 * Fewer are left to the GPU's faults: a prefetch that moves anything costs
 * the stream 70-170 us, the slow path about 70 us per 64 KiB the driver
 * moves (the Numba pipeline, whose host writes one element an array a step,
 * still ran 3.3x prefetching those 64 KiB). A fresh allocation, mapped
 * nowhere yet, is moved whole the first time: its first GPU write is the
 * slow one.
 *
 * Asking is not free either: mincore looks a page at a time through the
 * driver's file mapping (2.5-6 us a MiB on an H200's host), and the CuPy
 * loop asked five times a step, for nothing - its host never touched the
 * arrays. The CPU maps a managed page only by faulting on it (the driver
 * maps on demand; a fault on a closed page is first the guard's, then,
 * opened, the driver's), and the kernel counts every fault of the process
 * (getrusage, one system call). So the guard notes the count when it
 * looks, and a busy period in which it went up is "faulty"; memory moved
 * or found not held in busy period m is asked about again only when a busy
 * period after m was faulty. A framework's steady loop takes almost no faults (CuPy,
 * Numba, PyTorch: under one a step, perf stat on the H200). The program's
 * own prefetch of memory to the CPU maps without a fault the guard could
 * count: that memory is moved whole again (ac_guard_ahead_placed_locked).
 * Where the count is wrong (a fault left uncounted, or one counted
 * against the wrong period) the memory stays where the GPU's own faults
 * take it, as without the guard's prefetch - slower, never wrong.
 *
 * Left alone: protection keys (a closing key leaves the mapping writable, and
 * the GPU never slows), memory the program gave placement advice for (the
 * prefetch would override it), a kernel argument's allocation over
 * AHEAD_WHOLE_MAX (a kernel given a large pool may touch a slice of it), work
 * while a stream capture is in progress (the prefetch could become a node of
 * the program's graph, or break its capture), devices whose driver protects
 * managed memory itself, and --guard-prefetch off. The driver then tells the
 * guard's prefetch as the memory's last one: cuMemRangeGetAttribute(s) of
 * LAST_PREFETCH_LOCATION and _TYPE are answered as the program's own prefetches
 * left them (ac_alloc.ahead_last, check_memory.c).
 */
#include <sys/mman.h>
#include <sys/resource.h>

#include "guard_internal.h"
#include "shim.h"

/* The largest allocation a kernel argument moves whole. */
#define AHEAD_WHOLE_MAX ((size_t)64 << 20)

bool ac_guard_ahead_armed(void) {
  return ac_opts.guard_prefetch && ac_guard_on() && ac_guard_keys_closing() < 0 &&
         !ac_guard.driver_protects && (ac_real.cuMemPrefetchAsync_v2 || ac_real.cuMemPrefetchAsync);
}

bool ac_guard_ahead_maybe(uintptr_t start, uintptr_t end) {
  if (!ac_guard_may_guard(start, end)) return false;
  uintptr_t at;
  bool overflow;
  return ac_published_find(&ac_guard.closed, start, end, NULL, NULL, &at, &overflow) >= 0 ||
         overflow;
}

/* The least the CPU must hold of memory moved before for it to be moved
 * again: below it the GPU's own faults cost less than a prefetch. */
#define AHEAD_HELD_MIN ((size_t)256 << 10)

/* Pages mincore looks at in one call: its answer is a byte a page. */
#define AHEAD_PAGES_AT_ONCE 1024

/* [*start, *end) narrowed to the pages of it the CPU maps, first to last;
 * false when it maps less than AHEAD_HELD_MIN. Where the kernel cannot tell,
 * all of it. */
static bool cpu_holds(uintptr_t *start, uintptr_t *end) {
  uintptr_t page = (uintptr_t)ac_guard.page_size;
  uintptr_t from = ac_guard_page_floor(*start), to = ac_guard_page_floor(*end - 1) + page;
  uintptr_t first = 0, last = 0;
  size_t count = 0;
  unsigned char held[AHEAD_PAGES_AT_ONCE];
  for (uintptr_t at = from; at < to; at += AHEAD_PAGES_AT_ONCE * page) {
    size_t n = (to - at) / page < AHEAD_PAGES_AT_ONCE ? (to - at) / page : AHEAD_PAGES_AT_ONCE;
    if (mincore((void *)at, n * page, held) != 0) return true;
    for (size_t i = 0; i < n; i++) {
      if (!(held[i] & 1)) continue;
      count++;
      if (!first) first = at + i * page;
      last = at + (i + 1) * page;
    }
  }
  if (count * page < AHEAD_HELD_MIN) return false;
  *start = first > *start ? first : *start;
  *end = last < *end ? last : *end;
  return true;
}

/* The mark of memory moved since pages were last opened - the busy
 * period's, as the allocation keeps it; never 0. */
static uint16_t current_mark(void) {
  return (uint16_t)(__atomic_load_n(&ac_guard.opened, __ATOMIC_RELAXED) % 65535u + 1);
}

/* The process's page faults so far, or -1. */
static long process_faults(void) {
  struct rusage use;
  if (getrusage(RUSAGE_SELF, &use) != 0) return -1;
  return use.ru_minflt + use.ru_majflt;
}

/* The count when last looked, and the last mark in which it had gone up
 * (under ac_model_lock). */
static long faults_seen = -1;
static uint16_t faulty_mark;

/* Whether the CPU may have mapped memory marked `since` (a busy period
 * before mark, the current one): a period after it was faulty. */
static bool may_be_held(uint16_t since, uint16_t mark) {
  long faults = process_faults();
  if (faults < 0 || faults != faults_seen) faulty_mark = mark; /* always, the first time */
  faults_seen = faults;
  /* Periods back from mark, modulo the marks' 65535. */
  unsigned back_since = (mark + 65535u - since) % 65535u;
  unsigned back_faulty = (mark + 65535u - faulty_mark) % 65535u;
  return back_faulty < back_since;
}

void ac_guard_ahead_note_locked(struct ac_guard_ahead *b, struct ac_alloc *a, uintptr_t start,
                                uintptr_t end) {
  AC_ASSERT_MODEL_HELD();
  if (!ac_alloc_is_managed(a) || a->retiring || a->advised || b->n == AC_GUARD_AHEAD_MAX) return;
  uintptr_t a_end = a->base + a->size;
  bool whole = start == 0 && end == 0;
  if (whole) {
    if (a->size > AHEAD_WHOLE_MAX) return;
    start = a->base, end = a_end;
  } else {
    start = start > a->base ? start : a->base;
    end = end < a_end ? end : a_end;
    if (start >= end) return;
    whole = start == a->base && end == a_end;
  }
  uint16_t mark = current_mark();
  if (a->ahead_mark == mark || !range_meets(&ac_guard.protected_now, start, end)) return;
  if (a->ahead_mark != 0) {
    bool unasked = !may_be_held(a->ahead_mark, mark);
    if (unasked || !cpu_holds(&start, &end)) {
      /* Moved whole before, and the CPU has mapped too little of it since. */
      if (whole) a->ahead_mark = mark;
      if (ac_opts.verbose) {
        __atomic_add_fetch(&ac_guard.stats.ahead_held, 1, __ATOMIC_RELAXED);
        if (unasked) __atomic_add_fetch(&ac_guard.stats.ahead_unasked, 1, __ATOMIC_RELAXED);
      }
      return;
    }
  }
  for (int i = 0; i < b->n; i++)
    if (b->start[i] == start && b->end[i] == end) return;
  b->start[b->n] = start;
  b->end[b->n++] = end;
  a->ahead_last = true;
  if (whole) a->ahead_mark = mark;
}

void ac_guard_ahead_issue(const struct ac_guard_ahead *b, void *stream, bool per_thread) {
  CUdevice dev;
  if (b->n == 0 || !ac_real.cuCtxGetDevice || ac_real.cuCtxGetDevice(&dev) != CUDA_SUCCESS) return;
  CUmemLocation where = {.type = CU_MEM_LOCATION_TYPE_DEVICE, .id = dev};
  unsigned long done = 0, refused = 0;
  unsigned long long bytes = 0;
  for (int i = 0; i < b->n; i++) {
    CUdeviceptr p = (CUdeviceptr)b->start[i];
    size_t n = b->end[i] - b->start[i];
    CUstream s = stream;
    CUresult r;
    if (ac_real.cuMemPrefetchAsync_v2)
      r = per_thread && ac_real.cuMemPrefetchAsync_v2_ptsz
              ? ac_real.cuMemPrefetchAsync_v2_ptsz(p, n, where, 0, s)
              : ac_real.cuMemPrefetchAsync_v2(p, n, where, 0,
                                              per_thread && !s ? CU_STREAM_PER_THREAD : s);
    else
      r = per_thread && ac_real.cuMemPrefetchAsync_ptsz
              ? ac_real.cuMemPrefetchAsync_ptsz(p, n, dev, s)
              : ac_real.cuMemPrefetchAsync(p, n, dev, per_thread && !s ? CU_STREAM_PER_THREAD : s);
    if (r == CUDA_SUCCESS)
      done++, bytes += n;
    else
      refused++;
  }
  if (!ac_opts.verbose) return;
  __atomic_add_fetch(&ac_guard.stats.ahead, done, __ATOMIC_RELAXED);
  __atomic_add_fetch(&ac_guard.stats.ahead_refused, refused, __ATOMIC_RELAXED);
  __atomic_add_fetch(&ac_guard.stats.ahead_bytes, bytes, __ATOMIC_RELAXED);
}

void ac_guard_ahead_placed_locked(struct ac_alloc *a) {
  AC_ASSERT_MODEL_HELD();
  a->ahead_mark = 0;
}
