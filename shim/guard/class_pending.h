/* class_pending.h - the page guard's allocations with an attach still
 * pending (classes.c keeps the other classes): their verdicts, judged again
 * only where something moved, and the bytes of those forbidden now as a
 * class of their own. What the rest of the guard asks of them is in
 * classes.h (ac_guard_classes_pending_flips, _forbidden_pending, _pending);
 * this is what classes.c asks. Under ac_model_lock. */
#ifndef AC_GUARD_CLASS_PENDING_H
#define AC_GUARD_CLASS_PENDING_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "model.h"
#include "ranges.h"

/* ac_alloc.guard_tag of a pending allocation: this bit | its index. */
#define AC_TAG_PENDING 0x80000000u

/* a joins the pending allocations, to be judged at the next flips (its tag
 * says where it is); false when memory ran out. */
bool ac_pending_add(struct ac_alloc *a);
/* a (pending) leaves them; its bytes leave the forbidden ones with it. */
void ac_pending_remove(struct ac_alloc *a);
/* a (pending) was attached again: judged again at the next flips. */
void ac_pending_rejudge(struct ac_alloc *a);
/* Whether a (pending) was forbidden when last judged. */
bool ac_pending_forbidden(const struct ac_alloc *a);
/* Every pending allocation allowed again, with nothing to judge. */
void ac_pending_forget_flips(void);
/* None pending (a fork's child, a regrouping). */
void ac_pending_reset(void);

#endif
