/* guard_classes.h - the page guard's classes of managed memory, for the
 * refresh side (guard.c): every managed byte, the globally attached ranges,
 * the ranges single-attached to each stream, and the allocations whose attach
 * the host has not seen complete (judged one by one). The lists are
 * normalised byte ranges (ranges.h). Everything here is under ac_model_lock.
 */
#ifndef AC_GUARD_CLASSES_H
#define AC_GUARD_CLASSES_H

#include <stdbool.h>
#include <stddef.h>

#include "model.h"
#include "ranges.h"

/* Brings the classes up to date with the model; the lists below are valid
 * until the model next changes. The first call groups every allocation;
 * later ones merge what moved since. */
void ac_guard_classes_update(void);

/* Every managed allocation not being freed. */
const struct range_list *ac_guard_classes_all_managed(void);
/* The globally attached ones (their attach, if any, known complete). */
const struct range_list *ac_guard_classes_global(void);
/* Calls fn for each stream with memory single-attached to it, with those
 * ranges: every such stream, or (busy_only) those busy now - found through
 * whichever is shorter, the busy streams or the classes. */
void ac_guard_classes_for_each_stream(bool busy_only,
                                      void (*fn)(const struct ac_stream *s,
                                                 const struct range_list *ranges, void *ctx),
                                      void *ctx);
/* The allocations with an attach not known complete; *count of them. */
struct ac_alloc *const *ac_guard_classes_pending(size_t *count);

/* Forgets every class (a forked child's model is a new one). */
void ac_guard_classes_reset(void);

#endif
