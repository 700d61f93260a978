/* class_queue.h - the page guard's moves of class that wait for the next
 * read of the classes (classes.c makes them).
 *
 * An attach moves its allocation twice - into pending, and into its
 * stream's class when the host sees it complete - and no class is read in
 * between unless a refresh has something to do: attaching allocation after
 * allocation to an idle stream skips every refresh (refresh.c), and the
 * synchronisation after settles them all. So the move of an allocation
 * already in a class is queued here, and made at the next read of the
 * classes (every reader calls ac_classes_catch_up first): an attach costs a
 * push, and its two moves one, from where the allocation was to where it is
 * by then. The classes read are the same as with every move made at once,
 * because a move is made from the model as it is at the read. A new
 * allocation's move stays immediate (the queue would otherwise hold every
 * allocation a program makes between two reads), and so does one that
 * leaves: a record is not freed while the queue names it, and no page of
 * memory being freed keeps a class it left. Under ac_model_lock.
 */
#ifndef AC_GUARD_CLASS_QUEUE_H
#define AC_GUARD_CLASS_QUEUE_H

#include <stdbool.h>
#include <stddef.h>

#include "model.h"

/* a's move joins the queue (a->guard_queued); false when memory ran out:
 * it is to be made now. */
bool ac_class_queue_push(struct ac_alloc *a);
/* How many moves wait. */
size_t ac_class_queue_count(void);
/* Makes every queued move with move(a), in the order they came, and
 * empties the queue. move may not queue another. */
void ac_class_queue_drain(void (*move)(struct ac_alloc *a, bool leaving));
/* Forgets the queue, its records too (a forked child's model is a new one). */
void ac_class_queue_reset(void);

/* classes.c: makes the queued moves; every reader of the classes calls it
 * first, class_pending.c's too. */
void ac_classes_catch_up(void);

#endif
