/* model_internal.h - the layout of struct ac_model, shared by the model_*.c
 * files only. Everything else goes through model.h. */
#ifndef AC_MODEL_INTERNAL_H
#define AC_MODEL_INTERNAL_H

#include <uthash.h>
#include <utlist.h>

#include "model.h"

/* Allocations are found by address through 2 MiB granules: each granule lists
 * the allocations that overlap it. Small managed allocations share granules
 * (and pages), so a list is needed; large ones appear in every granule they
 * cover. */
#define AC_GRANULE_SHIFT 21
#define AC_LOOKUP_CACHE_SIZE 1024   /* a power of two */
#define AC_JUDGED_GRANULE_BITS 4096 /* a power of two: 8 GiB of address space before it wraps */

/* A granule's allocations, sorted by base; the base is kept beside the
 * record so the search reads only this array, and the record's end is read
 * once, at the last step (the record is what the lookup returns, read next
 * anyway). An end kept here too cost 8 bytes a tracked allocation, more
 * with the array's room to grow. */
struct granule_entry {
  uintptr_t base;
  struct ac_alloc *alloc;
};

/* The entries are e[0..count) of a block of capacity entries that starts
 * head entries before e: an entry removed in the first half moves the ones
 * before it up (head grows), in the second half the ones after it down, so
 * freeing in the order of allocation - or the reverse - moves nothing. */
struct granule {
  uint64_t key; /* addr >> AC_GRANULE_SHIFT */
  bool nested;  /* two of its records overlap (model_alloc.c) */
  size_t count, capacity, head;
  struct granule_entry *e;
  UT_hash_handle hh;
};

struct stream_slot {
  uintptr_t handle;
  struct ac_stream *stream; /* latest record for this handle */
  UT_hash_handle hh;
};

/* A per-thread default stream is the thread's own in each context. */
struct thread_stream_key {
  uint64_t thread;
  uintptr_t context;
};
struct thread_stream_slot {
  struct thread_stream_key key;
  struct ac_stream *stream;
  UT_hash_handle hh;
};

/* The legacy NULL stream of a context other than the first one named. */
struct legacy_slot {
  uintptr_t context;
  struct ac_stream *stream;
  UT_hash_handle hh;
};

struct event_slot {
  uintptr_t handle;
  bool recorded;
  uint64_t capture; /* last recorded in this capture sequence (0: recorded, or never) */
  struct ac_clock snapshot;
  UT_hash_handle hh;
};

/* A stream taking part in a capture sequence (model_capture.c). */
struct capture_member {
  uint64_t capture;
  uint64_t serial; /* the stream's: its record may be forgotten meanwhile */
  bool origin;     /* the stream the capture began on */
};

/* The model's intrusive lists (utlist's, through named links): a record is
 * on one while its prev link is set. */
#define AC_LIST_IN(el, prev) ((el)->prev != NULL)
#define AC_LIST_ADD(head, el, prev, next)                                                          \
  do {                                                                                             \
    if (!(el)->prev) DL_APPEND2(head, el, prev, next);                                             \
  } while (0)
#define AC_LIST_DEL(head, el, prev, next)                                                          \
  do {                                                                                             \
    if ((el)->prev) {                                                                              \
      DL_DELETE2(head, el, prev, next);                                                            \
      (el)->prev = (el)->next = NULL;                                                              \
    }                                                                                              \
  } while (0)

/* Allocation records are carved from slabs (a malloc'd record would cost its
 * header too); the sanitizer build gives each its own malloc, so a use after
 * free is caught. */
#if defined(__SANITIZE_ADDRESS__)
#define AC_ALLOC_RECORDS_MALLOC 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define AC_ALLOC_RECORDS_MALLOC 1
#endif
#endif
#define AC_ALLOC_SLAB_RECORDS 255

struct alloc_slab {
  struct alloc_slab *next;
  struct ac_alloc rec[AC_ALLOC_SLAB_RECORDS];
};

struct ac_model {
  struct granule *granules;
  size_t alloc_count;
  uint64_t next_alloc_serial;

  struct alloc_slab *slabs;
  struct ac_alloc *free_records; /* linked through their more field */
  ac_alloc_observer observer;
  void *observer_ctx;

  struct stream_slot *streams;
  struct stream_slot *last_slot; /* the last one found: slots live as long as the model */
  struct thread_stream_slot *per_thread_streams;
  /* The legacy NULL stream of the first context named, and of calls whose
   * context is not known (a program of one context has this one only). */
  struct ac_stream legacy_stream;
  struct legacy_slot *other_legacies; /* the other contexts' */
  struct ac_stream *orphans;          /* records no handle names, not yet forgotten */
  struct ac_stream *by_serial;        /* every record, by serial */
  size_t stream_count;
  uint64_t next_stream_serial;
  /* The walks' own lists (ac_stream's links): busy streams, streams with
   * unsettled attaches. (Each legacy stream lists the blocking streams with
   * work it has not joined.) */
  struct ac_stream *busy, *settling;
  size_t busy_count;
  uint64_t busy_changes; /* a stream joined or left the busy list */
  size_t pins;           /* ac_model_pin_streams */
  /* Streams that may be forgettable, forgotten at the end of the operation
   * (ac_model_forget_candidates) or when the pins go. */
  struct ac_stream **candidates;
  size_t candidate_count, candidate_cap;
  size_t forgotten_unswept; /* forgotten since the clocks were last swept */

  struct ac_clock host_observed; /* what the host knows complete */
  struct event_slot *events;
  struct capture_member *captures; /* the streams of the captures in progress */
  size_t capture_count, capture_cap;
  uint64_t last_capture;
  uint64_t generation;
  uint64_t layout;      /* moves when allocations or associations change */
  uint64_t allocations; /* moves when an allocation is made or removed */
  /* Recent address lookups (kernel arguments repeat from launch to launch).
   * What an entry found holds while no allocation was made or removed since;
   * whether that is plain GLOBAL memory, while the layout holds too (an
   * attach elsewhere keeps the first, and the second is read again). */
  struct lookup_cache_entry {
    uintptr_t addr;
    uint64_t allocations_plus_one; /* 0: empty */
    uint64_t layout;               /* the one plain_global was found under */
    struct ac_alloc *alloc;
    bool plain_global; /* see ac_model_find_alloc_plain */
  } lookup_cache[AC_LOOKUP_CACHE_SIZE];
  /* Where the last search of a granule ended, for the next: lookups that
   * miss the cache often go through allocations in address order (a loop
   * attaching each, the words of a kernel's arguments). Checked before use,
   * so only the granule must still exist: cleared when it is freed. */
  struct {
    const struct granule *g;
    size_t i; /* its entry the search found: the last at or below the address */
  } search_hint;
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
void ac_model_free_captures(struct ac_model *m);

void ac_model_free_allocs(struct ac_model *m);
void ac_model_free_streams(struct ac_model *m);

/* Tells the observer (ac_model_set_alloc_observer) of a change of a. */
static inline void ac_model_notify(struct ac_model *m, struct ac_alloc *a, bool leaving) {
  if (m->observer) m->observer(a, leaving, m->observer_ctx);
}
/* a->more, made if a has none; NULL when memory ran out. */
struct ac_alloc_more *ac_model_more(struct ac_alloc *a);
/* An allocation field names s, or stops naming it (model_stream.c). */
void ac_model_stream_ref(struct ac_stream *s);
void ac_model_stream_unref(struct ac_model *m, struct ac_stream *s);
/* s may have become forgettable: turned idle, lost its handle or its last
 * reference. It becomes a candidate if it is. */
void ac_model_consider_forgetting(struct ac_model *m, struct ac_stream *s);
/* Forgets the candidates that still may be, unless pinned (ac_model_pin_streams).
 * Called at the end of every operation that makes candidates. */
void ac_model_forget_candidates(struct ac_model *m);
/* Frees a ring's records (model_history.c). */
void ac_history_free(struct ac_op_ring *ring);
/* Gives the legacy stream its record (model.c). */
void ac_model_enrol_legacy(struct ac_model *m);
/* Takes a out of every stream's lists and drops its references (it is
 * being forgotten). */
void ac_order_forget_alloc(struct ac_model *m, struct ac_alloc *a);
/* Settles the attaches the host has now observed (model_attach.c; called
 * when the host's clock moves). */
void ac_order_settle_observed(struct ac_model *m);
/* Drops clock entries of streams forgotten since the last sweep, once they
 * are as many as the clocks (model_order.c). */
void ac_order_sweep_clocks(struct ac_model *m);
/* Joins s into the legacy stream's clock now, as its next operation would
 * (s is about to be forgotten). */
void ac_order_join_legacy_now(struct ac_model *m, struct ac_stream *s);

/* Records that a is not plain GLOBAL memory (it was attached, or is HOST):
 * ac_model_may_need_judging answers true for its granules from now on. */
void ac_model_note_judged(struct ac_model *m, const struct ac_alloc *a);

#endif
