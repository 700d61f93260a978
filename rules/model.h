/* model.h - the model: what the program has allocated and which streams exist.
 *
 * Pure C, no CUDA calls, no I/O, not thread-safe by itself: the shim holds one
 * lock around every use. The shim feeds it events (an allocation was made, a
 * stream was created, an attach succeeded) and asks it questions (which
 * allocation holds this address, what does this stream handle refer to). The
 * rules in rules_*.c read it to judge a call before it is forwarded.
 *
 * Allocations live in model_alloc.c, streams in model_stream.c.
 */
#ifndef AC_MODEL_H
#define AC_MODEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "model_types.h"

struct ac_model;

struct ac_alloc {
  uint64_t serial; /* unique for the life of the process */
  uintptr_t base;
  size_t size;
  enum ac_mem_kind kind;
  bool learned;                   /* found through the driver, not seen being made */
  unsigned default_flags;         /* the cuMemAllocManaged flags */
  enum ac_assoc assoc;            /* current association */
  struct ac_stream *assoc_stream; /* for AC_ASSOC_SINGLE */
  char name[64];                  /* __managed__ variable name */
  uintptr_t module;               /* CUmodule / CUlibrary of a __managed__ variable */
  const char *origin_api;
  uint64_t origin_thread;
  struct ac_stack origin_stack;
};

struct ac_stream {
  uint64_t serial; /* unique for the life of the process; handles are reused */
  uintptr_t handle;
  enum ac_stream_kind kind; /* CREATED, LEGACY or PER_THREAD */
  unsigned flags;           /* CU_STREAM_DEFAULT / CU_STREAM_NON_BLOCKING */
  int priority;
  bool live;
  bool capturing;
  uint64_t owner_thread; /* for a per-thread default stream */
};

struct ac_model *ac_model_create(void);
void ac_model_destroy(struct ac_model *m);

/* ---- allocations (model_alloc.c) ---- */

/* Records an allocation; the model copies *proto and assigns its serial. */
struct ac_alloc *ac_model_add_alloc(struct ac_model *m, const struct ac_alloc *proto);
/* The allocation containing addr, or NULL. */
struct ac_alloc *ac_model_find_alloc(const struct ac_model *m, uintptr_t addr);
/* The allocation starting exactly at base, or NULL. */
struct ac_alloc *ac_model_find_alloc_at(const struct ac_model *m, uintptr_t base);
/* Forgets one allocation record (the pointer becomes invalid). */
void ac_model_remove_alloc(struct ac_model *m, struct ac_alloc *a);
size_t ac_model_alloc_count(const struct ac_model *m);

/* ---- streams (model_stream.c) ---- */

struct ac_stream_ref {
  enum ac_stream_kind kind;
  struct ac_stream *stream; /* NULL for NEVER_CREATED and UNTRACKED */
};

struct ac_stream *ac_model_stream_created(struct ac_model *m, uintptr_t handle, unsigned flags,
                                          int priority);
/* Marks the live stream with this handle destroyed; returns it, or NULL. */
struct ac_stream *ac_model_stream_destroyed(struct ac_model *m, uintptr_t handle);
/* What a stream argument refers to. per_thread_entry is true for _ptsz/_ptds
 * entry points and pointers obtained with the per-thread flag, where handle 0
 * means the calling thread's default stream. A handle the model never saw is
 * AC_STREAM_UNTRACKED; the shim, which can look at the address space, makes
 * it AC_STREAM_NEVER_CREATED when the handle cannot be a stream at all. */
struct ac_stream_ref ac_model_resolve_stream(struct ac_model *m, uintptr_t handle,
                                             bool per_thread_entry, uint64_t thread);

#endif
