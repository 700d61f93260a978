/* class_pending.c - the page guard's allocations with an attach still
 * pending (class_pending.h).
 *
 * A pending attach's verdict depends on more than one stream (the work
 * queued before the attach, and the stream it goes to), so these
 * allocations are not a class with one verdict: each keeps its own, judged
 * again only when it moved (made pending, attached again) - a program
 * attaching thousands without a synchronisation has thousands pending, and a
 * transition must not look at each. Those forbidden now are also a class of
 * their own (forbidden), so that a window of pages finds them by a search.
 */
#include <stdlib.h>

#include "grow.h"
#include "class_log.h"
#include "class_pending.h"
#include "classes.h"

/* The verdict at the last flips, or none yet. */
enum verdict { ALLOWED, FORBIDDEN, UNJUDGED };

static struct {
  struct ac_alloc **list; /* a->guard_tag == AC_TAG_PENDING | its index */
  size_t count, cap;
  uint8_t *verdicts; /* beside list */
  size_t verdicts_cap;
  /* The indices that turned UNJUDGED since the last flips (some stale:
   * judged since, or beyond count). */
  uint32_t *unjudged;
  size_t unjudged_count, unjudged_cap;
  bool unjudged_lost;     /* memory ran out: every pending one is looked at */
  struct class forbidden; /* the bytes of those whose verdict is FORBIDDEN */
} pend;

static size_t index_of(const struct ac_alloc *a) {
  return a->guard_tag & ~AC_TAG_PENDING;
}

/* list[i]'s verdict, its bytes in or out of forbidden with it. */
static void set_verdict(size_t i, uint8_t verdict) {
  if ((pend.verdicts[i] == FORBIDDEN) != (verdict == FORBIDDEN))
    ac_class_log_move(&pend.forbidden,
                      verdict == FORBIDDEN ? &pend.forbidden.added : &pend.forbidden.removed,
                      pend.list[i]);
  pend.verdicts[i] = verdict;
}

/* list[i] is to be judged at the next flips. */
static void to_judge(size_t i) {
  pend.verdicts[i] = UNJUDGED;
  if (pend.unjudged_lost) return;
  /* More than there are pending allocations: a look at each is no dearer. */
  if (pend.unjudged_count <= pend.count + 64 &&
      AC_GROW(pend.unjudged, pend.unjudged_count, pend.unjudged_cap, 16))
    pend.unjudged[pend.unjudged_count++] = (uint32_t)i;
  else
    pend.unjudged_lost = true;
}

bool ac_pending_add(struct ac_alloc *a) {
  if (!AC_GROW(pend.list, pend.count, pend.cap, 16) ||
      !AC_GROW(pend.verdicts, pend.count, pend.verdicts_cap, 16))
    return false;
  a->guard_tag = AC_TAG_PENDING | (uint32_t)pend.count;
  pend.list[pend.count] = a;
  to_judge(pend.count++); /* it moved: its pages are looked at anyway */
  return true;
}

void ac_pending_remove(struct ac_alloc *a) {
  size_t i = index_of(a);
  set_verdict(i, ALLOWED); /* its bytes leave forbidden */
  pend.list[i] = pend.list[--pend.count];
  pend.verdicts[i] = pend.verdicts[pend.count];
  if (i == pend.count) return;
  pend.list[i]->guard_tag = AC_TAG_PENDING | (uint32_t)i;
  if (pend.verdicts[i] == UNJUDGED) to_judge(i); /* it moved down to i */
}

void ac_pending_rejudge(struct ac_alloc *a) {
  set_verdict(index_of(a), ALLOWED); /* its bytes leave forbidden */
  to_judge(index_of(a));
}

bool ac_pending_forbidden(const struct ac_alloc *a) {
  return pend.verdicts[index_of(a)] == FORBIDDEN;
}

static void judge(size_t i, bool (*forbidden)(const struct ac_alloc *a),
                  void (*fn)(const struct ac_alloc *a, void *ctx), void *ctx) {
  uint8_t now = forbidden(pend.list[i]) ? FORBIDDEN : ALLOWED;
  if (pend.verdicts[i] != UNJUDGED && now != pend.verdicts[i]) fn(pend.list[i], ctx);
  set_verdict(i, now);
}

void ac_guard_classes_pending_flips(bool all, bool (*forbidden)(const struct ac_alloc *a),
                                    void (*fn)(const struct ac_alloc *a, void *ctx), void *ctx) {
  if (all || pend.unjudged_lost) {
    for (size_t i = 0; i < pend.count; i++)
      if (all || pend.verdicts[i] == UNJUDGED) judge(i, forbidden, fn, ctx);
  } else {
    for (size_t k = 0; k < pend.unjudged_count; k++) {
      size_t i = pend.unjudged[k];
      if (i < pend.count && pend.verdicts[i] == UNJUDGED) judge(i, forbidden, fn, ctx);
    }
  }
  pend.unjudged_count = 0;
  pend.unjudged_lost = false;
}

void ac_pending_forget_flips(void) {
  for (size_t i = 0; i < pend.count; i++)
    pend.verdicts[i] = ALLOWED;
  pend.unjudged_count = 0;
  pend.unjudged_lost = false;
  pend.forbidden.ranges.n = pend.forbidden.added.n = pend.forbidden.removed.n = 0;
}

const struct range_list *ac_guard_classes_forbidden_pending(const struct range_list *window) {
  return ac_class_bytes(&pend.forbidden, window);
}

struct ac_alloc *const *ac_guard_classes_pending(size_t *count) {
  *count = pend.count;
  return pend.list;
}

void ac_pending_reset(void) {
  ac_class_free(&pend.forbidden);
  free(pend.unjudged);
  pend.unjudged = NULL;
  pend.unjudged_cap = pend.unjudged_count = pend.count = 0;
  pend.unjudged_lost = false;
}
