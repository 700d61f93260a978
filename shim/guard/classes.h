/* classes.h - the page guard's classes of managed memory, for the
 * refresh side (refresh.c): every managed byte, the globally attached ranges,
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

/* Brings the classes up to date with the model (the first call groups every
 * allocation; later ones find them kept up to date as the model changed).
 *
 * The lists below are a class's bytes: all of them (window NULL), or those
 * inside window (sorted, normalised pages), which costs a few searches
 * however large the class. A list lasts until the next call here or the
 * model next changes. */
void ac_guard_classes_update(void);

/* Every managed allocation not being freed. */
const struct range_list *ac_guard_classes_all_managed(const struct range_list *window);
/* The globally attached ones (their attach, if any, known complete). */
const struct range_list *ac_guard_classes_global(const struct range_list *window);
/* Calls fn for each stream with memory single-attached to it, with those
 * ranges: every such stream, or (busy_only) those busy now - found through
 * whichever is shorter, the busy streams or the classes. */
void ac_guard_classes_for_each_stream(bool busy_only, const struct range_list *window,
                                      void (*fn)(const struct ac_stream *s,
                                                 const struct range_list *ranges, void *ctx),
                                      void *ctx);
/* The same for the busy ones, without their bytes. */
void ac_guard_classes_for_each_busy_stream(void (*fn)(const struct ac_stream *s, void *ctx),
                                           void *ctx);
/* The allocations with an attach not known complete; *count of them. */
struct ac_alloc *const *ac_guard_classes_pending(size_t *count);

/* ---- what changed since the wanted pages were last brought up to date ----
 * (wanted.c; each of these is for it alone) */

/* The bytes of each allocation that changed class since the last clear
 * (normalised or not); *all when that is not known - too many to be worth
 * listing, or everything was grouped anew. */
const struct range_list *ac_guard_classes_moved(bool *all);
void ac_guard_classes_moved_clear(void);
/* Calls fn for each stream class whose stream is busy now and was not at the
 * last call, or was and is not now (a stream class that went since is not
 * called: its members all moved). */
void ac_guard_classes_busy_flips(void (*fn)(const struct ac_stream *s,
                                            const struct range_list *ranges, void *ctx),
                                 void *ctx);
/* Judges the pending allocations - forbidden(a) now - that have no verdict
 * yet (they moved since: just became pending, or were attached again), or
 * (all) every one, and calls fn for each whose verdict changed; keeps the
 * verdicts (their bytes: ac_guard_classes_forbidden_pending). */
void ac_guard_classes_pending_flips(bool all, bool (*forbidden)(const struct ac_alloc *a),
                                    void (*fn)(const struct ac_alloc *a, void *ctx), void *ctx);
/* Under strict semantics with something busy: whether a's class forbids the
 * CPU a now - GLOBAL, a busy stream's, or pending with a forbidding verdict
 * (pending_flips has just run) - and a is in it whole. */
bool ac_guard_classes_forbid_now(const struct ac_alloc *a);
/* The bytes of the pending allocations those verdicts forbid. */
const struct range_list *ac_guard_classes_forbidden_pending(const struct range_list *window);
/* Nothing was busy: at the next call no class was busy before and no pending
 * allocation forbidden. */
void ac_guard_classes_forget_flips(void);

/* How many times an allocation changed class (or was grouped anew), ever. */
uint64_t ac_guard_classes_moves(void);
/* The bytes of each allocation that changed class since the last
 * ac_guard_classes_keys_followed, normalised; *all when more than a handful
 * of ranges, or everything was grouped anew (the protection keys, refresh.c). */
const struct range_list *ac_guard_classes_moved_for_keys(bool *all);
void ac_guard_classes_keys_followed(void);

/* How many ranges the classes' logs hold, not yet merged into their lists. */
size_t ac_guard_classes_unmerged(void);

/* Forgets every class (a forked child's model is a new one). */
void ac_guard_classes_reset(void);

#endif
