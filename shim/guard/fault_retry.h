/* fault_retry.h - whether a fault the page guard let go (AC_GUARD_RETRY) is
 * run again or goes to the program as its own: threads racing the guard's
 * transitions are retried, a page the driver keeps refusing is not. */
#ifndef AC_FAULT_RETRY_H
#define AC_FAULT_RETRY_H

#include <stdbool.h>

/* A thread's retries so far (zero-initialised: none). */
struct ac_fault_retry {
  const void *addr; /* the address last retried */
  unsigned epoch;   /* the guard's protection it was let go under */
  int same_epoch;   /* retries of addr in a row under that protection */
  int same_addr;    /* retries of addr in a row under any */
};

/* At most this many retries in a row of one address under one protection
 * of the guard's, and under any. */
#define AC_FAULT_RETRY_SAME_EPOCH 3
#define AC_FAULT_RETRY_SAME_ADDR 1000

/* Whether the access at addr, let go under the guard's protection epoch,
 * runs again; false (and the count starts over) when it is the program's. */
bool ac_fault_retry(struct ac_fault_retry *r, const void *addr, unsigned epoch);

#endif
