/* test_guard_deferred.c - accesses judged late (shim/guard/deferred.c): a
 * handler's pushes are drained in order, those a handler makes during the
 * drain included, and what did not fit is counted, never lost silently. */
#include <signal.h>
#include <string.h>

#include "../../shim/guard/deferred.h"
#include "test.h"

static struct ac_deferred queue;
static uintptr_t seen[64];
static int seen_count;

static bool push(uintptr_t addr) {
  struct ac_deferred_access a;
  memset(&a, 0, sizeof a);
  a.addr = addr;
  a.is_write = addr & 1;
  a.stack.depth = 1;
  a.stack.pc[0] = (void *)(addr + 0x100);
  return ac_deferred_push(&queue, &a);
}

/* A handler pushes while the drain is judging: the next address. */
static volatile uintptr_t handler_pushes;
static void on_signal(int sig) {
  (void)sig;
  push(handler_pushes);
}

static void record(const struct ac_deferred_access *a, void *ctx) {
  (void)ctx;
  seen[seen_count++] = a->addr;
  if (a->addr == 0x2000) { /* a signal lands while this one is judged */
    handler_pushes = 0x3001;
    raise(SIGUSR1);
  }
}

int main(void) {
  signal(SIGUSR1, on_signal);
  CHECK(!ac_deferred_pending(&queue));

  /* In order, then empty. */
  push(0x1000), push(0x1001);
  CHECK(ac_deferred_pending(&queue));
  CHECK(ac_deferred_drain(&queue, record, NULL) == 0);
  CHECK(seen_count == 2 && seen[0] == 0x1000 && seen[1] == 0x1001);
  CHECK(!ac_deferred_pending(&queue));

  /* A handler's push during the drain is drained too, after the others. */
  seen_count = 0;
  push(0x2000), push(0x2001);
  CHECK(ac_deferred_drain(&queue, record, NULL) == 0);
  CHECK(seen_count == 3 && seen[0] == 0x2000 && seen[1] == 0x2001 && seen[2] == 0x3001);
  CHECK(!ac_deferred_pending(&queue));

  /* The same access again - a handler that runs again while its thread
   * stays inside the shim - waits once, and takes no room. */
  seen_count = 0;
  for (int i = 0; i < 3 * AC_DEFERRED_MAX; i++)
    CHECK(push(0x5000));
  CHECK(push(0x5001)); /* the same address written: another access */
  CHECK(ac_deferred_drain(&queue, record, NULL) == 0);
  CHECK(seen_count == 2 && seen[0] == 0x5000 && seen[1] == 0x5001);

  /* Past the room: counted as dropped, once; the rest kept. */
  seen_count = 0;
  for (uintptr_t i = 0; i < AC_DEFERRED_MAX + 3; i++)
    push(0x4000 + i * 2);
  CHECK(ac_deferred_drain(&queue, record, NULL) == 3);
  CHECK(seen_count == AC_DEFERRED_MAX &&
        seen[AC_DEFERRED_MAX - 1] == 0x4000 + 2 * (AC_DEFERRED_MAX - 1));
  CHECK(ac_deferred_drain(&queue, record, NULL) == 0);
  CHECK(seen_count == AC_DEFERRED_MAX);
  return TEST_SUMMARY("test_guard_deferred");
}
