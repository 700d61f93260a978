/* stack_depot.h - call stacks stored once: an allocation made ten thousand
 * times from one line of the program keeps a 4-byte id, not ten thousand
 * copies of the same 264-byte stack.
 *
 * The depot lives as long as the process (a stack is never forgotten: the
 * stacks of a program are as many as the places it calls from) and is used
 * under the same lock as the model - in the shim, ac_model_lock - so it takes
 * none itself: the page guard's signal handler reads it with that lock held.
 * An entry never moves once stored, and an id stays valid across fork.
 */
#ifndef AC_STACK_DEPOT_H
#define AC_STACK_DEPOT_H

#include <stddef.h>
#include <stdint.h>

#include "model_types.h"

/* The hash the depot files a stack by (no lock: pure). */
uint32_t ac_stack_hash(const struct ac_stack *stack);
/* The stack stored as id; 0 for no stack (depth 0), or when memory ran out. */
ac_stack_id ac_stack_depot_put(const struct ac_stack *stack);
/* The stack of id (depth 0 for id 0 or an id never handed out). */
void ac_stack_depot_get(ac_stack_id id, struct ac_stack *out);
/* How many distinct stacks are stored, and the bytes they take. */
size_t ac_stack_depot_count(void);
size_t ac_stack_depot_bytes(void);

/* o with its stack taken out of the depot, as a finding carries it. */
void ac_origin_expand(const struct ac_origin *o, struct ac_op_origin *out);

#endif
