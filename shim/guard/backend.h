/* backend.h - the guard's two ways of shutting memory, behind one face.
 *
 * Every transition runs one pipeline (refresh.c): the classes are brought up
 * to date, the backend follows them, the pages the page tables must close
 * are computed (wanted.c) and applied, and the backend does the calling
 * thread's share. A fault goes to the backend first (fault.c), then, when it
 * did not decide, to the page tables' judging.
 *
 *   mprotect  the page tables do it all: every op is empty but on_fault,
 *             which leaves every protection-key fault to the program
 *             (backend_mprotect.c)
 *   keys      classes with pages of their own get protection keys; a
 *             transition writes each thread's PKRU and the page tables keep
 *             what keys cannot (shared pages, a patch, standing aside):
 *             keys.c, keys_patch.c, keys_fault.c, keys_follow.c, threads.c
 *
 * The backend is chosen once, at start (start.c), before the guard is on;
 * a keys backend that gave its keys back (a device that protects managed
 * memory itself, a program that wants every key) stays the backend and
 * behaves as mprotect's. Every op runs under the model lock except on_fault,
 * which is async-signal-safe.
 */
#ifndef AC_GUARD_BACKEND_H
#define AC_GUARD_BACKEND_H

#include <stdbool.h>
#include <stdint.h>

#include "guard.h"
#include "ranges.h"

struct ac_guard_backend {
  const char *name;
  /* At a transition, the classes up to date (any_busy: some stream is
   * busy): the backend follows them - laying out or patching its keys, and
   * giving up those a running thread disagrees with. */
  void (*follow)(bool any_busy);
  /* Before the page tables' protection is settled: pages a judged fault
   * let go get the backend's protection back. */
  void (*restore_lifted)(void);
  /* After the page tables are right, and at a release of the model lock
   * with nothing to refresh: the calling thread's own share (its PKRU). */
  void (*transition)(void);
  /* Whether no thread can touch a page of [start, end): each is in
   * mprotected (normalised) or shut by the backend itself. */
  bool (*pages_shut)(const struct range_list *mprotected, uintptr_t start, uintptr_t end);
  /* The pages the backend shuts itself, beyond the page tables (normalised). */
  void (*shut_pages)(struct range_list *out);
  /* Memory goes back to the driver: the backend lets go of its pages. */
  void (*forget)(uintptr_t start, uintptr_t end);
  /* A fault at a (pkey: the key the kernel named, or -1; a report the
   * thread's PKRU shows stale was retried before): true with *claim
   * when the backend decided it, false to judge it by the page tables. */
  bool (*on_fault)(uintptr_t a, bool is_write, uintptr_t pc, int pkey, void *ucontext,
                   enum ac_guard_claim *claim);
  /* In a forked child: the backend protects nothing the child can use. */
  void (*after_fork_child)(void);
  /* With --verbose: what the backend did, one line or none. */
  void (*print_stats)(void);
};

extern const struct ac_guard_backend ac_guard_mprotect_backend, ac_guard_keys_backend;

#endif
