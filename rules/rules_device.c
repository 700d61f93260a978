/* rules_device.c - judging device access (AC301, AC302). An attach binds work
 * on stream x until x is ordered after it (or the host saw it complete), so a
 * launch right after a re-attach on the same stream is right, and one on
 * another stream that does not wait for the attach is judged by both the old
 * and the new association. */
#include <string.h>

#include "rules_device.h"
#include "rules_host.h"

bool ac_judge_device_access(const struct ac_model *m, const struct ac_alloc *a,
                            const struct ac_stream *x, bool host_is_legal, struct ac_finding *out) {
  if (!ac_alloc_is_managed(a)) return false;
  enum ac_assoc assoc[2];
  struct ac_stream *stream[2];
  int n = ac_order_binding_for_stream(m, a, x, assoc, stream);
  for (int i = 0; i < n; i++) {
    enum ac_rule_id rule;
    if (assoc[i] == AC_ASSOC_SINGLE && stream[i] && stream[i] != x)
      rule = AC_RULE_AC301;
    else if (assoc[i] == AC_ASSOC_HOST && !host_is_legal)
      rule = AC_RULE_AC302;
    else
      continue;
    memset(out, 0, sizeof *out);
    out->rule = rule;
    out->tick = ac_history_tick(m);
    ac_alloc_snapshot_fill(&out->alloc, a);
    if (rule == AC_RULE_AC301) {
      /* The stream the memory belongs to, as the "other side". */
      ac_busy_facts_fill(&out->busy, m, stream[i]);
      out->alloc.assoc = AC_ASSOC_SINGLE;
      out->alloc.assoc_stream_serial = stream[i]->serial;
      out->alloc.assoc_stream_handle = stream[i]->handle;
    }
    if (x) out->stream = (struct ac_stream_facts){x->kind, x->serial, x->handle};
    return true;
  }
  return false;
}
