/* model.c - creating and destroying the model. */
#include <stdlib.h>

#include "model_internal.h"

struct ac_model *ac_model_create(void) {
  struct ac_model *m = calloc(1, sizeof *m);
  if (!m) return NULL;
  m->next_alloc_serial = 1;
  m->next_stream_serial = 1;
  ac_model_enrol_legacy(m);
  return m;
}

void ac_model_destroy(struct ac_model *m) {
  if (!m) return;
  ac_model_free_allocs(m);
  ac_model_free_order(m);
  ac_model_free_captures(m);
  ac_clock_free(&m->legacy_stream.waited);
  ac_clock_free(&m->legacy_stream.busy_from);
  ac_history_free(&m->legacy_stream.history);
  ac_history_free(&m->host_history);
  free(m->legacy_stream.reach);
  ac_model_free_streams(m);
  free(m);
}
