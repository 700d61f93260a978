/* test_guard_pins.c - the buffers of system calls in flight that no refresh
 * closes (shim/guard/pins.c): pinned pages rounded out to whole pages and
 * merged, a call's fifth buffer widening its fourth, slots given back, and
 * a call that finds the table full making every refresh close nothing new;
 * the hull of what the guard may ever close, outside which a buffer needs
 * no pin. */
#include <string.h>

#include "guard_internal.h"
#include "ranges.h"
#include "shim.h"
#include "test.h"

/* What the shim defines and the pins read. */
struct ac_guard_shared ac_guard;
struct ac_options ac_opts;

#define PAGE 4096u

static bool pinned_is(const struct range_list *l, uintptr_t start, uintptr_t end) {
  return l->n == 1 && l->r[0].start == start && l->r[0].end == end;
}

static void test_pages_of_buffers(void) {
  static struct range_list l;
  struct ac_guard_pins a = {0, {0}}, b = {0, {0}};
  CHECK(!ac_guard_pins_read(&l) && l.n == 0);
  ac_guard_pin(&a, 10 * PAGE + 100, 10 * PAGE + 200); /* inside one page */
  ac_guard_pin(&b, 11 * PAGE + 4000, 12 * PAGE + 10); /* across two */
  CHECK(!ac_guard_pins_read(&l) && pinned_is(&l, 10 * PAGE, 13 * PAGE));
  ac_guard_unpin(&a);
  CHECK(!ac_guard_pins_read(&l) && pinned_is(&l, 11 * PAGE, 13 * PAGE));
  ac_guard_unpin(&b);
  CHECK(!ac_guard_pins_read(&l) && l.n == 0 && a.n == 0 && b.n == 0);
}

/* readv(2) with more buffers than a call keeps slots: the last widens. */
static void test_many_buffers_of_one_call(void) {
  static struct range_list l;
  struct ac_guard_pins p = {0, {0}};
  for (uintptr_t i = 0; i < AC_GUARD_PINS_MAX; i++)
    ac_guard_pin(&p, (20 + 2 * i) * PAGE, (20 + 2 * i) * PAGE + 1);
  ac_guard_pin(&p, 40 * PAGE, 40 * PAGE + 1);
  CHECK(p.n == AC_GUARD_PINS_MAX);
  ac_guard_pins_read(&l);
  /* 20, 22, 24 alone; the fourth (26) widened to the fifth (40). */
  CHECK(l.n == 4 && l.r[3].start == 26 * PAGE && l.r[3].end == 41 * PAGE);
  ac_guard_unpin(&p);
  CHECK(!ac_guard_pins_read(&l) && l.n == 0);
}

/* 256 calls in flight, and one more: it finds no slot, and while it is in
 * flight the table says so. */
static void test_full_table(void) {
  static struct range_list l;
  static struct ac_guard_pins calls[257];
  memset(calls, 0, sizeof calls);
  for (int i = 0; i < 257; i++)
    ac_guard_pin(&calls[i], (uintptr_t)(100 + i) * PAGE, (uintptr_t)(100 + i) * PAGE + 1);
  CHECK(calls[256].n == 1 && calls[256].slot[0] < 0);
  CHECK(ac_guard_pins_read(&l) && pinned_is(&l, 100 * PAGE, 356 * PAGE));
  ac_guard_unpin(&calls[256]);
  CHECK(!ac_guard_pins_read(&l));
  for (int i = 0; i < 256; i++)
    ac_guard_unpin(&calls[i]);
  CHECK(!ac_guard_pins_read(&l) && l.n == 0);
}

/* Under --guard-shared-pages off nothing needs pinning. */
static void test_off(void) {
  static struct range_list l;
  struct ac_guard_pins p = {0, {0}};
  ac_opts.guard_shared_pages = false;
  ac_guard_pin(&p, PAGE, 2 * PAGE);
  CHECK(p.n == 0 && !ac_guard_pins_read(&l) && l.n == 0);
  ac_opts.guard_shared_pages = true;
}

/* A buffer meets the hull only once memory there was noted guardable, and
 * whole 64 KiB grains around it count: a page of any size that holds a
 * managed byte. The hull only grows. */
static void test_guardable(void) {
  const uintptr_t grain = 64u << 10;
  CHECK(!ac_guard_may_guard(0, UINTPTR_MAX / 2)); /* nothing is managed yet */
  ac_model_enter();
  ac_guard_note_guardable(100 * grain + 100, 100 * grain + 200);
  ac_model_leave_as_is();
  CHECK(ac_guard_may_guard(100 * grain + 150, 100 * grain + 151));
  CHECK(ac_guard_may_guard(100 * grain, 100 * grain + 1)); /* its page */
  CHECK(ac_guard_may_guard(101 * grain - 1, 101 * grain)); /* its grain */
  CHECK(!ac_guard_may_guard(101 * grain, 102 * grain));    /* beyond */
  CHECK(!ac_guard_may_guard(99 * grain, 100 * grain));     /* below */
  ac_model_enter();
  ac_guard_note_guardable(200 * grain, 200 * grain + 1);
  ac_model_leave_as_is();
  CHECK(ac_guard_may_guard(150 * grain, 150 * grain + 1)); /* a hull: between the two */
  CHECK(!ac_guard_may_guard(201 * grain, 202 * grain));
}

int main(void) {
  ac_guard.page_size = PAGE;
  ac_opts.guard_shared_pages = true;
  test_pages_of_buffers();
  test_many_buffers_of_one_call();
  test_full_table();
  test_off();
  test_guardable();
  ac_guard_pin(&(struct ac_guard_pins){0, {0}}, PAGE, 2 * PAGE);
  ac_guard_pins_after_fork_child(); /* a child forked while a call was in flight */
  static struct range_list l;
  CHECK(!ac_guard_pins_read(&l) && l.n == 0);
  return TEST_SUMMARY("test_guard_pins");
}
