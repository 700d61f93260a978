/* shim.h - what the shim's files share: the real driver's entry points, the
 * lazy start-up, the model's lock, and the small per-thread facts.
 *
 * Layout of shim/:
 *   driver_api.inc        the one table: every function cuda.h declares, wrapped or why not
 *   driver_params.h       parameter lists several rows of the table share
 *   libc_interceptors.inc  the C library functions the shim exports
 *   exports.map.in        the version script, made from the wrapped rows and libc_interceptors.inc
 *   libc_real.c           the C library's own definitions of those, resolved at load
 *   init.c                lazy, re-entrancy-safe start-up; exit; fork
 *   doors.c               dlsym and cuGetProcAddress: answers by pointer identity
 *   dlsym_*.S             the exported dlsym, keeping the caller's identity (per processor)
 *   interceptors_*.c      the hand-written wrappers: thin, they only call in here
 *   check_attach.c        the attach pipeline: gather facts, judge, guard, forward
 *   check_memory.c        allocations: recording, and classifying unknown pointers
 *   check_stream.c        streams: creation, destruction, capture
 *   check_order.c         the ordering model's events: work, synchronisation, host functions
 *   check_context.c       the context of each stream: a context's events and synchronisation
 *   kernel_args.c         what launches and copies give the GPU: AC301, AC302, reach
 *   work_ahead.c          what work is about to reach, read for the guard to move it first
 *   graph_args.c          what an executable graph gives the GPU, following its changes
 *   graph_read.c          a graph's nodes read into an executable
 *   graph_args_internal.h  what graph_args.c and graph_read.c share
 *   kernel_image.c        parameter layouts read from a module image (PTX, cubin)
 *   module_images.c       the images of the modules loaded, for drivers before 12.4
 *   gpu_work.h            what one launch or copy gives the GPU
 *   guard/                the page guard, its own room: guard/guard.h is its face
 *   repair/               --on-error repair: the program made to obey; repair/repair.h is its face
 *   stack.c               call stacks with libunwind
 *   findings.c            hands findings to report/ with the process's details
 *   halt.c                --on-error halt: the process stops where its first error was made
 */
#ifndef AC_SHIM_H
#define AC_SHIM_H

#define __CUDA_API_VERSION_INTERNAL 1
#include <cuda.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>

#include "driver_params.h"
#include "finding.h"
#include "guard.h"
#include "locks.h"
#include "model.h"
#include "options.h"
#include "report.h"

#define AC_EXPORT __attribute__((visibility("default")))
/* Out of AddressSanitizer's reach: code that runs on stacks the program
 * chose (its alternate signal stack), where redzones do not fit. */
#define AC_NO_SANITIZE_ADDRESS __attribute__((no_sanitize("address", "thread")))
#define AC_LIKELY(x) __builtin_expect(!!(x), 1)
#define AC_UNLIKELY(x) __builtin_expect(!!(x), 0)

/* The first lines of every wrapper: start the shim, and answer as a driver
 * without this entry point would if the real one lacks it. */
#define AC_START_OR_FAIL(Name)                                                                     \
  if (AC_UNLIKELY(!ac_start())) return CUDA_ERROR_NOT_INITIALIZED;                                 \
  if (AC_UNLIKELY(!ac_real.Name)) return CUDA_ERROR_NOT_FOUND;

/* The real driver's entry points, one typed field per wrapped row. */
struct ac_real_table {
#define AC_WRAPPED(Name, Params, Effect, Why) __typeof__(&Name) Name;
#define AC_LEFT_ALONE(Name, Reason, Why)
#include "driver_api.inc"
#undef AC_WRAPPED
#undef AC_LEFT_ALONE
  /* Entry points the shim calls for itself and does not wrap. */
  __typeof__(&cuPointerGetAttributes) cuPointerGetAttributes;
  __typeof__(&cuPointerGetAttribute) cuPointerGetAttribute;
  __typeof__(&cuCtxGetDevice) cuCtxGetDevice;
  __typeof__(&cuCtxGetCurrent) cuCtxGetCurrent;
  __typeof__(&cuCtxPushCurrent_v2) cuCtxPushCurrent_v2; /* --on-error repair's waits */
  __typeof__(&cuCtxPopCurrent_v2) cuCtxPopCurrent_v2;
  __typeof__(&cuEventCreate) cuEventCreate; /* --on-error repair's orderings */
  __typeof__(&cuDeviceGetAttribute) cuDeviceGetAttribute;
  __typeof__(&cuGetErrorName) cuGetErrorName;
  __typeof__(&cuFuncGetParamInfo) cuFuncGetParamInfo;
  __typeof__(&cuKernelGetParamInfo) cuKernelGetParamInfo;
  __typeof__(&cuFuncGetName) cuFuncGetName;
  __typeof__(&cuKernelGetName) cuKernelGetName;
  __typeof__(&cuFuncGetModule) cuFuncGetModule;
  __typeof__(&cuKernelGetLibrary) cuKernelGetLibrary;
  __typeof__(&cuGraphGetNodes) cuGraphGetNodes;
  __typeof__(&cuGraphNodeGetType) cuGraphNodeGetType;
  __typeof__(&cuGraphKernelNodeGetParams_v2) cuGraphKernelNodeGetParams_v2;
  __typeof__(&cuGraphKernelNodeGetParams) cuGraphKernelNodeGetParams; /* before 12.0 */
  __typeof__(&cuGraphChildGraphNodeGetGraph) cuGraphChildGraphNodeGetGraph;
  __typeof__(&cuGraphMemcpyNodeGetParams) cuGraphMemcpyNodeGetParams;
  __typeof__(&cuGraphMemsetNodeGetParams) cuGraphMemsetNodeGetParams;
  __typeof__(&cuGraphEventRecordNodeGetEvent) cuGraphEventRecordNodeGetEvent;
  __typeof__(&cuGraphEventWaitNodeGetEvent) cuGraphEventWaitNodeGetEvent;
  __typeof__(&cuGraphGetEdges_v2) cuGraphGetEdges_v2; /* 12.3 on */
  __typeof__(&cuDriverGetVersion) cuDriverGetVersion;
  __typeof__(&cuDeviceGetCount) cuDeviceGetCount;
  __typeof__(&cuDeviceGet) cuDeviceGet;
  __typeof__(&cuDeviceGetName) cuDeviceGetName;
};

enum ac_entry_id {
#define AC_WRAPPED(Name, Params, Effect, Why) AC_ID_##Name,
#define AC_LEFT_ALONE(Name, Reason, Why)
#include "driver_api.inc"
#undef AC_WRAPPED
#undef AC_LEFT_ALONE
  AC_ENTRY_COUNT
};

/* Where each wrapper forwards: the next definition of its name after the
 * shim in the program's lookup order (a program's own wrapper of a driver
 * function, which forwards with RTLD_NEXT, keeps running), else the driver's. */
extern struct ac_real_table ac_real;
/* The driver's own entry points, by table row: what dlsym and cuGetProcAddress
 * answers are recognised by (doors.c). */
extern void *ac_driver_entry[AC_ENTRY_COUNT];
extern struct ac_options ac_opts;
extern int ac_ready; /* set (release) once start-up has succeeded */

/* Set in a child made without the fork handlers (_Fork, a raw clone of a
 * process): it finds the shim's locks and state as the parent's other
 * threads left them, mid-change perhaps, so the shim takes no part in it -
 * every interceptor passes straight through, the driver's calls answer
 * CUDA_ERROR_NOT_INITIALIZED as CUDA does in a forked child. */
extern int ac_foreign_child;
void ac_become_foreign_child(void);
/* Around such a clone: every lock of the shim's is taken, as for fork, so
 * that none is held by another thread when the process is copied - the
 * symboliser's among them, which holds the loader's lock in dladdr, and a
 * child that found that one held hung in exit() - and given back in both. */
void ac_before_foreign_clone(void);
void ac_after_foreign_clone(bool in_child);
/* Whether system call number closes or replaces descriptors (close,
 * close_range, dup2, dup3): the program's wait for the descriptor gate
 * (interceptors_fd.c). */
bool ac_closes_descriptors(long number);

/* Starts the shim if it has not started; false if it cannot (the reason has
 * been printed once). Cheap after the first success. */
bool ac_start_slow(void);
static inline bool ac_start(void) {
  return AC_LIKELY(__atomic_load_n(&ac_ready, __ATOMIC_ACQUIRE)) || ac_start_slow();
}

/* ---- doors.c ---- */
/* Builds the real-pointer -> wrapper map from ac_real; called by start-up. */
void ac_doors_build_map(void);
/* The wrapper standing for a real driver pointer, or the pointer itself. */
void *ac_wrapper_for(void *real);
/* The real dlsym (never the exported one). */
void *ac_real_dlsym(void *handle, const char *name);

/* ---- the model, behind one lock never held across a driver call ----
 *
 * Every lock and the order they may be taken in is in base/locks.inc; the
 * fork handlers are made from that table. The report's code never calls
 * back into the shim, and the shim's own I/O never passes through its
 * interceptors, so no lock is taken out of order on the way down.
 *
 * The model lock is taken with ac_model_enter() only. The lock table marks
 * it as this thread's from before the wait to after the release: the SIGSEGV
 * handler uses that to never wait for a lock its own thread holds (a signal
 * handler that touches guarded memory while the interrupted code is inside
 * the shim), and checked builds assert it where a function needs it held. */
extern struct ac_model *ac_model;

static inline bool ac_model_held(void) {
  return ac_lock_held(AC_LOCK_model);
}
static inline void ac_model_enter(void) {
  ac_lock(AC_LOCK_model);
}
/* Held: how many times the model lock has been taken, this time included. */
static inline uint64_t ac_model_entries(void) {
  return ac_lock_takings(AC_LOCK_model);
}
/* Held again: whether no one - no other thread, no signal handler of this
 * one - has held the lock since this thread left it with ac_model_entries()
 * at left. Then every record it found then is still there and unchanged, and
 * a call's second section (after the driver's answer) need not look them up
 * again. */
static inline bool ac_model_untouched_since(uint64_t left) {
  return ac_model_entries() == left + 1;
}
/* A wrapped call (I/O, mprotect, ...) made while this thread holds any lock
 * of the shim's is the shim's own, a library's it calls there (libdw, the
 * unwinder), or a program's signal handler's that interrupted it. None is
 * recorded or judged: that would take the model lock, which may not be
 * waited for under the others (locks.inc), and the first two are not the
 * program's. The handler's call is left unrecorded, a known limit. */
static inline bool ac_call_is_shims_own(void) {
  return ac_locks_any_held();
}
/* Leaving the model brings the page guard up to date with what changed
 * while it was held: no transition can forget it. Then what this thread's
 * signal handlers touched while it held the lock is judged (guard.h). */
static inline void ac_model_leave(void) {
  ac_guard_refresh_locked();
  ac_unlock(AC_LOCK_model);
  if (AC_UNLIKELY(ac_guard_deferred_waiting())) ac_guard_judge_deferred();
}
/* Leaving without that: the guard's own fault side, in a signal handler,
 * which makes no transition and must not allocate. */
static inline void ac_model_leave_as_is(void) {
  ac_unlock(AC_LOCK_model);
}
#ifdef AC_CHECK_LOCKS
#define AC_ASSERT_MODEL_HELD()                                                                     \
  do {                                                                                             \
    if (!ac_model_held()) ac_lock_violation(__func__, AC_LOCK_model);                              \
  } while (0)
#else
#define AC_ASSERT_MODEL_HELD() ((void)0)
#endif

/* A small stable number for the calling thread (1 for the first). */
uint64_t ac_thread_id(void);
/* Starts a detached thread of the shim's own (the reporter, the repairer)
 * with every signal blocked: the program's signals are not for it. */
bool ac_own_thread_start(void *(*fn)(void *));

/* ---- stack.c ---- */
/* Finds where the shim itself is mapped (for ac_pc_in_shim); idempotent. */
void ac_stack_locate_shim(void);
/* Loads the unwinder; part of start-up. */
void ac_stack_start(void);
/* Captures the caller's stack, leaving out the shim's own frames. */
void ac_stack_capture(struct ac_stack *out);
/* The same, for an entry point whose return address into the program lies
 * in ret_slot: kept per call site and thread, and read back rather than
 * unwound when the same call comes again (stack.c says how that is told).
 * *id is the stack's depot id when known, else 0. */
void ac_stack_capture_site(struct ac_stack *out, void *const *ret_slot, ac_stack_id *id);
/* The depot id of a stack ac_stack_capture_site gave (id as it gave it):
 * id when known, else the stack stored, and its id kept with the call
 * site's stack for the next capture there (model lock held). */
ac_stack_id ac_stack_store(const struct ac_stack *stack, ac_stack_id id);
/* The slot of the calling function's return address, for the above. */
#define AC_RETURN_SLOT() ((void *const *)__builtin_frame_address(0) + 1)
bool ac_pc_in_shim(const void *pc);
/* Whether pc is in libunwind's code (the shim's own copy). */
bool ac_pc_in_unwinder(uintptr_t pc);
/* interceptors_own.c: libunwind's read of the pipe it does not have. */
bool ac_unwinder_read(int fd, ssize_t *result);
bool ac_unwinder_write(int fd, const void *addr, ssize_t *result);
/* With --verbose: how many stacks were taken and what they cost. */
void ac_stack_print_stats(void);
/* --verbose: the attaches' wall time, step by step (check_attach.c). */
void ac_attach_print_stats(void);
/* The stack of the code a signal interrupted (async-signal-safe). */
void ac_stack_capture_from_signal(void *ucontext, struct ac_stack *out);
/* Whether this thread is inside libunwind for ac_stack_capture (a signal
 * handler there must not unwind again). */
bool ac_stack_capturing(void);

/* ---- findings.c ---- */
/* Completes a finding with the driver's answer and hands it to the reports. */
void ac_emit_finding(struct ac_finding *f, enum ac_driver_outcome outcome, CUresult result);

/* ---- halt.c: --on-error halt ---- */
/* After an error finding of rule: the reports written, the calling thread
 * stops there - unless it is the reporter (from_reporter), which only asks
 * the faulting thread's handler to (ac_halt_asked). */
void ac_halt_at_finding(const char *rule, bool from_reporter);
bool ac_halt_asked(void);
/* SIGTRAP under a debugger, else abort() and its core; async-signal-safe. */
void ac_halt_now(void);

/* Records that the program initialised CUDA (for --require-cuda-init). */
void ac_note_cuda_init(CUresult result);

/* ---- check_*.c: the entry points' logic ---- */
CUresult ac_check_attach(void *const *ret_slot, const char *api, bool per_thread, CUstream stream,
                         CUdeviceptr dptr, size_t length, unsigned flags);
void ac_check_managed_allocated(void *const *ret_slot, const char *api, CUdeviceptr base,
                                size_t size, unsigned flags);
/* The driver took placement advice for the memory at addr: recorded for the
 * timeline of later findings. */
void ac_check_advised(const char *api, CUdeviceptr addr, CUmem_advise advice);
/* The program prefetched [addr, addr + count) to where: its own last prefetch. */
void ac_check_prefetched(CUdeviceptr addr, size_t count, CUmemLocation where);
/* A successful cuMemRangeGetAttribute of [addr, addr + count): a last prefetch
 * location the guard's own prefetch changed becomes the program's own. */
void ac_check_prefetch_answer(void *data, size_t size, CUmem_range_attribute attr, CUdeviceptr addr,
                              size_t count);
void ac_check_managed_variable(const char *api, CUdeviceptr base, size_t size, uintptr_t module,
                               const char *name);
/* Called before cuMemFree (and the other frees of memory the model may have
 * learned: cuMemFreeHost, cuMemHostUnregister, cuMemFreeAsync,
 * cuIpcCloseMemHandle); returns the record's serial for ac_check_freed, which
 * forgets that record (not one made since at the same address). */
uint64_t ac_check_before_free(CUdeviceptr base);
void ac_check_freed(CUdeviceptr base, uint64_t serial, CUresult result);
/* The same for a range whose mappings end (cuMemUnmap, cuMemAddressFree):
 * every record overlapping it, made by the serial the first call returns. */
uint64_t ac_check_before_range_end(CUdeviceptr base, size_t size);
void ac_check_range_ended(CUdeviceptr base, size_t size, uint64_t serial, CUresult result);
/* What kind of memory ptr is, asking the driver once if the model does not know. */
enum ac_mem_kind ac_check_classify(CUdeviceptr ptr);
void ac_check_stream_created(const char *api, CUstream stream, unsigned flags, int priority);
/* Before a destroy is forwarded: the serial of the stream the handle names. */
uint64_t ac_check_stream_to_destroy(CUstream stream);
void ac_check_stream_destroyed(const char *api, CUstream stream, uint64_t serial);
/* A stream of a green context: created as cuStreamCreate's, and counted as the green context's. */
void ac_check_green_stream_created(CUstream stream, CUgreenCtx green, unsigned flags, int priority);
void ac_check_green_ctx_destroyed(CUgreenCtx green);
/* Model lock held: the live streams the shim saw made in green, into *out
 * (malloc'd, the caller frees it); returns how many. */
size_t ac_check_green_streams_locked(CUgreenCtx green, struct ac_stream ***out);
void ac_check_capture_begun(CUstream stream, bool per_thread);
void ac_check_capture_ended(CUstream stream, bool per_thread);
/* Model lock held: every created stream ends with the context (check_stream.c). */
void ac_check_streams_ended_locked(void);
/* A module or library (its handle) is unloaded: its __managed__ variables end.
 * Before the call, and after it with the driver's answer. */
void ac_check_before_module_unload(uintptr_t module);
void ac_check_module_unloaded(uintptr_t module, CUresult result);
/* Contexts: with the last one the shim knows of, every allocation and stream ends. */
void ac_check_context_created(void);
void ac_check_primary_retained(CUdevice dev);
enum ac_ctx_end { AC_CTX_DESTROY, AC_CTX_RELEASE, AC_CTX_RESET };
/* Before a call that ends a context: whether it ends the last one (then the
 * guard has let go of every allocation); ac_check_context_ended gets that back. */
bool ac_check_before_context_end(enum ac_ctx_end how, CUdevice dev);
void ac_check_context_ended(enum ac_ctx_end how, CUdevice dev, bool last, CUresult result);
/* ---- check_order.c: the ordering model's events ---- */
struct ac_op_origin_slot {
  struct ac_stream *stream;
  uint64_t seq;
  bool turned_busy;
  uint64_t serial; /* the stream's: outside the lock it is found again by it */
};
void ac_on_work(const char *api, CUstream stream, bool per_thread);
/* An operation of the stream that keeps the host out of nothing (a
 * prefetch): ordered, but the stream is not busy for the host on its account. */
void ac_on_quiet_work(const char *api, CUstream stream, bool per_thread);
struct ac_stream *ac_on_work_locked(const char *api, CUstream stream, bool per_thread,
                                    struct ac_op_origin_slot *slot);
void ac_on_work_busy_stack(const struct ac_op_origin_slot *slot, const struct ac_stack *stack);

/* ---- kernel_args.c: what launches and copies give the GPU (AC301, AC302) ---- */
/* ret_slot: where the launch's return address into the program lies (stack.c). */
void ac_on_launch(void *const *ret_slot, const char *api, CUfunction f,
                  const struct ac_launch_dims *dims, CUstream stream, bool per_thread,
                  void **params, void **extra);
void ac_on_copy(const char *api, CUstream stream, bool per_thread, uintptr_t dst, uintptr_t src);
/* Before a launch, or a copy or set into [dst, dst + bytes), is forwarded:
 * closed memory it reaches moves to the GPU first (work_ahead.c). */
void ac_launch_ahead(CUfunction f, CUstream stream, bool per_thread, void **params, void **extra);
void ac_copy_ahead(CUstream stream, bool per_thread, uintptr_t dst, size_t bytes);
/* Decides once, when CUDA is initialised, whether `--semantics device`
 * holds: every device must have concurrent managed access. */
void ac_semantics_decide(void);
/* With --verbose: what judging launches cost. */
void ac_kernel_args_print_stats(void);
/* A __managed__ variable of module (model lock held): given to its kernels. */
void ac_kernel_args_note_variable(uintptr_t module, uintptr_t base);
/* The module is unloaded (model lock held): its variables are no longer given. */
void ac_kernel_args_forget_module(uintptr_t module);

/* ---- module_images.c: layouts read from module images (drivers before 12.4) ---- */
struct ac_image_kernel;
/* Whether the driver lacks the parameter-info API, so images are read. */
bool ac_images_wanted(void);
/* A module or library was loaded from image: its kernels' layouts are kept. */
void ac_image_loaded(uintptr_t module, const void *image);
/* cuModuleGetFunction / cuLibraryGetKernel gave handle for name of module. */
void ac_image_function_found(uintptr_t handle, uintptr_t module, const char *name);
/* The layout of handle's kernel as its image says, and its module. */
bool ac_image_layout(uintptr_t handle, struct ac_image_kernel *out, uintptr_t *module);
/* The module or library is unloaded: its layouts and handles are dropped. */
void ac_image_module_unloaded(uintptr_t module);
/* ---- graph_args.c: what an executable graph gives the GPU ----
 * Its kernel, memcpy and memset nodes are read at instantiation, follow every
 * change of the executable's parameters, and are judged against the stream of
 * each launch; its event-record nodes' events are recorded by each launch. */
void ac_on_graph_instantiated(CUgraphExec exec, CUgraph graph);
void ac_on_graph_updated(CUgraphExec exec, CUgraph graph);
void ac_on_graph_kernel_node_set(CUgraphExec exec, CUgraphNode node, CUfunction func, void **params,
                                 void **extra);
void ac_on_graph_copy_node_set(CUgraphExec exec, CUgraphNode node, const CUDA_MEMCPY3D *copy);
void ac_on_graph_memset_node_set(CUgraphExec exec, CUgraphNode node, CUdeviceptr dst);
void ac_on_graph_child_node_set(CUgraphExec exec, CUgraphNode node, CUgraph child);
void ac_on_graph_event_node_set(CUgraphExec exec, CUgraphNode node, CUevent event);
void ac_on_graph_node_params_set(CUgraphExec exec, CUgraphNode node, const CUgraphNodeParams *p);
void ac_on_graph_exec_destroyed(CUgraphExec exec);
void ac_on_graph_launch(const char *api, CUgraphExec exec, CUstream stream, bool per_thread);
/* Before a graph launch is forwarded: closed memory its kernels are given and
 * its copies and sets write moves to the GPU first (guard/ahead.c). */
void ac_graph_launch_ahead(CUgraphExec exec, CUstream stream, bool per_thread);
void ac_on_stream_sync(CUstream stream, bool per_thread);
/* ---- check_context.c: the context each stream belongs to ---- */
/* What a stream argument refers to; a default stream is the calling
 * thread's current context's own. */
struct ac_stream_ref ac_resolve_stream_locked(CUstream stream, bool per_thread, uint64_t thread);
/* After a stream was created: the calling thread's current context's. */
void ac_check_stream_context(CUstream stream);
/* Its streams' work ends with it. */
void ac_check_context_destroyed(CUcontext ctx);
/* cuCtxSynchronize (ctx NULL: the current one): the host waits for that
 * context's streams, not for those the shim saw made in another. */
void ac_on_ctx_sync(CUcontext ctx);
/* cuCtxRecordEvent / cuCtxWaitEvent: over each stream of the context. */
void ac_on_ctx_event_record(CUcontext ctx, CUevent event);
void ac_on_ctx_event_wait(CUcontext ctx, CUevent event);
void ac_on_sync_copy(const char *api, bool per_thread);
/* flags: cuEventRecordWithFlags's (0 for cuEventRecord). */
void ac_on_event_record(CUevent event, CUstream stream, unsigned flags, bool per_thread);
/* cuLaunchKernelEx's event attributes, told before the launch itself. */
void ac_on_launch_events(const CUlaunchConfig *config, bool per_thread);
void ac_on_event_sync(CUevent event);
void ac_on_stream_wait(CUstream stream, CUevent event, bool per_thread);
/* cuGreenCtxRecordEvent / cuGreenCtxWaitEvent: over each stream of the green context. */
void ac_on_green_event_record(CUgreenCtx green, CUevent event);
void ac_on_green_event_wait(CUgreenCtx green, CUevent event);
/* Model lock held: one event recorded over n streams; n streams wait for one. */
void ac_event_recorded_over_locked(CUevent event, struct ac_stream *const *streams, size_t n);
void ac_streams_wait_event_locked(CUevent event, struct ac_stream *const *streams, size_t n);
void ac_on_event_destroyed(CUevent event);
struct host_call;
struct host_call *ac_on_host_function(const char *api, CUstream stream, bool per_thread,
                                      CUhostFn fn, CUstreamCallback callback, void *data);
CUhostFn ac_host_call_trampoline(void);
CUstreamCallback ac_stream_callback_trampoline(void);
void ac_host_function_not_enqueued(struct host_call *c);
/* What an attach's first section found, for its second: the model's entry
 * count when it left, the allocation and the stream (valid while
 * ac_model_untouched_since(entries)). */
struct ac_attach_found {
  uint64_t entries;
  struct ac_alloc *alloc;
  struct ac_stream *stream;
};
/* stack_id: the stack's depot id if known, else 0. */
void ac_on_attached(const char *api, CUstream stream, bool per_thread, CUdeviceptr dptr,
                    unsigned flags, const struct ac_stack *stack, ac_stack_id stack_id,
                    const struct ac_attach_found *found);
/* The stream whose host function this thread is running, or NULL. */
const struct ac_stream *ac_current_host_function_stream(void);

/* One line through the report's message route (AC_PREFIX, the log or stderr). */
void ac_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Resets the model in a forked child (its managed memory is unmapped there). */
void ac_check_reset_after_fork(void);

#endif
