/* model_internal.h - the layout of struct ac_model, shared by the model_*.c
 * files only. Everything else goes through model.h. */
#ifndef AC_MODEL_INTERNAL_H
#define AC_MODEL_INTERNAL_H

#include <uthash.h>

#include "model.h"

/* Allocations are found by address through 2 MiB granules: each granule lists
 * the allocations that overlap it. Small managed allocations share granules
 * (and pages), so a list is needed; large ones appear in every granule they
 * cover. */
#define AC_GRANULE_SHIFT 21
#define AC_LOOKUP_CACHE_SIZE 1024   /* a power of two */
#define AC_JUDGED_GRANULE_BITS 4096 /* a power of two: 8 GiB of address space before it wraps */

/* A granule's allocations, sorted by base; base and end are kept beside the
 * record so a lookup reads only this array. */
struct granule_entry {
  uintptr_t base, end;
  struct ac_alloc *alloc;
};

struct granule {
  uint64_t key; /* addr >> AC_GRANULE_SHIFT */
  size_t count, capacity;
  struct granule_entry *e;
  UT_hash_handle hh;
};

struct stream_slot {
  uintptr_t handle;
  struct ac_stream *stream; /* latest record for this handle */
  UT_hash_handle hh;
};

struct thread_stream_slot {
  uint64_t thread;
  struct ac_stream *stream;
  UT_hash_handle hh;
};

struct event_slot {
  uintptr_t handle;
  bool recorded;
  struct ac_clock snapshot;
  UT_hash_handle hh;
};

struct retired_stream {
  struct ac_stream *stream;
  struct retired_stream *next;
};

struct ac_model {
  struct granule *granules;
  size_t alloc_count;
  uint64_t next_alloc_serial;

  struct stream_slot *streams;
  struct stream_slot *last_slot; /* the last one found: slots live as long as the model */
  struct thread_stream_slot *per_thread_streams;
  struct ac_stream legacy_stream;
  struct retired_stream *retired; /* destroyed records, kept for findings */
  uint64_t next_stream_serial;

  struct ac_clock host_observed; /* what the host knows complete */
  struct event_slot *events;
  uint64_t generation;
  uint64_t layout; /* moves when allocations or associations change */
  /* Recent address lookups (kernel arguments repeat from launch to launch);
   * an entry holds while the layout it was made under does. */
  struct lookup_cache_entry {
    uintptr_t addr;
    uint64_t layout_plus_one; /* 0: empty */
    struct ac_alloc *alloc;
    bool plain_global; /* see ac_model_find_alloc_plain */
  } lookup_cache[AC_LOOKUP_CACHE_SIZE];
  bool reach_semantics;
  /* One bit per 2 MiB granule (its index modulo the bits): set once the
   * granule holds managed memory that is not plain GLOBAL memory (attached,
   * or HOST), never cleared. A clear bit lets strict judging skip a kernel
   * argument without a lookup. */
  uint64_t judged_granules[AC_JUDGED_GRANULE_BITS / 64];
  uint64_t tick;                  /* the last tick of the history (model_history.c) */
  struct ac_op_ring host_history; /* what the host did that no stream's ring holds */
};

void ac_model_free_order(struct ac_model *m);

void ac_model_free_allocs(struct ac_model *m);
void ac_model_free_streams(struct ac_model *m);

/* Records that a is not plain GLOBAL memory (it was attached, or is HOST):
 * ac_model_may_need_judging answers true for its granules from now on. */
void ac_model_note_judged(struct ac_model *m, const struct ac_alloc *a);

#endif
