/* model_fixture.h - what the rule tests build their models from: one model,
 * 4 KiB managed allocations, and attaches enqueued as their stream's
 * operations. */
#ifndef AC_MODEL_FIXTURE_H
#define AC_MODEL_FIXTURE_H

#include <string.h>

#include "model.h"

#define NON_BLOCKING 1u /* CU_STREAM_NON_BLOCKING */

static struct ac_model *m;

static struct ac_alloc *managed(uintptr_t base, enum ac_assoc assoc) {
  struct ac_alloc p;
  memset(&p, 0, sizeof p);
  p.base = base;
  p.size = 4096;
  p.kind = AC_MEM_MANAGED;
  p.assoc = assoc;
  p.default_flags = assoc;
  return ac_model_add_alloc(m, &p);
}

static void attach(struct ac_alloc *a, enum ac_assoc assoc, struct ac_stream *s) {
  uint64_t seq = ac_order_enqueue(m, s, NULL);
  ac_order_attach(m, a, assoc, s, seq, NULL);
}

#endif
