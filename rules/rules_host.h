/* rules_host.h - CPU access to managed memory (AC201, AC202) and the ordering
 * rules of attaching and destroying (AC401, AC402).
 *
 * The page guard asks ac_host_may_touch what to protect, and, when a protected
 * page is touched, ac_judge_host_access whether that access is a finding.
 * Under `strict` semantics (the default) an access is judged as on a device
 * without concurrent managed access, the portable rules of the programming
 * guide; under `device` semantics (the model's reach semantics) only work
 * that was given the allocation makes it busy for the CPU.
 */
#ifndef AC_RULES_HOST_H
#define AC_RULES_HOST_H

#include "finding.h"
#include "model.h"

struct ac_host_access {
  struct ac_access_facts facts;
  uint64_t thread;
  /* The stream whose host function the thread is running, or NULL: inside one,
   * that stream is idle (its later work waits for the function to return), and
   * so is every stream whose outstanding work all waits for the function. */
  const struct ac_stream *callback_stream;
};

/* Whether the CPU may touch a now. If not, *blocker is the busy stream and
 * *rule the rule an access would break. */
bool ac_host_may_touch(struct ac_model *m, const struct ac_alloc *a,
                       const struct ac_stream *callback_stream, struct ac_stream **blocker,
                       enum ac_rule_id *rule);

/* Fills *out and returns true if the access is a finding. */
bool ac_judge_host_access(struct ac_model *m, const struct ac_alloc *a,
                          const struct ac_host_access *access, struct ac_finding *out);

/* AC401: attaching a on stream t while the stream a is single-attached to has
 * work not ordered before the attach. */
bool ac_judge_attach_order(struct ac_model *m, const struct ac_alloc *a, struct ac_stream *t,
                           struct ac_finding *out);

/* AC402 for each allocation single-attached to the destroyed stream s; each
 * reverts to its default association once s's work is complete. Calls emit
 * for each finding; returns how many. */
int ac_judge_stream_destroyed(struct ac_model *m, struct ac_stream *s,
                              void (*emit)(struct ac_finding *, void *), void *ctx);

/* The facts of a busy stream, for a finding. */
void ac_busy_facts_fill(struct ac_busy_facts *b, const struct ac_model *m,
                        const struct ac_stream *s);

#endif
