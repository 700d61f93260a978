/* rules_device.h - work on a stream given managed memory: AC301 (memory
 * single-attached to another stream) and AC302 (memory attached to the host).
 * The shim finds the memory from kernel arguments, __managed__ variables and
 * copy operands; this file only judges. */
#ifndef AC_RULES_DEVICE_H
#define AC_RULES_DEVICE_H

#include "finding.h"
#include "model.h"

/* Fills *out and returns true if work on stream x may not use a. host_is_legal
 * is true under `device` semantics on a device with concurrent managed access
 * (then HOST-attached memory is no finding), and for copies. */
bool ac_judge_device_access(const struct ac_model *m, const struct ac_alloc *a,
                            const struct ac_stream *x, bool host_is_legal, struct ac_finding *out);

#endif
