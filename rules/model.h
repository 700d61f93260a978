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

#include <uthash.h>

#include "clock.h"
#include "model_types.h"

struct ac_model;
struct ac_stream;

/* What an allocation needs once it has been attached, or when it is a
 * __managed__ variable. Most allocations never are, and go without: a record
 * costs 64 bytes, its stack a 4-byte id in the depot (stack_depot.h). */
struct ac_alloc_more {
  struct ac_alloc *alloc;         /* whose */
  struct ac_stream *assoc_stream; /* for AC_ASSOC_SINGLE */
  /* An association changes when the attach operation completes: until the host
   * has observed (attach_stream, attach_seq), the previous one binds too. The
   * attach is settled - attach_stream NULL - the moment the host observes it. */
  struct ac_stream *attach_stream;
  uint64_t attach_seq;
  struct ac_stream *prev_stream;
  enum ac_assoc prev_assoc;
  struct ac_origin attach_origin; /* api is NULL until the first attach */
  /* In assoc_stream's members (single-attached to it), and in attach_stream's
   * unsettled attaches (oldest first): a stream finds its own, never all. */
  struct ac_alloc_more *member_prev, *member_next;
  struct ac_alloc_more *unsettled_prev, *unsettled_next;
  char *name;       /* __managed__ variable name, or NULL */
  uintptr_t module; /* CUmodule / CUlibrary of a __managed__ variable */
  /* The program's own last prefetch of it: the bytes and where to (a
   * CUmemLocationType and id); prefetch_end 0: none. */
  uintptr_t prefetch_start, prefetch_end;
  int prefetch_type, prefetch_id;
};

struct ac_alloc {
  uintptr_t base;
  size_t size;
  uint64_t serial; /* unique for the life of the process */
  uint64_t tick;   /* where it was recorded in the model's order (ac_history_tick) */
  uint32_t origin_thread;
  ac_stack_id origin_stack;
  struct ac_alloc_more *more; /* NULL until attached or named */
  uint32_t guard_tag;         /* the page guard's own: which of its classes holds it */
  /* The entry point that made it, interned (ac_api_intern): a byte rather
   * than a pointer keeps the record at 64 bytes. 0: none. */
  uint8_t origin_api;
  uint8_t kind;          /* enum ac_mem_kind */
  uint8_t assoc;         /* enum ac_assoc: the current association */
  uint8_t default_flags; /* the cuMemAllocManaged flags */
  bool learned : 1;      /* found through the driver, not seen being made */
  /* Being freed: the free was called and has not returned. The page guard
   * leaves it alone, so no protection outlives it into memory the driver may
   * hand out again. */
  bool retiring : 1;
  bool attached : 1; /* attached at least once: never plain GLOBAL memory again */
  bool advised : 1;  /* the program gave the driver placement advice for it */
  /* The last prefetch of some of it was the page guard's, not the program's:
   * the driver's LAST_PREFETCH_LOCATION is answered as the program's own. */
  bool ahead_last : 1;
  /* The page guard's own: when it last moved the memory to the GPU ahead of
   * work (shim/guard/ahead.c); 0: never. */
  uint16_t ahead_mark;
};

/* One allocation a stream's outstanding work was given (ac_stream.reach). */
struct ac_reach {
  uint64_t serial; /* the allocation record's */
  uintptr_t base;  /* to find it again (the record may be gone) */
};

struct ac_stream {
  uint64_t serial; /* unique for the life of the process; handles are reused */
  uintptr_t handle;
  enum ac_stream_kind kind; /* CREATED, LEGACY or PER_THREAD */
  unsigned flags;           /* CU_STREAM_DEFAULT / CU_STREAM_NON_BLOCKING */
  int priority;
  bool live;
  bool capturing;        /* its work is captured into a graph, not run (capture != 0) */
  bool blocking;         /* synchronises with the legacy NULL stream */
  bool in_slot;          /* its handle names it still (a destroyed one: AC106's) */
  bool candidate;        /* to be forgotten, maybe (model_stream.c) */
  uint64_t owner_thread; /* for a per-thread default stream */
  uintptr_t context;     /* the driver context it belongs to; 0: not known */
  /* Its context's legacy NULL stream, which it synchronises with when
   * blocking (itself for a legacy stream): each context has its own. */
  struct ac_stream *legacy;
  uint64_t capture; /* the capture sequence it takes part in; 0: none */
  uint64_t seq;     /* operations enqueued so far */
  /* Its last operation that keeps the host out (not a prefetch): the stream
   * is busy for the host while the host has not observed that one. */
  uint64_t host_seq;
  /* The host's clock at this stream (ac_model's host_observed[serial]): how
   * many of its operations the host knows complete. Kept with the stream so
   * that asking whether it is busy, or whether an attach on it settled - at
   * every launch and attach - reads a field rather than searching a clock. */
  uint64_t observed;
  struct ac_clock waited; /* what its next operation waits for (other streams) */
  /* What its work waits for since it last turned busy for the host: its first
   * outstanding operation's clock, or an earlier one (which waits for less). */
  struct ac_clock busy_from;
  uint64_t host_function;       /* the operation of its host function running now; 0: none */
  struct ac_origin busy_origin; /* first operation the host has not seen complete */
  struct ac_origin created;     /* the call that made it; api NULL when not seen */
  /* Allocations its outstanding work was given (serials), for `device`
   * semantics; cleared when it turns idle. */
  struct ac_reach *reach;
  size_t reach_count, reach_cap;
  struct ac_op_ring history; /* its latest operations, for reports (model_history.c) */
  /* ---- the model's bookkeeping: the few streams each walk needs ---- */
  uint32_t refs; /* allocation fields naming it: it is not forgotten while any does */
  struct ac_alloc_more *members;           /* allocations single-attached to it */
  struct ac_alloc_more *unsettled;         /* attaches on it the host has not seen complete */
  struct ac_stream *busy_prev, *busy_next; /* busy for the host, oldest first */
  struct ac_stream *join_prev, *join_next; /* work its legacy stream has not joined */
  struct ac_stream *unjoined; /* a legacy stream's: the blocking streams on that list */
  struct ac_stream *settle_prev, *settle_next; /* has unsettled attaches */
  struct ac_stream *orphan_prev, *orphan_next; /* no handle names it; kept a while */
  UT_hash_handle by_serial;
};

/* The program prefetched [start, end) of a to a location (a CUmemLocationType
 * and id): kept as its own last prefetch. False when memory ran out. */
bool ac_model_note_prefetch(struct ac_alloc *a, uintptr_t start, uintptr_t end, int type, int id);
/* Memory the attach rules govern: cuMemAllocManaged and __managed__ variables. */
static inline bool ac_alloc_is_managed(const struct ac_alloc *a) {
  return a->kind == AC_MEM_MANAGED || a->kind == AC_MEM_MANAGED_VAR;
}
/* The stream a is single-attached to, or NULL. */
static inline struct ac_stream *ac_alloc_assoc_stream(const struct ac_alloc *a) {
  return a->more ? a->more->assoc_stream : NULL;
}
/* The stream whose operation changes a's association once complete, or NULL
 * (no attach, or the host has seen it complete). */
static inline struct ac_stream *ac_alloc_attach_stream(const struct ac_alloc *a) {
  return a->more ? a->more->attach_stream : NULL;
}
/* The entry points allocations are made by, each given a byte once (model
 * lock held); 0 stands for none (NULL). Past 255 names, 0 too. */
uint8_t ac_api_intern(const char *api);
/* The name a byte stands for, or NULL for 0. */
const char *ac_api_name(uint8_t id);
static inline const char *ac_alloc_origin_api(const struct ac_alloc *a) {
  return ac_api_name(a->origin_api);
}
static inline const char *ac_alloc_name(const struct ac_alloc *a) {
  return a->more && a->more->name ? a->more->name : "";
}
static inline uintptr_t ac_alloc_module(const struct ac_alloc *a) {
  return a->more ? a->more->module : 0;
}

struct ac_model *ac_model_create(void);
void ac_model_destroy(struct ac_model *m);

/* ---- allocations (model_alloc.c) ---- */

/* Records an allocation; the model copies *proto (without its more) and
 * assigns its serial. */
struct ac_alloc *ac_model_add_alloc(struct ac_model *m, const struct ac_alloc *proto);
/* Names a, a __managed__ variable of module; false when memory ran out. */
bool ac_model_name_alloc(struct ac_model *m, struct ac_alloc *a, uintptr_t module,
                         const char *name);
/* Told of every change that may move an allocation between the page guard's
 * classes - recorded, retiring, attached, its attach settled - after it is
 * made, and with leaving true just before the record is forgotten. One
 * observer per model; NULL for none. */
typedef void (*ac_alloc_observer)(struct ac_alloc *a, bool leaving, void *ctx);
void ac_model_set_alloc_observer(struct ac_model *m, ac_alloc_observer fn, void *ctx);
ac_alloc_observer ac_model_alloc_observer(const struct ac_model *m);
/* The allocation containing addr, or NULL. */
struct ac_alloc *ac_model_find_alloc(const struct ac_model *m, uintptr_t addr);
/* Like ac_model_find_alloc, and says - without reading the record, from the
 * lookup cache - whether the allocation is managed, globally attached and was
 * never attached since: memory any stream may use (the hot path of kernel
 * arguments). */
struct ac_alloc *ac_model_find_alloc_plain(const struct ac_model *m, uintptr_t addr,
                                           bool *plain_global);
/* Whether addr may lie in managed memory that is not plain GLOBAL memory
 * (false: certainly not, so strict device judging can skip it). Conservative:
 * true also for memory freed since, or sharing a bit with such memory. */
bool ac_model_may_need_judging(const struct ac_model *m, uintptr_t addr);
/* The allocation starting exactly at base, or NULL. */
struct ac_alloc *ac_model_find_alloc_at(const struct ac_model *m, uintptr_t base);
/* Forgets every record that overlaps [base, base + size): the driver has just
 * handed that range out, so they are stale (freed on another thread whose
 * record has not gone yet, or freed by a call the model did not see).
 * Returns how many. */
size_t ac_model_forget_overlapping(struct ac_model *m, uintptr_t base, size_t size);
/* Marks an allocation as being freed (see ac_alloc.retiring). */
void ac_model_retire_alloc(struct ac_model *m, struct ac_alloc *a);
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
/* s was made in context (before any operation on it): a blocking s
 * synchronises with that context's legacy stream. */
void ac_model_stream_set_context(struct ac_model *m, struct ac_stream *s, uintptr_t context);
/* Records api on thread, at stack, as the call that made s. */
void ac_model_stream_note_creation(struct ac_model *m, struct ac_stream *s, const char *api,
                                   uint64_t thread, const struct ac_stack *stack);
/* Marks the live stream with this handle destroyed; returns it, or NULL. */
struct ac_stream *ac_model_stream_destroyed(struct ac_model *m, uintptr_t handle);
/* The serial of the live stream with this handle, or 0. */
uint64_t ac_model_live_stream_serial(struct ac_model *m, uintptr_t handle);
/* The same, only if that stream is still the one with this serial: the driver
 * recycles a handle the moment it is destroyed, so another thread may have
 * created a stream with it before the destroying thread records the destroy. */
struct ac_stream *ac_model_stream_destroyed_if(struct ac_model *m, uintptr_t handle,
                                               uint64_t serial);
/* What a stream argument refers to. per_thread_entry is true for _ptsz/_ptds
 * entry points and pointers obtained with the per-thread flag, where handle 0
 * means the calling thread's default stream. A handle the model never saw is
 * AC_STREAM_UNTRACKED; the shim, which can look at the address space, makes
 * it AC_STREAM_NEVER_CREATED when the handle cannot be a stream at all. */
struct ac_stream_ref ac_model_resolve_stream(struct ac_model *m, uintptr_t handle,
                                             bool per_thread_entry, uint64_t thread);
/* The same for a call made in context: the legacy and per-thread default
 * streams are the context's own (0: not known, the first context's). */
struct ac_stream_ref ac_model_resolve_stream_in(struct ac_model *m, uintptr_t handle,
                                                bool per_thread_entry, uint64_t thread,
                                                uintptr_t context);

/* Calls fn for every stream record: the legacy stream, per-thread streams,
 * live and destroyed ones not yet forgotten. */
void ac_model_for_each_stream(struct ac_model *m, void (*fn)(struct ac_stream *, void *),
                              void *ctx);
/* Calls fn for every stream busy for the host, in the order they turned busy. */
void ac_model_for_each_busy_stream(struct ac_model *m, void (*fn)(struct ac_stream *, void *),
                                   void *ctx);
/* Stream records the model holds (forgotten ones are not). */
size_t ac_model_stream_count(const struct ac_model *m);
/* A destroyed stream is forgotten - its record freed, its clock entries
 * dropped - once its work is known complete, no allocation names it, and no
 * handle does (the driver handed its handle out again). While pinned, that
 * waits: a finding judged but not yet reported may name it (its timeline is
 * read from the record). Each pin is undone by one unpin. */
void ac_model_pin_streams(struct ac_model *m);
void ac_model_unpin_streams(struct ac_model *m, size_t n);
/* Moves whenever an allocation is added or removed or its association changes. */
uint64_t ac_model_layout(const struct ac_model *m);
/* Calls fn for every allocation record. */
void ac_model_for_each_alloc(struct ac_model *m, void (*fn)(struct ac_alloc *, void *), void *ctx);

/* ---- ordering: happens-before with vector clocks (model_order.c) ----
 *
 * Busy is a fact of the programming model, not of the GPU's timing: a stream
 * is busy for the host from its first operation the host has not observed
 * complete until the program synchronises in a way the model recognises. The
 * legacy NULL stream waits for, and is waited on by, every blocking stream;
 * CU_STREAM_NON_BLOCKING streams take no part. */

/* Applies the legacy stream's implicit waits to s, as its next operation will
 * (ac_order_enqueue does it too; idempotent). */
void ac_order_prepare(struct ac_model *m, struct ac_stream *s);
/* Enqueues one operation on s and returns its sequence number; *turned_busy
 * says s was idle for the host before (the caller then sets busy_origin). */
uint64_t ac_order_enqueue(struct ac_model *m, struct ac_stream *s, bool *turned_busy);
/* Enqueues an operation that keeps the host out of nothing - a prefetch,
 * which moves memory without changing it, and which the driver takes only on
 * a device where the CPU may touch managed memory while the GPU works
 * (docs/driver-facts.md) -: ordered like any other (what waits for s waits
 * for it), but s does not turn busy for the host on its account. */
uint64_t ac_order_enqueue_quiet(struct ac_model *m, struct ac_stream *s);
void ac_order_host_syncs_stream(struct ac_model *m, struct ac_stream *s);
void ac_order_host_syncs_all(struct ac_model *m);
void ac_order_host_observes(struct ac_model *m, const struct ac_clock *c);
void ac_order_event_recorded(struct ac_model *m, uintptr_t event, struct ac_stream *s);
/* One record over the n streams of s (a green context's): the event covers what
 * each of them has enqueued. With n 0 it covers nothing: synchronising on it
 * tells the host nothing (an event that fires before the work it follows is
 * known complete). */
void ac_order_event_recorded_over(struct ac_model *m, uintptr_t event, struct ac_stream *const *s,
                                  size_t n);
/* A plain record on s while it captures: the event stands for s's place in
 * its capture and covers no work that runs now (a stream waiting for it joins
 * the capture). */
void ac_order_event_captured(struct ac_model *m, uintptr_t event, struct ac_stream *s);
/* false if the event was never recorded (then it synchronises nothing). */
bool ac_order_host_syncs_event(struct ac_model *m, uintptr_t event);
/* s's later operations wait for what the event covers at this call; an event
 * recorded in a capture in progress makes s join that capture instead. A
 * capturing s waits for nothing that runs now. Returns whether s waits (the
 * wait is an operation of its own stream's history): not when it captures. */
bool ac_order_stream_waits_event(struct ac_model *m, struct ac_stream *s, uintptr_t event);
/* s's later operations wait for what the event's last record outside a
 * capture covers now (none: nothing), whatever s is: a graph's event-wait
 * node at its launch. */
void ac_order_stream_waits_recorded(struct ac_model *m, struct ac_stream *s, uintptr_t event);
/* s's later operations wait for c (a clock the caller kept, as
 * ac_order_snapshot_before gives). */
void ac_order_stream_waits_clock(struct ac_model *m, struct ac_stream *s, const struct ac_clock *c);
void ac_order_event_destroyed(struct ac_model *m, uintptr_t event);
/* What the host knows complete once operation seq of s starts (a host function):
 * everything s waited for, and s's own operations before seq. */
bool ac_order_snapshot_before(struct ac_model *m, struct ac_stream *s, uint64_t seq,
                              struct ac_clock *out);
bool ac_order_stream_busy(const struct ac_model *m, const struct ac_stream *s);
/* Operations of s the host has not observed complete, from the first that
 * kept the host out (quiet ones before it are not counted: the host may have
 * observed them without the model knowing). */
uint64_t ac_order_outstanding(const struct ac_model *m, const struct ac_stream *s);
/* Whether s is idle for code inside a host function of stream inside (NULL:
 * none): s is that stream, or all s's outstanding work waits for the function
 * (cuLaunchHostFunc: work ordered behind a host function does not make its
 * stream active until the function has run). */
bool ac_order_idle_inside(const struct ac_model *m, const struct ac_stream *s,
                          const struct ac_stream *inside);
/* A host function of s, operation seq, starts (seq) or returns (0). */
void ac_order_host_function_runs(struct ac_model *m, struct ac_stream *s, uint64_t seq);
/* A busy stream that is not idle inside a host function of `inside` (NULL
 * if none), preferring one with an origin, then the one busy longest. */
struct ac_stream *ac_order_any_busy(struct ac_model *m, const struct ac_stream *inside);
/* How many streams are busy for the host. */
size_t ac_order_busy_count(const struct ac_model *m);
/* Moves whenever a stream turns busy or idle for the host, each time (a
 * verdict that depends on which streams are busy holds while it stands). */
uint64_t ac_order_busy_changes(const struct ac_model *m);
/* Changes whenever a stream turns busy or idle for the host: the page guard
 * recomputes what to protect only when it moves. */
uint64_t ac_order_generation(const struct ac_model *m);
/* Records api on thread as the origin of operation seq, which turned s busy. */
void ac_order_note_busy_origin(struct ac_model *m, struct ac_stream *s, const char *api,
                               uint64_t thread, uint64_t seq);
/* Gives that origin its stack, if seq is still the operation that turned s busy
 * (stored in the depot, stack_depot.h). */
void ac_order_set_busy_stack(struct ac_model *m, struct ac_stream *s, uint64_t seq,
                             const struct ac_stack *stack);
/* Takes back operation seq of s (its forward failed) if it is still the
 * last one; a stream that turns idle by it moves the generation. */
bool ac_order_retract(struct ac_model *m, struct ac_stream *s, uint64_t seq);
/* ---- capture sequences across streams (model_capture.c) ----
 * A capture is begun on one stream, its origin. A stream that waits for an
 * event recorded in a capture in progress joins it: its operations are
 * captured too, not run. The origin's end of the capture, whatever the driver
 * answers, ends it for every stream of it. */

/* s begins a capture sequence. */
void ac_capture_begin(struct ac_model *m, struct ac_stream *s);
/* s ends the capture it began: every stream of it leaves it. A stream that
 * only joined a capture cannot end it (the driver refuses), and changes
 * nothing. */
void ac_capture_end(struct ac_model *m, struct ac_stream *s);
/* s joins capture (an event recorded in it was waited for); false when that
 * capture is over. */
bool ac_capture_join(struct ac_model *m, struct ac_stream *s, uint64_t capture);
/* Every capture ends (their context did). */
void ac_capture_end_all(struct ac_model *m);
/* Whether some capture sequence is in progress (one begun while memory ran
 * out is known only to its stream: s->capturing). */
bool ac_capture_any(const struct ac_model *m);
/* Records an attach enqueued on s as operation seq; false when memory ran
 * out (nothing changed then). origin NULL keeps the last attach's. */
bool ac_order_attach(struct ac_model *m, struct ac_alloc *a, enum ac_assoc assoc,
                     struct ac_stream *s, uint64_t seq, const struct ac_origin *origin);
/* The associations that bind host access now (the current one, and the previous
 * one while the attach is not known complete); returns how many (1 or 2). */
int ac_order_binding_assocs(const struct ac_model *m, const struct ac_alloc *a,
                            enum ac_assoc assoc[2], struct ac_stream *stream[2]);
struct ac_stream *ac_model_legacy_stream(struct ac_model *m);
/* The legacy NULL stream of context: each context has its own. Context 0 (not
 * known) and the first context named share the model's first one. */
struct ac_stream *ac_model_legacy_stream_in(struct ac_model *m, uintptr_t context);
/* How many contexts have a legacy stream of their own (1 until a second is named). */
size_t ac_model_legacy_count(const struct ac_model *m);

/* ---- semantics ----
 * strict (default): as on a device without concurrent managed access.
 * device: on a device with concurrent managed access, globally attached memory
 * is guarded only against work that can reach it (its reach set), and
 * HOST-attached memory given to a kernel is no finding. */
void ac_model_set_reach_semantics(struct ac_model *m, bool on);
bool ac_model_reach_semantics(const struct ac_model *m);
/* Records that s's outstanding work was given a (for reach semantics). */
void ac_order_add_reach(struct ac_model *m, struct ac_stream *s, const struct ac_alloc *a);
/* Whether some busy stream not idle inside a host function of `inside` can reach a. */
struct ac_stream *ac_order_busy_reaching(struct ac_model *m, const struct ac_alloc *a,
                                         const struct ac_stream *inside);
/* The associations that bind work on stream x (like ac_order_binding_assocs,
 * but an attach is complete for x once x is ordered after it). */
int ac_order_binding_for_stream(const struct ac_model *m, const struct ac_alloc *a,
                                const struct ac_stream *x, enum ac_assoc assoc[2],
                                struct ac_stream *stream[2]);

/* ---- history: the latest operations of each stream and of the host, for
 * the reports' timeline (model_history.c) ----
 * Each record takes the next tick of the model's order, which every stream and
 * the host share, so records of different streams can be put side by side. A
 * fixed ring per stream: no allocation, no stack per operation. */

/* Records one operation of s (NULL: of the host) and returns the record, for
 * the caller to complete (kernel, addr, ...); seq is s's position now. */
struct ac_op_record *ac_history_push(struct ac_model *m, struct ac_stream *s, enum ac_op_kind kind,
                                     const char *api, uint64_t thread);
/* s's latest record (s has one). */
struct ac_op_record *ac_history_last(struct ac_stream *s);
/* The host advised where the memory at addr lives (cuMemAdvise): a record of
 * the host's naming the allocation there, for the story of later findings -
 * the advice changes no association and orders nothing. */
void ac_history_advice(struct ac_model *m, uintptr_t addr, unsigned advice, const char *api,
                       uint64_t thread);
/* Names the kernel of operation seq of s, if it is still in the ring. */
void ac_history_note_kernel(struct ac_model *m, struct ac_stream *s, uint64_t seq,
                            const char *kernel);
/* The latest tick handed out (0 before any record). */
uint64_t ac_history_tick(const struct ac_model *m);
/* The host's own ring: context and event synchronisations, allocations,
 * placement advice. */
const struct ac_op_ring *ac_history_host(const struct ac_model *m);
/* The latest records of ring up to and including tick upto, oldest first,
 * into out (AC_HISTORY_MAX of them at most); returns how many. */
int ac_history_copy(const struct ac_op_ring *ring, uint64_t upto, struct ac_op_record *out);
/* How many operations ring had recorded by tick upto. */
uint64_t ac_history_total_upto(const struct ac_op_ring *ring, uint64_t upto);
/* The first record after tick upto of api by thread, or NULL. */
const struct ac_op_record *ac_history_find_after(const struct ac_op_ring *ring, uint64_t upto,
                                                 const char *api, uint64_t thread);
/* The stream record with this serial (live, destroyed or a default stream), or NULL. */
struct ac_stream *ac_model_stream_by_serial(struct ac_model *m, uint64_t serial);

#endif
