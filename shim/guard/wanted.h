/* wanted.h - the pages the page guard's mprotect side protects, kept
 * up to date with the model from what changed (wanted.c). Everything
 * here is under ac_model_lock; the classes (classes.h) are up to date.
 */
#ifndef AC_GUARD_WANTED_H
#define AC_GUARD_WANTED_H

#include <stdbool.h>

#include "ranges.h"

/* Brings want - the result of the last call, normalised pages - up to date:
 * the pages holding memory the CPU may not touch now and none it may (none
 * when nothing is busy: any_busy false). */
void ac_guard_wanted_update(struct range_list *want, bool any_busy);
/* The same from scratch, whatever the last call gave (to check it). */
void ac_guard_wanted_from_scratch(struct range_list *want, bool any_busy);
/* The next update starts from scratch (the model is a new one). */
void ac_guard_wanted_reset(void);

#endif
