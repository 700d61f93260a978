/* rules_attach.h - the call-site rules of cuStreamAttachMemAsync, AC101-AC107.
 *
 * The shim gathers the facts of one attach call (what the stream argument
 * refers to, what kind of memory the pointer is, the device's pageable memory
 * access) and asks two questions before forwarding: which rules does the call
 * break, and must the guard keep it from the driver because the driver would
 * crash the process.
 */
#ifndef AC_RULES_ATTACH_H
#define AC_RULES_ATTACH_H

#include "finding.h"
#include "model.h"

struct ac_attach_call {
  const char *api;
  struct ac_attach_args args;
  struct ac_stream_ref stream;
  enum ac_mem_kind mem_kind;
  const struct ac_alloc *alloc; /* the allocation holding dptr, when the driver knows it */
  bool pageable_memory_access;  /* CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS */
  uint64_t thread;
};

enum ac_guard_verdict {
  AC_GUARD_FORWARD,               /* safe to forward */
  AC_GUARD_REFUSE_INVALID_VALUE,  /* answer CUDA_ERROR_INVALID_VALUE instead */
  AC_GUARD_REFUSE_INVALID_HANDLE, /* answer CUDA_ERROR_INVALID_HANDLE instead */
};

#define AC_ATTACH_MAX_FINDINGS 4

/* The stream facts of a finding from what a stream argument (handle) refers to. */
struct ac_stream_facts ac_stream_facts_of(const struct ac_stream_ref *ref, uintptr_t handle);

/* Fills out[] with the findings of one call (at most AC_ATTACH_MAX_FINDINGS);
 * returns how many. The stack, thread, guard and driver result are the
 * caller's to fill. */
int ac_judge_attach(const struct ac_attach_call *call, struct ac_finding *out);

/* Whether the real driver would crash on this call (docs/driver-facts.md: flags 0,
 * a stream handle that is not a live stream). */
enum ac_guard_verdict ac_attach_guard(const struct ac_attach_call *call);

#endif
