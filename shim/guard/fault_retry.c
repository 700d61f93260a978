/* fault_retry.c - whether a fault the page guard let go is retried.
 *
 * The guard answers AC_GUARD_RETRY when, by the time it held the lock, the
 * faulting page was no longer one it protects: a transition of another
 * thread let it go between the fault and the judging. The access runs
 * again. Faulting again at the same address under the same protection of
 * the guard's (its epoch: it changes at every transition) means the page was
 * let go and still faults - the driver refusing it, as on a device without
 * concurrent managed access while its GPU owns the memory - and after a few
 * retries the fault is the program's own, as it would be without the guard.
 * Faulting again under another protection is threads racing: one
 * transition protected the page anew and the next let it go before the fault
 * was judged. Those retries must not end in a crash after a few lost races
 * (8 threads synchronising on a 16-core host lost 4 in a row in one run of
 * six); a far larger bound still ends a refusal that other threads'
 * transitions keep crossing. Async-signal-safe: plain arithmetic. */
#include "fault_retry.h"

bool ac_fault_retry(struct ac_fault_retry *r, const void *addr, unsigned epoch) {
  bool again = addr == r->addr;
  r->same_epoch = again && epoch == r->epoch ? r->same_epoch + 1 : 0;
  r->same_addr = again ? r->same_addr + 1 : 0;
  r->addr = addr;
  r->epoch = epoch;
  if (r->same_epoch <= AC_FAULT_RETRY_SAME_EPOCH && r->same_addr <= AC_FAULT_RETRY_SAME_ADDR)
    return true;
  r->addr = 0;
  return false;
}
