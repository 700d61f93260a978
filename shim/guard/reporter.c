/* reporter.c - findings made in the SIGSEGV handler, reported later.
 *
 * The handler may not format or write (neither is async-signal-safe), so it
 * copies each finding into a fixed ring and wakes a reporter thread through a
 * futex; the thread, and the exit-time drain, hand them to the report sink.
 * The reporter holds no descriptor: a program that closes every descriptor
 * (a daemon's close_range) neither silences it nor receives its wake-ups in
 * a file of its own that took the number.
 * When a storm of faults fills the ring, the handler waits for the reporter
 * rather than drop a finding the report could have kept, for as long as the
 * reporter makes progress (up to 30 s); only a reporter stalled for 2 s
 * loses findings, and they are counted.
 */
#define _GNU_SOURCE
#include <signal.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "repair.h"
#include "shim.h"
#include "sys.h"

#define RING_SIZE 256
/* How long a handler waits for room in a full ring while the reporter makes
 * no progress, in 1 ms steps; and in all. */
#define STALLED_REPORTER_MS 2000
#define FULL_RING_WAIT_MAX_MS 30000

static struct ac_finding ring[RING_SIZE]; /* under ac_model_lock */
/* Written under ac_model_lock, always by atomic stores: the reporter and the
 * handler's wait read them without it (anything_to_drain). */
static size_t ring_count;
static unsigned long dropped;
static unsigned long drained; /* findings taken from the ring so far */
static int reporter_running;  /* atomic */
/* Moved at every wake-up; the reporter sleeps on it (a futex) while it is
 * what the reporter last saw. Async-signal-safe to move and wake. */
static unsigned wake_count;
static __thread bool draining;      /* this thread reports a batch now */
static __thread bool is_reporter;   /* this thread is the reporter */
static __thread unsigned left_here; /* findings this thread's handler left */

void ac_guard_wake_reporter(void) {
  if (!__atomic_load_n(&reporter_running, __ATOMIC_ACQUIRE)) return;
  __atomic_add_fetch(&wake_count, 1, __ATOMIC_RELEASE);
  ac_sys_futex_wake(&wake_count, 1);
}

static void sleep_one_ms(void) {
  ac_sys_sleep_ms(1); /* not through the shim's own nanosleep */
}

/* Model lock held; may release and retake it while the ring is full. */
struct ac_finding *ac_guard_ring_slot_locked(void) {
  AC_ASSERT_MODEL_HELD();
  unsigned long progress = drained;
  for (int stalled = 0, waited = 0;
       ring_count == RING_SIZE && stalled < STALLED_REPORTER_MS && waited < FULL_RING_WAIT_MAX_MS;
       waited++) {
    if (!__atomic_load_n(&reporter_running, __ATOMIC_ACQUIRE)) break;
    ac_guard_wake_reporter();
    ac_model_leave_as_is();
    sleep_one_ms();
    ac_model_enter();
    stalled = drained == progress ? stalled + 1 : 0;
    progress = drained;
  }
  if (ring_count == RING_SIZE) {
    __atomic_store_n(&dropped, dropped + 1, __ATOMIC_RELEASE);
    return NULL;
  }
  return &ring[ring_count];
}

void ac_guard_ring_commit_locked(void) {
  AC_ASSERT_MODEL_HELD();
  __atomic_store_n(&ring_count, ring_count + 1, __ATOMIC_RELEASE);
  left_here++;
  ac_model_pin_streams(ac_model); /* the finding's timeline reads its streams' records */
  ac_guard_wake_reporter();
}

/* The drain lock (base/locks.inc) is held while a batch is reported, so the
 * exit-time drain waits for a batch the reporter thread has taken but not
 * yet written, and fork copies no batch half-written. */
/* Batches taken from the ring and not yet written (atomic): the handler's
 * wait below reads it without a lock. */
static int batches_in_flight;

/* Whether the ring holds a finding, or a batch is being written (no lock). */
static bool anything_to_drain(void) {
  return __atomic_load_n(&ring_count, __ATOMIC_ACQUIRE) ||
         __atomic_load_n(&batches_in_flight, __ATOMIC_ACQUIRE) ||
         __atomic_load_n(&dropped, __ATOMIC_ACQUIRE);
}

void ac_guard_drain(void) {
  static struct ac_finding batch[RING_SIZE];
  size_t n;
  unsigned long lost;
  ac_repair_report_given_up(); /* at exit too: the reporter may not have run since */
  if (!anything_to_drain()) return;
  ac_lock(AC_LOCK_drain);
  ac_model_enter();
  __atomic_add_fetch(&batches_in_flight, 1, __ATOMIC_ACQ_REL);
  n = ring_count;
  memcpy(batch, ring, n * sizeof batch[0]);
  __atomic_store_n(&ring_count, 0, __ATOMIC_RELEASE);
  drained += n;
  lost = dropped;
  __atomic_store_n(&dropped, 0, __ATOMIC_RELEASE);
  ac_model_leave_as_is();
  draining = true;
  for (size_t i = 0; i < n; i++)
    ac_emit_finding(&batch[i], AC_DRIVER_RETURNED, CUDA_SUCCESS);
  draining = false;
  if (n) {
    ac_model_enter();
    ac_model_unpin_streams(ac_model, n);
    ac_model_leave_as_is();
  }
  if (lost) ac_report_unjudged(lost, "the reporter could not keep up");
  __atomic_sub_fetch(&batches_in_flight, 1, __ATOMIC_ACQ_REL);
  ac_unlock(AC_LOCK_drain);
}

bool ac_guard_draining(void) {
  return draining;
}

bool ac_guard_is_reporter(void) {
  return is_reporter;
}

unsigned ac_guard_findings_left_here(void) {
  return left_here;
}

void ac_guard_wait_reported(int max_ms) {
  for (int waited = 0; waited < max_ms && __atomic_load_n(&reporter_running, __ATOMIC_ACQUIRE);
       waited++) {
    if (__atomic_load_n(&ring_count, __ATOMIC_ACQUIRE) == 0 &&
        __atomic_load_n(&batches_in_flight, __ATOMIC_ACQUIRE) == 0)
      return;
    ac_guard_wake_reporter();
    sleep_one_ms();
  }
}

static void *reporter(void *unused) {
  (void)unused;
  is_reporter = true;
  for (;;) {
    unsigned seen = __atomic_load_n(&wake_count, __ATOMIC_ACQUIRE);
    /* A fork waiting for the drain lock goes first: taken batch after batch
     * while a thread keeps making findings, the lock would never be free
     * when the forking thread looks (a fork storm hung that way). */
    while (ac_locks_fork_pending())
      sleep_one_ms();
    ac_repair_report_given_up(); /* a faulting thread gave a repair up: said here */
    if (anything_to_drain())
      ac_guard_drain();
    else /* returns at once when a wake-up came since seen was read */
      ac_sys_futex_wait(&wake_count, seen, NULL);
  }
  return NULL;
}

void ac_guard_reporter_start(void) {
  if (ac_own_thread_start(reporter)) __atomic_store_n(&reporter_running, 1, __ATOMIC_RELEASE);
}

/* In a forked child the reporter thread did not survive: a new one, if the
 * parent had one. */
void ac_guard_reporter_after_fork_child(void) {
  ring_count = 0;
  if (!__atomic_exchange_n(&reporter_running, 0, __ATOMIC_ACQ_REL)) return;
  ac_guard_reporter_start();
}
