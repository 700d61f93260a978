/* repair.h - --on-error repair: the program is made to obey the attach rules
 * at run time, and each breach is reported all the same.
 *
 * Layout of shim/repair/:
 *   repair.h    the face: what the rest of the shim asks of repair
 *   order.c     a re-attach not ordered after the old stream's work (AC401),
 *               or a kernel given memory attached to another stream
 *               (AC301), is ordered after that stream's work by an event,
 *               before it is made
 *   cpu_wait.c  a CPU access to memory that busy work owns (AC201, AC202)
 *               waits until that work has completed: a thread of the shim's
 *               synchronises with it while the faulting thread waits in its
 *               SIGSEGV handler (a handler may make no driver call), or the
 *               calling thread does it itself before a system call
 *
 * A repair that cannot finish within --repair-wait seconds (a host function
 * on the awaited stream waits for something the faulting thread holds, as it
 * would had the program synchronised there) is given up: the access goes on
 * unrepaired, as under --on-error report, the report says so, and repair is
 * off for the rest of the process.
 */
#ifndef AC_REPAIR_H
#define AC_REPAIR_H

#include <stdbool.h>
#include <stdint.h>

#define __CUDA_API_VERSION_INTERNAL 1
#include <cuda.h>

#include "finding.h"

/* Whether a finding of rule, made by a CPU access of a thread that runs no
 * host function (CUDA calls are not allowed there), is to be repaired:
 * --on-error repair, a rule repair knows, and repair not given up.
 * Async-signal-safe. */
bool ac_repair_cpu_access_wanted(enum ac_rule_id rule, bool in_host_function);

/* In the SIGSEGV handler, no lock of the shim's held: asks the repairer to
 * wait for the work that keeps the CPU from the memory at addr, and waits
 * for it (at most --repair-wait seconds). True when the CPU may touch it
 * now; false when the repair was not made (the caller lets the access
 * through as under report). Async-signal-safe. */
bool ac_repair_cpu_access_in_handler(uintptr_t addr, enum ac_rule_id rule);

/* The same in normal context (a system call's buffer): the calling thread
 * waits for the work itself. No lock held. */
bool ac_repair_cpu_access_now(uintptr_t addr, enum ac_rule_id rule);

/* Whether the attach finding f (AC401) is to be repaired: --on-error repair,
 * and a thread that runs no host function. */
bool ac_repair_attach_wanted(const struct ac_finding *f);
/* Normal context, no lock held, before the attach is forwarded: stream (as
 * the program passed it; per_thread: through a _ptsz entry point) is made
 * to wait for the work of f's busy stream. True when it was. */
bool ac_repair_attach_order(const struct ac_finding *f, CUstream stream, bool per_thread);

/* Before a launch, an asynchronous copy, set or stream memory operation
 * (api), or a graph launch is forwarded (normal context, no lock held), under
 * --on-error repair: its stream is made to wait for the work of each stream
 * that memory it is given is single-attached to (AC301). Its AC301 findings
 * then say so (ac_repair_work_ordered) until the wrapper calls
 * ac_repair_work_done; a batch asks for each of its operations first. */
void ac_repair_launch_order(CUfunction func, CUstream stream, bool per_thread, void **params,
                            void **extra);
void ac_repair_copy_order(const char *api, CUstream stream, bool per_thread, uintptr_t dst,
                          uintptr_t src);
void ac_repair_graph_order(CUgraphExec exec, CUstream stream, bool per_thread);
bool ac_repair_work_ordered(const struct ac_finding *f);
void ac_repair_work_done(void);

/* A wrapper's frame under --on-error repair: Order (an ac_repair_*_order
 * call) before the call is forwarded, and the marks its findings read
 * cleared after they were made. */
#define AC_REPAIR_BEFORE(Order)                                                                    \
  bool ac_repairing_ = AC_UNLIKELY(ac_opts.on_error == AC_ON_ERROR_REPAIR);                        \
  if (ac_repairing_) Order
#define AC_REPAIR_AFTER()                                                                          \
  if (ac_repairing_) ac_repair_work_done()

/* Normal context: a repair given up since last asked is reported (the
 * reporter thread, or the exit's drain, call it). */
void ac_repair_report_given_up(void);

/* Start-up, when --on-error repair: the repairer thread. */
void ac_repair_start(void);
/* In a forked child: the repairer did not survive, and no access of the
 * child's is held (the guard protects nothing there). */
void ac_repair_after_fork_child(void);

#endif
