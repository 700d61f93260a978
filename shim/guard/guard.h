/* guard.h - the page guard, as the rest of the shim sees it.
 *
 * The page guard makes the CPU's accesses to managed memory visible while the
 * model forbids them: what the CPU may not touch now is made inaccessible,
 * and the SIGSEGV of an access is judged (AC201/AC202) and let through. It
 * follows the model - every transition is brought into the page tables (or
 * the threads' protection-key registers) before the call that made it
 * returns - and never leaves protected memory a correct program may touch.
 *
 * Its words:
 *   class       the managed bytes that become off-limits together: all of
 *               them, the globally attached ones, those single-attached to
 *               one stream, those with an attach still pending (classes.c)
 *   transition  a change of the model the guard follows: a stream turned
 *               busy or idle, an allocation made, attached, settled, freed
 *   refresh     bringing protection in line with the model after one; it
 *               runs when the model lock is left (shim.h's ac_model_leave)
 *   wanted      the pages to close now: some forbidden byte on them and no
 *               allowed one (wanted.c)
 *   close/open  making pages inaccessible to every thread, or accessible
 *               again: mprotect, or under protection keys a tag with the
 *               closing key that no thread enables (backend.h)
 *   key, slot   under protection keys, a class with pages of its own gets a
 *               key (its slot is the guard's index of it); its pages are
 *               tagged once and a transition writes each thread's PKRU
 *   layout      choosing which classes get keys and tagging their pages
 *   patch       between layouts, the pages where bytes moved class give
 *               their keys up; stand aside: every key gives its pages up
 *   agree       a thread agrees with a slot when its PKRU enables the key
 *               exactly while the class is allowed; a slot some running
 *               thread disagrees with gives its pages up too, since only a
 *               thread can write its own PKRU (threads.c)
 *   park        a thread inside a call that blocks (a wait, a sleep) is
 *               parked: it touches nothing until it returns, and catches up
 *               with the keys then
 *   lift        a page a judged fault let go, until the next transition
 *   published   what the SIGSEGV handler reads without the lock: a seqlocked
 *               copy of the closed pages (refresh.c) and of the keyed ones (keys.c)
 *
 * Everything here is under the model lock unless said otherwise.
 */
#ifndef AC_GUARD_H
#define AC_GUARD_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct ac_alloc;

/* ---- start-up, devices, statistics, fork ---- */
void ac_guard_start(void);
/* Device device has no concurrent managed access: its driver protects managed
 * memory itself, so the guard gives up protection keys for mprotect (no lock). */
void ac_guard_device_protects_managed(int device);
/* The program's pkey_alloc found no key free: the guard gives its keys back
 * and goes on with mprotect. Whether it had any. */
bool ac_guard_give_keys_back(void);
/* With --verbose: what the guard did and cost (no lock). */
void ac_guard_print_stats(void);
/* In a forked child (its only thread, no lock needed): nothing is protected
 * any more that it could use (UVM unmaps managed memory there), and the
 * reporter thread did not survive. */
void ac_guard_after_fork_child(void);

/* ---- transitions ---- */
/* Brings protection exactly in line with the model; cheap when nothing the
 * guard follows changed. ac_model_leave calls it. */
void ac_guard_refresh_locked(void);
/* What ac_guard_refresh_after_move_locked compares with: the model as an
 * operation found it, taken under the same hold of the model lock. */
struct ac_guard_before {
  uint64_t generation, layout, busy_changes;
};
void ac_guard_before_locked(struct ac_guard_before *before);
/* The refresh after an operation that moved allocation a (which may be NULL)
 * between classes and did nothing else the guard follows - an attach - since
 * before: marked done where that cannot change a page. */
void ac_guard_refresh_after_move_locked(const struct ac_guard_before *before,
                                        const struct ac_alloc *a);
/* Marks a about to be freed and lets go of what protected it. */
void ac_guard_retire_locked(struct ac_alloc *a);

/* ---- the CPU's accesses ---- */
enum ac_guard_claim { AC_GUARD_NOT_OURS, AC_GUARD_HANDLED, AC_GUARD_RETRY };
/* From the SIGSEGV handler (no lock): judges a fault on guarded memory and
 * lets it through. pc is the faulting instruction; pkey the key of a
 * protection-key fault, or -1. AC_GUARD_RETRY: the page was no longer the
 * guard's to protect when it looked (a transition of another thread let it
 * go), and the access may run again; *epoch then says which protection of
 * the guard's that was, so that the handler can tell a page the guard
 * protects anew each time (threads racing: retried up to a far larger bound)
 * from one that faults again under the same protection (the driver refusing
 * it: a few retries, then the program's own fault). */
enum ac_guard_claim ac_guard_on_fault(void *addr, bool is_write, uintptr_t pc, int pkey,
                                      void *ucontext, unsigned *epoch);
/* A signal handler of the program that touched guarded memory while its
 * thread held the model lock was let through unjudged, its access queued:
 * whether this thread has such accesses waiting - a flag of the thread's own,
 * read at every shim call, so a load and no call - and judging them against
 * the model as it stands, with the fault's stack, once the lock is released
 * (ac_model_leave does both; normal context, no lock held). */
extern __thread bool ac_guard_late_waiting;
static inline bool ac_guard_deferred_waiting(void) {
  return ac_guard_late_waiting;
}
void ac_guard_judge_deferred(void);
/* Wakes the guard's reporter thread, which also says what repair gave up
 * (repair.h). Async-signal-safe. */
void ac_guard_wake_reporter(void);
/* The buffers of one wrapped system call, pinned from their check until the
 * call returns: no refresh closes their pages meanwhile (pins.c). */
#define AC_GUARD_PINS_MAX 4
struct ac_guard_pins {
  int n;
  short slot[AC_GUARD_PINS_MAX];
};
/* A system call is about to read (cpu_writes false) or fill a buffer (no
 * lock): pinned into pins, judged, and let through, so the call succeeds.
 * After the call, ac_guard_unpin(pins) - errno is kept. A call made while
 * the thread holds any lock of the shim's is the shim's own (the report
 * sink's writes, libdw's reads of debug files under the symbolizer's lock):
 * never judged, and never a wait for the model lock there, which comes
 * before those locks. */
void ac_guard_check_buffer(struct ac_guard_pins *pins, const char *via, const void *buf, size_t len,
                           bool cpu_writes);
void ac_guard_unpin(struct ac_guard_pins *pins);
/* The program set prot (and key; -1 for mprotect, which keeps each page's)
 * on [start, start + len): kept where it is managed memory, and what the
 * guard closes there closed again (no lock; program_prot.c). */
void ac_guard_program_protects(uintptr_t start, size_t len, int prot, int key);
/* [start, start + len) was unmapped, or mapped anew: freed memory there that
 * kept its protection key lost it (no lock, async-signal-safe; keys_park.c). */
void ac_guard_note_remap(uintptr_t start, size_t len);
/* A managed allocation's fresh mapping is tagged whole with its class's key
 * (keys_fresh.c). Around the driver's call, on the allocating thread:
 * ac_guard_fresh_begin, then ac_guard_fresh_allocation_locked (model lock)
 * when the allocation is recorded, then ac_guard_fresh_end. Every mapping
 * made, by anyone: ac_guard_note_mapped (no lock, async-signal-safe; it
 * notes a fixed one as ac_guard_note_remap does). */
void ac_guard_fresh_begin(void);
void ac_guard_note_mapped(uintptr_t start, size_t len, int flags, int fd);
void ac_guard_fresh_allocation_locked(uintptr_t base, size_t size, bool global);
void ac_guard_fresh_end(void);
/* Managed memory a was recorded (model lock), before the program has its
 * pointer: its pages may be guarded from now on (pins.c), and a fresh
 * mapping of it is keyed (keys_fresh.c). */
void ac_guard_allocated_locked(const struct ac_alloc *a);
/* Whether pc is in the driver's code (async-signal-safe). */
bool ac_pc_in_driver(uintptr_t pc);

/* ---- closed memory moved to the GPU ahead of work (ahead.c) ----
 * Under mprotect, the managed memory a kernel, copy or set is about to reach
 * that the guard closed is prefetched to the device on the work's stream,
 * just before the work is forwarded. Collected by address without the lock
 * (ac_guard_ahead_armed, ac_guard_ahead_maybe), then under the model lock
 * (ac_guard_ahead_note_locked), then enqueued with no lock held. */
#define AC_GUARD_AHEAD_MAX 16
struct ac_guard_ahead {
  int n;
  uintptr_t start[AC_GUARD_AHEAD_MAX], end[AC_GUARD_AHEAD_MAX];
};
/* Whether work about to be forwarded should look for closed memory (no lock). */
bool ac_guard_ahead_armed(void);
/* Whether a page of [start, end) may be closed now: worth the lock (no lock). */
bool ac_guard_ahead_maybe(uintptr_t start, uintptr_t end);
/* The work reaches a at [start, end), or all of it (start == end == 0):
 * added to b when it is to be moved (model lock held). */
void ac_guard_ahead_note_locked(struct ac_guard_ahead *b, struct ac_alloc *a, uintptr_t start,
                                uintptr_t end);
/* The program placed a on the CPU itself (a prefetch): moved whole again
 * before work reaches it (model lock held). */
void ac_guard_ahead_placed_locked(struct ac_alloc *a);
/* Enqueues b's prefetches on stream (a CUstream; per_thread: as the _ptsz
 * entry points read it), to the current context's device (no lock). */
void ac_guard_ahead_issue(const struct ac_guard_ahead *b, void *stream, bool per_thread);

/* ---- threads (no lock; threads.c) ---- */
/* Before pthread_create: a record for the thread about to be made, which
 * starts with its creator's protection keys (NULL: the guard needs none).
 * by_driver: the driver or the shim makes it for itself; its accesses are
 * never the program's, and it takes no part in the keys. */
struct ac_guard_thread *ac_guard_thread_expected(bool by_driver);
/* The new thread's first step, before the program's start routine: it takes
 * its record and catches up with the keys; by_driver marks a thread the
 * driver made for itself, whose accesses are the driver's. */
void ac_guard_thread_begins(struct ac_guard_thread *t, bool by_driver);
/* pthread_create failed: the record is given back. */
void ac_guard_thread_not_made(struct ac_guard_thread *t);
/* At load, in the thread loading the shim (main): its record. */
void ac_guard_threads_at_load(void);
/* Around a call that blocks (a wait, a sleep, a synchronisation). */
void ac_guard_park(void);
void ac_guard_unpark(void);
/* Whether the calling thread is one the driver made for itself; a host
 * function's trampoline makes it a program thread for the function's run. */
bool ac_guard_thread_is_driver(void);
void ac_guard_thread_as_program(bool program);

/* ---- findings of the SIGSEGV handler (reporter.c; no lock) ---- */
/* Reports what the signal handler found and the reporter has not written. */
void ac_guard_drain(void);
/* From the SIGSEGV handler, before a fault the guard cannot resolve may kill
 * the process: waits up to max_ms for the reporter to have written every
 * finding of the ring. Async-signal-safe. */
void ac_guard_wait_reported(int max_ms);
/* Whether the calling thread is reporting the handler's findings now; and
 * whether it is the reporter thread (else it drains at exit). */
bool ac_guard_draining(void);
bool ac_guard_is_reporter(void);
/* How many findings the calling thread's SIGSEGV handler has left for the
 * reporter so far (async-signal-safe). */
unsigned ac_guard_findings_left_here(void);

/* ---- what the guard needs from the signal door (interceptors_signal.c) ---- */
/* Installs the SIGSEGV handler that calls ac_guard_on_fault, keeping the
 * program's own disposition for every fault that is not the guard's. */
void ac_signal_install_guard_handler(void);
/* Installs the SIGTRAP handler that ends a step (step.c), keeping the
 * program's own disposition for every other trap; true once it is in place.
 * Async-signal-safe (the fault handler asks, holding the model lock). */
bool ac_signal_install_step_handler(void);

/* ---- the end of a stepped access (step.c; from the SIGTRAP handler) ---- */
/* Whether a SIGTRAP of si_code on this thread ends its step. */
bool ac_guard_trap_ends_step(int si_code);
/* Ends it: the trap flag off and the thread's mask as the program had it, in
 * the trap's frame (ucontext); the stepped pages closed again. */
void ac_guard_step_end(void *ucontext);

#endif
