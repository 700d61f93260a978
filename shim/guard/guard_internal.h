/* guard_internal.h - what the page guard's files share.
 *
 * Layout of shim/guard/:
 *   guard.h          the guard's face to the rest of the shim, and its words
 *   start.c          start-up: the backend, the driver's code; keys given back
 *   refresh.c        protection follows the model at every transition
 *   classes.c        the classes of managed memory, kept allocation by allocation
 *   class_log.c      one class: its sorted list, and the logs of what moved since
 *   class_pending.c  the allocations with an attach pending: each its own verdict
 *   wanted.c         the pages to close, kept up to date from what changed
 *   fault.c          a fault or a system call's buffer judged and let through
 *   step.c           a judged access stepped through, its page closed again after
 *   emulate_a64.c    an aarch64 load or store carried out instead of stepped
 *   emulate_a64_vector.c  ... a vector load or store of structures
 *   emulate_a64_internal.h  what the emulator's two files share
 *   pins.c           the buffers of system calls in flight, which no refresh closes
 *   deferred.c       a handler's access inside the shim, queued to be judged late
 *   reporter.c       the SIGSEGV handler's findings, written by a thread of the guard's
 *   pages.c          closing pages to every thread, and opening them again
 *   program_prot.c   the program's own protection of managed memory, kept
 *   ahead.c          closed memory moved to the GPU before work reaches it
 *   published.c      what the handler reads without the lock (a latch)
 *   keys.c           which classes get protection keys, and their pages' tags
 *   keys_patch.c     the keys' layout patched between layouts; what they shut
 *   keys_park.c      freed memory keeping its key; remaps taking it away
 *   keys_fresh.c     a managed allocation's fresh mapping tagged whole at birth
 *   remaps.c         mappings replaced under the guard, noted without the lock
 *   keys_fault.c     the keys' verdicts at a transition, and at a fault
 *   keys_follow.c    the keys backend: laid out, patched, given up, its table
 *   backend.h        the backends' one face: mprotect's and the keys'
 *   backend_mprotect.c  the page tables' backend
 *   keys_internal.h  the state the keys' files share
 *   threads.c        every thread's protection-key register, written by itself
 *   pkeys.c          the processor's protection keys: detection, PKRU, frames
 *   ranges.c         sorted page-range lists, the guard's arithmetic
 *   fault_retry.c    whether a fault the guard let go runs again
 *   fault_esr.c      the aarch64 signal frame's fault record
 *
 * The refresh side
 * (refresh.c), which makes protection follow the model at every transition,
 * and the fault side (fault.c), which judges an access in the SIGSEGV
 * handler or before a system call and lifts the page. Everything here is
 * under ac_model_lock, except what is said to be read without it.
 */
#ifndef AC_GUARD_INTERNAL_H
#define AC_GUARD_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include "guard.h"
#include "published.h"
#include "ranges.h"

/* Pages the handler lifted inside protected_now, until the next transition. */
#define AC_GUARD_LIFTED_MAX 1024

struct ac_guard_backend;

struct ac_guard_shared {
  long page_size;
  /* mprotect's or the keys' (backend.h): chosen at start, before the guard
   * is on, and never changed after. */
  const struct ac_guard_backend *backend;
  bool enabled; /* atomic: set once at start, read by handlers of any thread (ac_guard_on) */
  struct range_list protected_now; /* what was made PROT_NONE (pages) */
  uintptr_t lifted[AC_GUARD_LIFTED_MAX];
  size_t lifted_count;
  /* Set when protection is not known exactly (too many lifted pages; a page
   * lifted by a handler that could not take the lock): the next refresh
   * starts from nothing protected. */
  bool protection_uncertain;
  /* A device's driver protects managed memory itself while the GPU owns it
   * (no concurrent managed access): an access there may fault whatever the
   * guard opened, so none is carried out in the handler (step.c). */
  bool driver_protects;
  int lifted_unlocked; /* atomic: set by a handler without the lock */
  /* Counts the settlings of what was lifted (a transition each): a busy
   * period's number, for what a thread was judged on in it (step.c). */
  uint64_t settles;
  /* Where libcuda's code is: faults there are the driver's own accesses. */
  uintptr_t driver_lo, driver_hi;
  /* Moves (atomic, any thread) each time pages are opened: memory moved to
   * the GPU before it may have been touched by the CPU since (ahead.c). */
  unsigned opened;
  /* protected_now as the handler reads it without the lock (published.h);
   * during a refresh, a cover of what is closed before and after it. */
  struct ac_published closed;
  /* What the guard cost, for --verbose. */
  struct {
    unsigned long refreshes, rebuilds, mprotects, faults, driver_faults, unjudged, largest;
    unsigned long from_scratch, window_ranges;   /* wanted.c's two ways */
    unsigned long resumed;                       /* windows over the pages kept while idle */
    unsigned long skipped;                       /* attaches that could change no page */
    unsigned long steps;                         /* accesses stepped (step.c) */
    unsigned long steps_timed;                   /* of those, with their pages' open time */
    double step_open_seconds, step_open_longest; /* ... in all, the longest */
    unsigned long key_faults, disagreements;
    unsigned long judged_late;         /* accesses of handlers inside the shim (deferred.h) */
    unsigned long let_go_again;        /* faults on pages the guard had already let go */
    unsigned long allowed_faults;      /* faults on memory the CPU may touch, on a guarded page */
    unsigned long left_open_for_calls; /* refreshes that left system calls' pages open */
    unsigned long layouts, patches, stood_aside; /* the keys laid out, patched; stood aside */
    unsigned long parked, remapped; /* pages of freed memory that kept a key; lost it to a remap */
    unsigned long fresh_tagged;     /* fresh mappings of managed allocations tagged whole */
    unsigned long ahead, ahead_refused; /* prefetches of closed memory ahead of work (ahead.c) */
    unsigned long ahead_held;           /* memory left where the GPU held it (ahead.c) */
    unsigned long ahead_unasked;        /* of those, left without asking the kernel */
    unsigned long long ahead_bytes;
    double seconds, handler_seconds;
  } stats;
};
extern struct ac_guard_shared ac_guard;

/* Whether the guard is on; async-signal-safe, any thread. */
static inline bool ac_guard_on(void) {
  return __atomic_load_n(&ac_guard.enabled, __ATOMIC_ACQUIRE);
}

static inline uintptr_t ac_guard_page_floor(uintptr_t a) {
  return a & ~(uintptr_t)(ac_guard.page_size - 1);
}

/* Whether every page the bytes [start, end) touch lies in pages (normalised). */
static inline bool ac_guard_pages_covered(const struct range_list *pages, uintptr_t start,
                                          uintptr_t end) {
  return range_covers(pages, ac_guard_page_floor(start),
                      ac_guard_page_floor(end - 1) + (uintptr_t)ac_guard.page_size);
}

/* The SIGSEGV handler and the reporter, once: before anything is shut. */
void ac_guard_install_handler_once(void);

/* ---- fault.c ---- */
/* Judges a CPU access at a, faulted at pc, against the model; a finding goes
 * to the reporter (model lock held, in the SIGSEGV handler). */
enum ac_rule_id ac_guard_judge_locked(uintptr_t a, bool is_write, uintptr_t pc, void *ucontext);
/* Under --on-error repair, the rule ac_guard_judge_locked returned (or
 * AC_RULE_COUNT: nothing): the lock is let go while the access waits for the
 * busy work (repair.h), and taken again. In the SIGSEGV handler. */
void ac_guard_repair_in_handler(uintptr_t a, enum ac_rule_id repair);
/* In the SIGSEGV handler of a thread that holds the model lock: the access
 * is queued, to be judged when the thread leaves the model (deferred.h). */
void ac_guard_defer(uintptr_t a, bool is_write, uintptr_t pc, void *ucontext);
void ac_guard_deferred_after_fork_child(void);

/* ---- reporter.c: findings of the SIGSEGV handler ---- */
/* A slot for the handler's next finding, or NULL (the ring stayed full);
 * model lock held, which it may release and retake while it waits. */
struct ac_finding *ac_guard_ring_slot_locked(void);
/* The slot is filled: hand it to the reporter. */
void ac_guard_ring_commit_locked(void);
void ac_guard_reporter_start(void);
void ac_guard_reporter_after_fork_child(void);

/* ---- keys.c: the protection-keys side (see there) ---- */
extern const char ac_guard_global_class; /* the GLOBAL class's identity */
bool ac_guard_keys_start(const char **why);
bool ac_guard_keys_active(void);
int ac_guard_keys_count(void);
/* At a change of layout: each class's bytes (normalised), then every managed
 * byte; the classes with pages of their own get keys and are tagged. */
void ac_guard_keys_layout_begin(void);
void ac_guard_keys_layout_class(const void *id, const struct range_list *bytes);
void ac_guard_keys_layout_end(const struct range_list *all_managed);
/* What of a class, or of all managed memory, no key covers: mprotect's. */
const struct range_list *ac_guard_keys_unkeyed(const void *id, const struct range_list *bytes);
const struct range_list *ac_guard_keys_unkeyed_managed(const struct range_list *all_managed);
/* At a transition, before the pages to close are computed: the verdicts of
 * the slots (GLOBAL's forbidden under strict semantics while anything is
 * busy, each busy stream's) are published for every thread to catch up
 * with, and the pages of every slot some running thread disagrees with are
 * put in give_up (normalised), to be patched away. */
void ac_guard_keys_agree(bool any_busy, bool strict, struct range_list *give_up);
/* After it: the calling thread writes its own PKRU. */
void ac_guard_keys_transition(void);
/* The slots forbidden now (atomic, any context), and a count that moves
 * whenever they change. */
uint32_t ac_guard_keys_disabled_now(void);
unsigned ac_guard_keys_verdicts_epoch(void);
/* pkru with every key of the guard's set: the slots of disabled and the
 * closing key disabled, the other slots enabled, the program's keys as they
 * were. */
uint32_t ac_guard_keys_pkru_for(uint32_t pkru, uint32_t disabled);
/* The key that closes pages to every thread, or -1 (no keys: mprotect). */
int ac_guard_keys_closing(void);
/* Until the next layout the keys protect nothing more (mprotect covers it
 * all). */
void ac_guard_keys_stand_aside(void);
/* Between layouts, the pages (normalised) where bytes moved class are looked
 * at again - a keyed class's bytes alone on a page keep or get its key, any
 * other page holding bytes gives its key up (every one of them, give_up) -;
 * then each class's bytes there, then all managed bytes there (false from
 * _begin: the keys stand aside instead). */
bool ac_guard_keys_patch_begin(const struct range_list *pages, bool give_up);
void ac_guard_keys_patch_class(const void *id, const struct range_list *bytes);
void ac_guard_keys_patch_end(const struct range_list *managed);
/* Whether no thread can touch a page of [start, end): each is in mprotected
 * (normalised) or tagged with a key disabled now (lock held). */
bool ac_guard_keys_pages_shut(const struct range_list *mprotected, uintptr_t start, uintptr_t end);
/* The pages tagged with a key disabled now, normalised (lock held). */
void ac_guard_keys_shut_pages(struct range_list *out);
/* --guard-verify: what is wrong with the keys against the classes offered
 * since ac_guard_keys_layout_begin, or NULL. */
const char *ac_guard_keys_layout_wrong(const struct range_list *all_managed);
/* The pages whose key changed since the last call (in no order), where what
 * mprotect covers may have changed; *all when too many to list. The list is
 * valid until the next call. */
const struct range_list *ac_guard_keys_take_rekeyed(bool *all);
void ac_guard_keys_forget(uintptr_t start, uintptr_t end);
/* The pages of [start, end) that kept their key when their memory was freed
 * (keys_park.c) are given key 0: touched, or handed to a system call, such a
 * key means nothing any more. Whether there was one (lock held). */
bool ac_guard_keys_unpark(uintptr_t start, uintptr_t end);
/* Pages a fault let go (a forbidden access, judged) get their keys back:
 * at a transition, before mprotect's protection is settled. */
void ac_guard_keys_restore_lifted(void);
/* The page lifted for the calling thread alone - tagged with the lift key,
 * enabled in its signal frame (ucontext) or, without one, its PKRU - until
 * the next transition; false when the keys cannot (no lift key, keys off, a
 * frame without PKRU): the caller opens it to every thread. */
bool ac_guard_keys_lift_for_thread(uintptr_t page, void *ucontext);
/* A step with the lift key granted for one instruction ended: taken back in
 * the trap's frame (ucontext); async-signal-safe. */
void ac_guard_keys_end_lift_step(void *ucontext);
/* Whether pages lifted by the fault handler are the lifting threads' alone. */
bool ac_guard_keys_lifted_for_threads(void);
/* And the calling thread holds the lift key: those pages are open to it. */
bool ac_guard_keys_lifted_here(void);
/* The pages lifted since the last transition are given back: every grant of
 * the lift key ends (each thread drops it when it next catches up). */
void ac_guard_keys_lifts_ended(void);
/* A device whose driver protects managed memory itself was seen: keys off. */
void ac_guard_keys_decline(int device);
bool ac_guard_keys_yield_locked(void);
int ac_guard_keys_slot_of(int pkey);
bool ac_guard_keys_slot_forbidden(int slot);
bool ac_guard_keys_enable(int slot, bool allowed, void *ucontext, uintptr_t addr);
bool ac_guard_keys_let_through(int slot, void *ucontext);
int ac_guard_keys_disabled_in(uintptr_t start, uintptr_t end, uintptr_t *page, bool *maybe);
void ac_guard_keys_after_fork_child(void);
/* The keys backend's on_fault (backend.h). */
bool ac_guard_keys_on_fault(uintptr_t a, bool is_write, uintptr_t pc, int pkey, void *ucontext,
                            enum ac_guard_claim *claim);

/* ---- threads.c: each thread's own PKRU (no lock) ---- */
/* The calling thread writes its PKRU to the verdicts, unless it agrees. */
void ac_guard_threads_catch_up(void);
/* The same in the PKRU of its signal frame, also enabling the slots of also
 * (granted though forbidden); async-signal-safe. */
void ac_guard_threads_in_frame(void *ucontext, uint32_t also);
/* The same, with slots no longer granted; async-signal-safe. */
void ac_guard_threads_revoke_in_frame(void *ucontext, uint32_t slots);
/* The slots the calling thread is granted now. */
uint32_t ac_guard_threads_granted(void);
/* The same in its PKRU now, with slots granted. */
void ac_guard_threads_grant(uint32_t slots);
/* The slots of slots that some running thread but the caller disagrees
 * with, disabled being the verdicts. */
uint32_t ac_guard_threads_disagreeing(uint32_t disabled, uint32_t slots);
/* The keys were allocated: every thread holds them disabled. */
void ac_guard_threads_keys_made(void);
void ac_guard_threads_after_fork_child(void);

/* ---- step.c: a forbidden access stepped through, its page closed again ---- */
/* Steps one thread may take on one page in one busy period; past them the
 * page is let go to every thread until the next transition. */
#define AC_GUARD_STEPS_PER_PAGE 16
/* Whether the calling thread was found at fault on page in this busy
 * period; noting that it was judged there, found at fault or allowed (lock
 * held). */
bool ac_guard_step_judged_here(uintptr_t page);
void ac_guard_step_note_judged(uintptr_t page, bool found);
/* Steps the faulting access on page, opened to every thread: the trap flag
 * set in its signal frame (ucontext), the page closed again at the trap.
 * False where it cannot: no frame, not judged here, its steps spent, another
 * processor than x86-64 (lock held). */
bool ac_guard_step_arm(uintptr_t page, void *ucontext);
/* Steps the faulting access on page, which carries the keys' lift key and
 * was judged allowed here: the caller granted the lift key in the frame, and
 * the trap takes it back (ac_guard_keys_end_lift_step). False where it cannot
 * (as above, or the thread was found at fault there): the grant then lasts
 * until the thread next catches up (lock held). */
bool ac_guard_step_arm_lift(uintptr_t page, void *ucontext);
/* aarch64, which has no user-mode single step: the faulting access on page,
 * opened to every thread, carried out here on the registers of its signal
 * frame (emulate_a64.c), and the frame's program counter moved past it; the
 * caller closes the page again. False where it cannot: no frame, not judged
 * here, its steps spent, an instruction the emulator leaves alone, a page
 * the program protected itself, another processor (lock held). */
bool ac_guard_step_emulate(uintptr_t page, void *ucontext);
void ac_guard_step_after_fork_child(void);
/* fault.c: a stepped page closed again and no longer lifted (lock held). */
void ac_guard_unlift_page(uintptr_t page);

/* ---- pages.c: closing pages to every thread, and opening them ---- */
/* Async-signal-safe; 0, or -1 with errno. Opening gives the program's own
 * protection and key back (program_prot.c). */
int ac_guard_close_pages(uintptr_t start, uintptr_t end);
int ac_guard_open_pages(uintptr_t start, uintptr_t end);
/* Tags pages with a class key of the guard's (0: opens them), keeping the
 * program's protection; pages with a key of the program's are left alone. */
int ac_guard_tag_pages(uintptr_t start, uintptr_t end, int key);

/* ---- program_prot.c: the program's own protection of managed memory ---- */
/* fn for each piece of [start, end), with the protection and key the
 * program set there (PROT_READ | PROT_WRITE and key 0 where it set none). */
void ac_guard_program_pieces(uintptr_t start, uintptr_t end,
                             void (*fn)(uintptr_t start, uintptr_t end, int prot, int key,
                                        void *ctx),
                             void *ctx);
/* Whether the program set a protection of its own on some managed page
 * (lock held: remaps taken in first). */
bool ac_guard_program_set_any(void);
/* The same asked by the SIGSEGV handler, without the lock: the count as
 * it stands, remaps not taken in - a page remapped since keeps it high,
 * which only sends the fault to be judged under the lock (fault.c). */
bool ac_guard_program_maybe_set_any(void);
/* on: this thread reads the pieces without the lock, in the SIGSEGV handler,
 * until called again with off (remaps are not taken in meanwhile). */
void ac_guard_program_unlocked(bool on);
/* Whether the program gave some page of [start, end) a key of its own (the
 * guard's keys leave such pages out, closing them with PROT_NONE instead). */
bool ac_guard_program_keyed_in(uintptr_t start, uintptr_t end);
/* The protection the program set at addr (PROT_READ | PROT_WRITE if none). */
int ac_guard_program_prot_at(uintptr_t addr);
void ac_guard_program_prot_after_fork_child(void);
/* keys.c: the program put a key of its own (key > 0), or key 0, on pages
 * between start and end: any of them the guard's keys had are theirs no
 * more, and the keys stand aside until laid out again. */
void ac_guard_keys_program_keyed(uintptr_t start, uintptr_t end, int key);

/* ---- a span that only grows (pins.c, remaps.c) ---- */

/* Widened under the model lock, read without it (async-signal-safe): where
 * something the guard keeps may lie, so that a call elsewhere costs two
 * loads. */
struct ac_guard_span {
  uintptr_t lo, hi; /* atomic; empty while lo > hi */
};
#define AC_GUARD_SPAN_EMPTY                                                                        \
  { UINTPTR_MAX, 0 }
static inline void ac_guard_span_widen(struct ac_guard_span *s, uintptr_t start, uintptr_t end) {
  if (start >= end) return;
  if (start < __atomic_load_n(&s->lo, __ATOMIC_RELAXED))
    __atomic_store_n(&s->lo, start, __ATOMIC_SEQ_CST);
  if (end > __atomic_load_n(&s->hi, __ATOMIC_RELAXED))
    __atomic_store_n(&s->hi, end, __ATOMIC_SEQ_CST);
}
static inline bool ac_guard_span_meets(const struct ac_guard_span *s, uintptr_t start,
                                       uintptr_t end) {
  return start < __atomic_load_n(&s->hi, __ATOMIC_ACQUIRE) &&
         end > __atomic_load_n(&s->lo, __ATOMIC_ACQUIRE);
}

/* ---- the buffers of system calls in flight (pins.c; async-signal-safe) ---- */

/* Pages of [start, end) may be closed or keyed by the guard from now on: the
 * hull of what may be widens (model lock, before the program can use them). */
void ac_guard_note_guardable(uintptr_t start, uintptr_t end);
/* Whether [start, end) meets that hull (no lock): outside it, no page of a
 * buffer is ever the guard's. */
bool ac_guard_may_guard(uintptr_t start, uintptr_t end);
/* Pins [start, end)'s pages into p (no lock). */
void ac_guard_pin(struct ac_guard_pins *p, uintptr_t start, uintptr_t end);
/* The pinned pages now, into pinned (normalised), read after what a refresh
 * will close was published; true when some call found no slot - then no
 * page may be closed that is not closed already. */
bool ac_guard_pins_read(struct range_list *pinned);
void ac_guard_pins_after_fork_child(void);

#endif
