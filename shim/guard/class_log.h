/* class_log.h - one class of the page guard's (classes.c): a sorted list of
 * byte ranges and the logs of what moved in and out since it was last
 * merged, read through the logs. Under ac_model_lock. */
#ifndef AC_GUARD_CLASS_LOG_H
#define AC_GUARD_CLASS_LOG_H

#include "model.h"
#include "ranges.h"

/* One class: its list as of the last merge, and what moved since: exact
 * allocation ranges, each log sorted and disjoint, none in both (a range
 * logged into one while the other holds it cancels out). So what is removed
 * lies in the list, and what is added lies outside the list less removed. */
struct class {
  struct range_list ranges, added, removed;
  size_t shifted; /* log entries moved in memory since the last merge */
};

/* a's bytes join (log: c's added) or leave (removed) class c. */
void ac_class_log_move(struct class *c, struct range_list *log, const struct ac_alloc *a);
/* All of c's bytes: its logs merged first. */
const struct range_list *ac_class_all(struct class *c);
/* c's bytes: all (window NULL) or those inside window (sorted, normalised),
 * read through its logs, which stay; the result lasts until the next call. */
const struct range_list *ac_class_bytes(struct class *c, const struct range_list *window);
/* Empties c. */
void ac_class_free(struct class *c);

#endif
