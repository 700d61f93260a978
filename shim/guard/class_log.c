/* class_log.c - one class of the page guard's (class_log.h): its list as of
 * the last merge and the sorted logs of what moved since. A range that comes
 * back to where it left cancels out; the list is merged with its logs when it
 * is read whole, or once keeping the logs sorted has moved as many entries in
 * memory as a merge would (n, the list's length) - about 2 x sqrt(n) logged
 * moves when they come in random order, where each moves half the log - or
 * the logs hold n / 2 ranges, when they come in address order and move
 * nothing (classes.c says why). */
#include <stdlib.h>
#include <string.h>

#include "class_log.h"
#include "grow.h"

/* The index of the last range of l starting at or below addr, or l->n if none. */
static size_t range_at_or_below(const struct range_list *l, uintptr_t addr) {
  size_t after = range_first_starting_after(l, addr);
  return after ? after - 1 : l->n;
}

/* Room for one more range at index i (l grows by one; r[i] is then free). */
static bool open_at(struct range_list *l, size_t i) {
  if (!range_push(l, 0, 1)) return false;
  memmove(&l->r[i + 1], &l->r[i], (l->n - 1 - i) * sizeof l->r[0]);
  return true;
}

static void close_at(struct range_list *l, size_t i) {
  memmove(&l->r[i], &l->r[i + 1], (l->n - 1 - i) * sizeof l->r[0]);
  l->n--;
}

/* Takes x, which lies inside one range of l, out of it. */
static void cut_one(struct range_list *l, struct range x) {
  size_t i = range_at_or_below(l, x.start);
  if (i == l->n || x.end > l->r[i].end) return; /* not there: nothing to cut */
  struct range *r = &l->r[i];
  if (r->start == x.start && r->end == x.end) {
    close_at(l, i);
  } else if (r->start == x.start) {
    r->start = x.end;
  } else if (r->end == x.end) {
    r->end = x.start;
  } else if (open_at(l, i + 1)) { /* x splits it in two */
    l->r[i + 1] = (struct range){x.end, l->r[i].end};
    l->r[i].end = x.start;
  }
}

/* Adds x, which meets no range of l but may touch one on either side. */
static void put_one(struct range_list *l, struct range x) {
  size_t below = range_at_or_below(l, x.start), i = below == l->n ? 0 : below + 1;
  bool joins_left = below != l->n && l->r[below].end == x.start;
  bool joins_right = i < l->n && l->r[i].start == x.end;
  if (joins_left && joins_right) {
    l->r[below].end = l->r[i].end;
    close_at(l, i);
  } else if (joins_left) {
    l->r[below].end = x.end;
  } else if (joins_right) {
    l->r[i].start = x.start;
  } else if (open_at(l, i)) {
    l->r[i] = x;
  }
}

/* The index of the first range of log starting at or above start. */
static size_t log_position(const struct range_list *log, uintptr_t start) {
  /* Moves mostly come in address order (a loop over allocations made in
   * turn): past the last entry, with no search. */
  if (!log->n || log->r[log->n - 1].start < start) return log->n;
  size_t below = range_at_or_below(log, start);
  if (below == log->n) return 0;
  return log->r[below].start == start ? below : below + 1;
}

/* Takes x out of log if it is there exactly; adds to *shifted the entries
 * that moved. */
static bool log_take(struct range_list *log, struct range x, size_t *shifted) {
  size_t i = log_position(log, x.start);
  if (i == log->n || log->r[i].start != x.start || log->r[i].end != x.end) return false;
  memmove(&log->r[i], &log->r[i + 1], (log->n - 1 - i) * sizeof log->r[0]);
  *shifted += log->n - 1 - i;
  log->n--;
  return true;
}

static void log_insert(struct range_list *log, struct range x, size_t *shifted) {
  size_t i = log_position(log, x.start);
  if (!range_push(log, 0, 1)) return;
  memmove(&log->r[i + 1], &log->r[i], (log->n - 1 - i) * sizeof log->r[0]);
  *shifted += log->n - 1 - i;
  log->r[i] = x;
}

/* The list with its logs applied. Short logs are applied in place, a range
 * at a time; long ones in one pass over the list. */
static void merge(struct class *c) {
  static struct range_list rest;
  if (c->added.n + c->removed.n <= 16) {
    for (size_t i = 0; i < c->removed.n; i++)
      cut_one(&c->ranges, c->removed.r[i]);
    for (size_t i = 0; i < c->added.n; i++)
      put_one(&c->ranges, c->added.r[i]);
  } else if (!c->added.n) { /* one pass, the result swapped in rather than copied back */
    range_subtract(&rest, &c->ranges, &c->removed);
    range_swap(&c->ranges, &rest);
  } else if (!c->removed.n) {
    range_union(&rest, &c->ranges, &c->added);
    range_swap(&c->ranges, &rest);
  } else {
    range_subtract(&rest, &c->ranges, &c->removed);
    range_union(&c->ranges, &rest, &c->added);
  }
  c->added.n = c->removed.n = 0;
  c->shifted = 0;
}

/* x lies beyond every range c lists or has logged as added: it can go
 * straight onto the end of the list, which stays sorted and normalised, with
 * nothing to merge - as allocations mostly come, in address order. */
static bool beyond_all(const struct class *c, struct range x) {
  return (!c->ranges.n || x.start >= c->ranges.r[c->ranges.n - 1].end) &&
         (!c->added.n || x.start >= c->added.r[c->added.n - 1].end);
}

/* a's bytes join (log: c's added) or leave (removed) class c. */
void ac_class_log_move(struct class *c, struct range_list *log, const struct ac_alloc *a) {
  struct range x = {a->base, a->base + a->size};
  if (log == &c->added && beyond_all(c, x)) {
    range_push_in_order(&c->ranges, x.start, x.end);
    return;
  }
  if (!log_take(log == &c->added ? &c->removed : &c->added, x, &c->shifted))
    log_insert(log, x, &c->shifted);
  size_t logged = c->added.n + c->removed.n;
  if (logged > 64 && (c->shifted > c->ranges.n || 2 * logged > c->ranges.n)) merge(c);
}

/* All of c's bytes: its logs merged first. */
const struct range_list *ac_class_all(struct class *c) {
  if (c->added.n || c->removed.n) merge(c);
  return &c->ranges;
}

/* c's bytes inside window (sorted and normalised), read through its logs,
 * which stay; the result lasts until the next call. */
static const struct range_list *class_within(struct class *c, const struct range_list *window) {
  static struct range_list listed, left, rest, joined, out;
  range_clip(&listed, &c->ranges, window);
  if (!c->added.n && !c->removed.n) return &listed;
  range_clip(&left, &c->removed, window);
  range_subtract(&rest, &listed, &left);
  range_clip(&joined, &c->added, window);
  range_union(&out, &rest, &joined);
  return &out;
}

/* c's bytes: all (window NULL) or those inside window. */
const struct range_list *ac_class_bytes(struct class *c, const struct range_list *window) {
  return window ? class_within(c, window) : ac_class_all(c);
}

/* Empties c. */
void ac_class_free(struct class *c) {
  range_free(&c->ranges);
  range_free(&c->added);
  range_free(&c->removed);
  c->shifted = 0;
}
