/* test_fault_retry.c - when a fault the page guard let go is retried
 * (shim/guard/fault_retry.c): a page faulting again under the guard's same
 * protection is retried a few times, then is the program's; one the guard
 * protected anew in between (threads racing its transitions) keeps being
 * retried. */
#include "../../shim/guard/fault_retry.h"
#include "test.h"

static int page_a, page_b;

/* Retries of addr in a row, each under the epoch first + i * step, until
 * one is refused or limit is reached. */
static int retried(const void *addr, unsigned first, unsigned step, int limit) {
  struct ac_fault_retry r = {0};
  int n = 0;
  while (n < limit && ac_fault_retry(&r, addr, first + (unsigned)n * step))
    n++;
  return n;
}

int main(void) {
  /* The driver refusing the page: the first try and 3 more, then the program's. */
  CHECK(retried(&page_a, 7, 0, 100) == AC_FAULT_RETRY_SAME_EPOCH + 1);
  /* Racing transitions: every retry under a new protection is run again -
   * 4 lost races in a row once ended in a crash. */
  CHECK(retried(&page_a, 7, 1, 100) == 100);
  /* ... but not without end. */
  CHECK(retried(&page_a, 7, 1, 5000) == AC_FAULT_RETRY_SAME_ADDR + 1);

  /* Another address starts the count over. */
  struct ac_fault_retry r = {0};
  for (int i = 0; i <= AC_FAULT_RETRY_SAME_EPOCH; i++)
    CHECK(ac_fault_retry(&r, &page_a, 1));
  CHECK(ac_fault_retry(&r, &page_b, 1));
  for (int i = 0; i <= AC_FAULT_RETRY_SAME_EPOCH; i++)
    CHECK(ac_fault_retry(&r, &page_a, 1));
  CHECK(!ac_fault_retry(&r, &page_a, 1));
  /* Refused, and the count starts over: the same page faulting again later
   * (the program's handler survived its fault) gets its tries anew. */
  CHECK(ac_fault_retry(&r, &page_a, 1));
  return TEST_SUMMARY("test_fault_retry");
}
