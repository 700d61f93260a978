/* stack.c - the program's call stack at an intercepted call.
 *
 * libunwind does the unwinding. It is loaded with dlopen(RTLD_LOCAL) at
 * start-up rather than linked: its shared library exports _Unwind_* and a weak
 * backtrace(), which would otherwise take over C++ exception handling and
 * glibc's backtrace in the program (and its static archive is not
 * position-independent). A copy beside libattachcheck.so is preferred, so a
 * machine without libunwind can run the shim copied from a build folder.
 *
 * The shim's own frames are dropped so a stack starts in the caller of the
 * driver entry point. Stacks are taken only when something needs one: a
 * finding, or an allocation whose birth a finding may later show.
 *
 * A program mostly calls the driver from a few places in loops, so a stack
 * taken where the caller says where its return address lies (the slot of
 * its entry point's frame) is kept per thread with the addresses of the
 * slots its return addresses were read from. The same return address in the
 * same slot again, and every kept return address still in its slot, is the
 * same stack: the unwinder finds each frame's slot from the frame inside it
 * and where that one lies, so equal slots all the way out are equal frames.
 * That costs a read per frame instead of an unwind (x86-64; elsewhere every
 * stack is unwound).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <execinfo.h>
#include <stdlib.h>
#define UNW_LOCAL_ONLY
#include <libunwind.h>
#include <limits.h>
#include <link.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "fd_gate.h"
#include "own_code.h"
#include "shim.h"
#include "stack_depot.h"

typedef int (*unw_backtrace_fn)(void **buffer, int size);
static unw_backtrace_fn unwind_backtrace;
/* For stacks from a signal context (async-signal-safe in libunwind). */
static __typeof__(&unw_init_local2) unwind_init_local2;
static __typeof__(&unw_step) unwind_step;
static __typeof__(&unw_get_reg) unwind_get_reg;
/* For stacks kept per call site (x86-64 only: elsewhere unw_getcontext is
 * inline code, not a function that can be looked up). */
static __typeof__(&unw_init_local) unwind_init_local;
static int (*unwind_getcontext)(unw_context_t *);
static const void *shim_base;

/* libunwind.h renames its local-unwinding functions per processor
 * (unw_step is _ULx86_64_step or _ULaarch64_step): the exported name is the
 * macro's expansion, as a string. */
#define EXPORTED_NAME_OF(expanded) #expanded
#define EXPORTED_NAME(fn) EXPORTED_NAME_OF(fn)

/* dlopen of name, from the shim's own folder first. */
static void *open_beside_shim(const char *dir, const char *name) {
  char path[PATH_MAX];
  void *h = NULL;
  if (dir && snprintf(path, sizeof path, "%s/%s", dir, name) < (int)sizeof path)
    h = ac_fd_gate_dlopen(path, RTLD_NOW | RTLD_LOCAL);
  return h ? h : ac_fd_gate_dlopen(name, RTLD_NOW | RTLD_LOCAL);
}

/* The shim's own mapped segments, so that telling its frames apart costs two
 * comparisons per frame rather than a dladdr; and libunwind's, whose own
 * system calls the shim answers (interceptors_own.c). */
#ifdef __SANITIZE_THREAD__
void __tsan_init(void); /* the runtime's, here only for its address */
#endif

/* Read by interceptors on any thread while start-up may still be writing
 * them: atomic, hi published last and read first, so a range seen is a
 * whole one. */
struct code_range {
  uintptr_t lo, hi;
};
static struct code_range shim_code = {UINTPTR_MAX, 0}, unwinder_code = {UINTPTR_MAX, 0};

/* The segments of the object that holds code, published into r. */
static void locate(const void *code, struct code_range *r) {
  uintptr_t lo = UINTPTR_MAX, hi = 0;
  ac_code_range_of(code, &lo, &hi);
  __atomic_store_n(&r->lo, lo, __ATOMIC_RELAXED);
  __atomic_store_n(&r->hi, hi, __ATOMIC_RELEASE);
}

static bool in_code(const struct code_range *r, uintptr_t pc) {
  uintptr_t hi = __atomic_load_n(&r->hi, __ATOMIC_ACQUIRE);
  return pc < hi && pc >= __atomic_load_n(&r->lo, __ATOMIC_RELAXED);
}

void ac_stack_locate_shim(void) {
  Dl_info info;
  if (__atomic_load_n(&shim_code.hi, __ATOMIC_ACQUIRE) ||
      !dladdr((const void *)ac_stack_locate_shim, &info))
    return;
  shim_base = info.dli_fbase;
  locate((const void *)ac_stack_locate_shim, &shim_code);
}

void ac_stack_start(void) {
  Dl_info info;
  char dir[PATH_MAX] = "";
  ac_stack_locate_shim();
  if (dladdr((const void *)ac_stack_start, &info)) {
    snprintf(dir, sizeof dir, "%s", info.dli_fname);
    char *slash = strrchr(dir, '/');
    if (slash)
      *slash = 0;
    else
      dir[0] = 0;
  }
  open_beside_shim(dir[0] ? dir : NULL, "liblzma.so.5"); /* libunwind's one dependency */
  void *h = open_beside_shim(dir[0] ? dir : NULL, "libunwind.so.8");
  if (h) {
    unwind_backtrace = (unw_backtrace_fn)ac_real_dlsym(h, "unw_backtrace");
    unwind_init_local2 =
        (__typeof__(unwind_init_local2))ac_real_dlsym(h, EXPORTED_NAME(unw_init_local2));
    unwind_step = (__typeof__(unwind_step))ac_real_dlsym(h, EXPORTED_NAME(unw_step));
    unwind_get_reg = (__typeof__(unwind_get_reg))ac_real_dlsym(h, EXPORTED_NAME(unw_get_reg));
    unwind_init_local =
        (__typeof__(unwind_init_local))ac_real_dlsym(h, EXPORTED_NAME(unw_init_local));
#ifdef __x86_64__
    unwind_getcontext =
        (int (*)(unw_context_t *))ac_real_dlsym(h, EXPORTED_NAME(unw_tdep_getcontext));
#endif
  }
  if (!unwind_backtrace) ac_log("warning: libunwind.so.8 not found; findings have no stacks");
  /* libunwind's own opens are the shim's: on aarch64 it reads
   * /proc/PID/maps while it unwinds, and that descriptor must be gated and
   * moved out of the program's range as the shim's own are (own_code.h). */
  if (unwind_step) ac_own_code_add((const void *)unwind_step);
#ifdef __SANITIZE_THREAD__
  /* The ThreadSanitizer build: the runtime's own calls (its symbolizer's
   * open, close, pread while it makes a report) are the shim's too, or a
   * report would wait at the descriptor gate for a holder that waits for
   * the report's lock. */
  ac_own_code_add((const void *)__tsan_init);
#endif
  locate((const void *)unwind_step, &unwinder_code);
  /* libunwind checks that memory is readable by writing it to a pipe, which
   * valgrind's memcheck reports as a write of uninitialised bytes: a clean
   * program run with --error-exitcode would fail. Under memcheck, stacks in
   * normal context come from glibc's unwinder instead. Its other tools
   * (cachegrind, callgrind) check nothing of the kind and keep libunwind, so
   * that they profile the capture a program gets. */
  const char *preload = getenv("LD_PRELOAD");
  if (preload && strstr(preload, "vgpreload_memcheck")) {
    unwind_backtrace = backtrace;
    unwind_getcontext = NULL; /* and no stacks kept per call site, which libunwind unwinds */
  }
}

bool ac_pc_in_shim(const void *pc) {
  return in_code(&shim_code, (uintptr_t)pc);
}

bool ac_pc_in_unwinder(uintptr_t pc) {
  return in_code(&unwinder_code, pc);
}

/* Counted for --verbose alone: a locked add on a line every thread writes
 * costs each capture more than the kept stack's check. */
static unsigned long captures, kept_hits;
static double capture_seconds;

void ac_stack_print_stats(void) {
  if (ac_opts.verbose)
    ac_log("stacks: %lu captured (%lu of them kept from the same call site), %.3f ms",
           __atomic_load_n(&captures, __ATOMIC_RELAXED),
           __atomic_load_n(&kept_hits, __ATOMIC_RELAXED), capture_seconds * 1e3);
}

/* Set while this thread is inside libunwind for a capture: a signal handler
 * that interrupts it must not unwind again (its caches are not reentrant). */
static __thread volatile bool capturing;

bool ac_stack_capturing(void) {
  return capturing;
}

static void capture_timed(struct ac_stack *out, void *const *ret_slot, ac_stack_id *id);

void ac_stack_capture(struct ac_stack *out) {
  capture_timed(out, NULL, NULL);
}

void ac_stack_capture_site(struct ac_stack *out, void *const *ret_slot, ac_stack_id *id) {
  *id = 0;
  capture_timed(out, ret_slot, id);
}

/* Every frame through libunwind's backtrace, the shim's own left out. */
static void unwind_whole(struct ac_stack *out) {
  void *raw[AC_STACK_MAX + 16];
  capturing = true;
  int n = unwind_backtrace ? unwind_backtrace(raw, (int)(sizeof raw / sizeof raw[0])) : 0;
  capturing = false;
  int skip = 0;
  while (skip < n && ac_pc_in_shim(raw[skip]))
    skip++;
  out->depth = n - skip < AC_STACK_MAX ? n - skip : AC_STACK_MAX;
  if (out->depth < 0) out->depth = 0;
  memcpy(out->pc, raw + skip, (size_t)out->depth * sizeof raw[0]);
}

/* ---- stacks kept per call site ---- */

/* Per thread, two sets of two: a loop calling from a few places, and the
 * same place reached through two callers (which share a set). */
#define SETS 2
#define WAYS 2

struct site {
  void *const *slot[AC_STACK_MAX]; /* where pc[i] was read; slot[0] the entry's */
  void *pc[AC_STACK_MAX];
  int depth;      /* 0: empty; PENDING or REFUSED: slot[0] and pc[0] name a call */
  ac_stack_id id; /* in the depot; 0 until learnt; PENDING: the stack's hash */
};

/* A call seen once, with its stack's hash in id: kept when the same stack
 * comes from there again. A call whose stack changes each time (a deep
 * interpreter's) is so never unwound the slow way, frame by frame. */
#define PENDING (-1)
/* A call whose stack is never kept: it runs through a frame the unwinder
 * does not find by its slot (a signal's), or this processor has no cheap
 * unwind of the current frame. */
#define REFUSED (-2)

static __thread struct site sites[SETS][WAYS];
static __thread unsigned char last_used[SETS]; /* the way; the other one goes first */
static __thread struct site *last_filled;

static unsigned set_of(void *const *ret_slot) {
  uintptr_t h = (uintptr_t)ret_slot >> 4 ^ (uintptr_t)*ret_slot;
  return (unsigned)((h ^ h >> 7) % SETS);
}

/* Whether e is the stack of a call whose return address lies in ret_slot. */
static bool site_still(const struct site *e, void *const *ret_slot) {
  if (e->depth <= 0 || e->slot[0] != ret_slot) return false;
  for (int i = 0; i < e->depth; i++)
    if (*e->slot[i] != e->pc[i]) return false;
  return true;
}

/* Unwinds frame by frame, keeping where each return address was read, into
 * e; false (e left empty) when that is not what the slot the caller gave
 * holds, or the unwinder cannot say. */
static bool site_fill(struct site *e, void *const *ret_slot) {
  unw_context_t uc;
  unw_cursor_t cur;
  e->depth = 0;
  e->id = 0;
  if (!unwind_getcontext || !unwind_init_local || unwind_getcontext(&uc) < 0) return false;
  capturing = true;
  bool ok = unwind_init_local(&cur, &uc) >= 0;
  int n = 0;
  while (ok && n < AC_STACK_MAX) {
    unw_word_t ip = 0, sp = 0;
    if (unwind_step(&cur) <= 0 || unwind_get_reg(&cur, UNW_REG_IP, &ip) < 0 || !ip ||
        unwind_get_reg(&cur, UNW_REG_SP, &sp) < 0)
      break;
    if (!n && ac_pc_in_shim((void *)ip)) continue;
    /* x86-64: a frame's return address is the word below its caller's
     * stack pointer, as the call left it. */
    e->slot[n] = (void *const *)(sp - sizeof(void *));
    e->pc[n] = (void *)ip;
    ok = *e->slot[n] == e->pc[n] && (n ? e->slot[n] > e->slot[n - 1] : e->slot[0] == ret_slot);
    n++;
  }
  capturing = false;
  if (!ok || !n) return false;
  e->depth = n;
  return true;
}

/* Whether e is a PENDING or REFUSED note of the call at ret_slot. */
static bool site_noted(const struct site *e, void *const *ret_slot) {
  return e->depth < 0 && e->slot[0] == ret_slot && e->pc[0] == *ret_slot;
}

/* A call no kept stack matches: unwound whole, and noted in its set; kept
 * (the slow way, frame by frame) when the same stack came from there the
 * time before. */
static void site_missed(unsigned set, struct ac_stack *out, void *const *ret_slot) {
  unwind_whole(out);
  ac_stack_id hash = ac_stack_hash(out);
  unsigned way;
  for (way = 0; way < WAYS; way++) {
    struct site *e = &sites[set][way];
    if (site_noted(e, ret_slot) && (e->depth == REFUSED || e->id == hash)) break;
  }
  if (way == WAYS) { /* new here: noted in the way not used last */
    way = (last_used[set] + 1u) % WAYS;
    sites[set][way] =
        (struct site){.slot = {ret_slot}, .pc = {*ret_slot}, .depth = PENDING, .id = hash};
  } else if (sites[set][way].depth == PENDING) {
    struct site *e = &sites[set][way];
    /* Kept only if frame by frame it is the stack just unwound whole. */
    if (site_fill(e, ret_slot) && e->depth == out->depth &&
        !memcmp(e->pc, out->pc, (size_t)out->depth * sizeof out->pc[0]))
      last_filled = e;
    else
      *e = (struct site){.slot = {ret_slot}, .pc = {*ret_slot}, .depth = REFUSED};
  }
  last_used[set] = (unsigned char)way;
}

static void capture_site(struct ac_stack *out, void *const *ret_slot, ac_stack_id *id) {
  unsigned set = set_of(ret_slot), way;
  struct site *e = NULL;
  for (way = 0; way < WAYS && !e; way++)
    if (site_still(&sites[set][way], ret_slot)) e = &sites[set][way];
  if (!e) {
    site_missed(set, out, ret_slot);
    return;
  }
  if (ac_opts.verbose) __atomic_add_fetch(&kept_hits, 1, __ATOMIC_RELAXED);
  last_used[set] = (unsigned char)(e - sites[set]);
  out->depth = e->depth;
  memcpy(out->pc, e->pc, (size_t)e->depth * sizeof e->pc[0]);
  *id = e->id;
}

ac_stack_id ac_stack_store(const struct ac_stack *stack, ac_stack_id id) {
  AC_ASSERT_MODEL_HELD(); /* the depot's lock */
  if (id) return id;
  id = ac_stack_depot_put(stack);
  /* The stack just kept, if it is this one: its next reading gives the id. */
  struct site *e = last_filled;
  if (id && e && !e->id && e->depth == stack->depth &&
      !memcmp(e->pc, stack->pc, (size_t)stack->depth * sizeof stack->pc[0]))
    e->id = id;
  return id;
}

static void capture_timed(struct ac_stack *out, void *const *ret_slot, ac_stack_id *id) {
  struct timespec t0, t1;
  if (ac_opts.verbose) clock_gettime(CLOCK_MONOTONIC, &t0);
  if (ret_slot)
    capture_site(out, ret_slot, id);
  else
    unwind_whole(out);
  if (ac_opts.verbose) {
    __atomic_add_fetch(&captures, 1, __ATOMIC_RELAXED);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    capture_seconds += (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9;
  }
}

void ac_stack_capture_from_signal(void *ucontext, struct ac_stack *out) {
  unw_cursor_t cursor;
  out->depth = 0;
  if (!unwind_init_local2 || !unwind_step || !unwind_get_reg ||
      unwind_init_local2(&cursor, (unw_context_t *)ucontext, UNW_INIT_SIGNAL_FRAME) < 0)
    return;
  do {
    unw_word_t ip = 0;
    if (unwind_get_reg(&cursor, UNW_REG_IP, &ip) < 0 || ip == 0) break;
    /* The first frame is the faulting instruction itself, not a return
     * address: +1 so that symbolisation (which looks at pc-1) finds it. */
    out->pc[out->depth] = (void *)(ip + (out->depth == 0));
    out->depth++;
  } while (out->depth < AC_STACK_MAX && unwind_step(&cursor) > 0);
}
