/* shim.h - what the shim's files share: the real driver's entry points, the
 * lazy start-up, the model's lock, and the small per-thread facts.
 *
 * Layout of shim/:
 *   entrypoints.inc       the one table of wrapped entry points
 *   driver_api.inc        every function cuda.h declares: wrapped, or why not
 *   init.c                lazy, re-entrancy-safe start-up; fork handling
 *   doors.c               dlsym and cuGetProcAddress: answers by pointer identity
 *   dlsym_x86_64.S        the exported dlsym, keeping the caller's identity
 *   interceptors_*.c      the hand-written wrappers: thin, they only call in here
 *   check_attach.c        the attach pipeline: gather facts, judge, guard, forward
 *   check_memory.c        allocations: recording, and classifying unknown pointers
 *   check_stream.c        streams: creation, destruction, capture
 *   check_order.c         the ordering model's events: work, synchronisation, host functions
 *   check_context.c       the context of each stream: a context's events and synchronisation
 *   kernel_args.c         what launches and copies give the GPU: AC301, AC302, reach
 *   graph_args.c          what an executable graph gives the GPU, following its changes
 *   guard.c               the page guard: protection follows the model (refresh side)
 *   guard_fault.c         the page guard: a fault or a system call judged and lifted
 *   guard_keys.c          the page guard on protection keys: classes, threads' PKRU
 *   pkeys.c               protection keys: detection, PKRU, signal frames, key choice
 *   guard_reporter.c      findings made in the signal handler, reported later
 *   ranges.c              sorted page-range lists, the guard's arithmetic
 *   interceptors_signal.c SIGSEGV shared with the program (sigaction, signal)
 *   interceptors_io.c     system calls handed guarded buffers (read, write, ...)
 *   interceptors_block.c  calls a signal would cut short: the thread parked for the keys
 *   stack.c               call stacks with libunwind
 *   findings.c            hands findings to report/ with the process's details
 */
#ifndef AC_SHIM_H
#define AC_SHIM_H

#define __CUDA_API_VERSION_INTERNAL 1
#include <cuda.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>

#include "finding.h"
#include "model.h"
#include "options.h"
#include "report.h"

#define AC_EXPORT __attribute__((visibility("default")))
#define AC_LIKELY(x) __builtin_expect(!!(x), 1)
#define AC_UNLIKELY(x) __builtin_expect(!!(x), 0)

/* The first lines of every wrapper: start the shim, and answer as a driver
 * without this entry point would if the real one lacks it. */
#define AC_START_OR_FAIL(Name)                                                                     \
  if (AC_UNLIKELY(!ac_start())) return CUDA_ERROR_NOT_INITIALIZED;                                 \
  if (AC_UNLIKELY(!ac_real.Name)) return CUDA_ERROR_NOT_FOUND;

/* The real driver's entry points, one typed field per table row. */
struct ac_real_table {
#define AC_HOOK(Name, Params) __typeof__(&Name) Name;
#include "entrypoints.inc"
#undef AC_HOOK
  /* Entry points the shim calls for itself and does not wrap. */
  __typeof__(&cuPointerGetAttributes) cuPointerGetAttributes;
  __typeof__(&cuPointerGetAttribute) cuPointerGetAttribute;
  __typeof__(&cuCtxGetDevice) cuCtxGetDevice;
  __typeof__(&cuCtxGetCurrent) cuCtxGetCurrent;
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
  __typeof__(&cuGraphGetEdges_v2) cuGraphGetEdges_v2; /* 12.3 on */
  __typeof__(&cuDriverGetVersion) cuDriverGetVersion;
  __typeof__(&cuDeviceGetCount) cuDeviceGetCount;
  __typeof__(&cuDeviceGet) cuDeviceGet;
  __typeof__(&cuDeviceGetName) cuDeviceGetName;
};

enum ac_entry_id {
#define AC_HOOK(Name, Params) AC_ID_##Name,
#include "entrypoints.inc"
#undef AC_HOOK
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
 * The shim's locks, in the one order they may be taken (a lock may be taken
 * while holding only locks above it):
 *   start_lock (init.c)        start-up and the fork handlers
 *   drain_lock (guard.c)       one batch of the signal handler's findings at a time
 *   ac_model_lock              the model and the guard's state
 *   disposition_lock           the program's SIGSEGV disposition
 *   layout_lock (kernel_args)  cached kernel layouts
 *   image_lock (module_images) layouts read from module images
 *   the report's sink lock     report/sink.c: findings, streams, files
 *   symbolize_lock             report/symbolize.c
 * The report's code never calls back into the shim, and the shim's own I/O
 * never passes through its interceptors, so no lock is taken out of order on
 * the way down. The fork handlers take start_lock, ac_model_lock and the
 * sink lock in this order.
 *
 * The model lock is taken with ac_model_enter() only, which records that
 * this thread holds it: the SIGSEGV handler uses that to never wait for a
 * lock its own thread holds (a signal handler that touches guarded memory
 * while the interrupted code is inside the shim), and debug builds assert
 * it where a function needs the lock held. */
extern pthread_mutex_t ac_model_lock;
extern struct ac_model *ac_model;
extern __thread bool ac_model_held;
/* Stops the process with a line naming the broken lock rule (AC_CHECK_LOCKS). */
void ac_lock_violation(const char *what) __attribute__((noreturn));

static inline void ac_model_enter(void) {
#ifdef AC_CHECK_LOCKS
  if (ac_model_held) ac_lock_violation("ac_model_enter: the model lock is held already");
  if (ac_report_sink_held()) ac_lock_violation("ac_model_enter: the sink lock comes after it");
#endif
  pthread_mutex_lock(&ac_model_lock);
  ac_model_held = true;
}
static inline void ac_model_leave(void) {
  ac_model_held = false;
  pthread_mutex_unlock(&ac_model_lock);
}
#ifdef AC_CHECK_LOCKS
#define AC_ASSERT_MODEL_HELD()                                                                     \
  do {                                                                                             \
    if (!ac_model_held) ac_lock_violation(__func__);                                               \
  } while (0)
#else
#define AC_ASSERT_MODEL_HELD() ((void)0)
#endif

/* A small stable number for the calling thread (1 for the first). */
uint64_t ac_thread_id(void);

/* ---- stack.c ---- */
/* Finds where the shim itself is mapped (for ac_pc_in_shim); idempotent. */
void ac_stack_locate_shim(void);
/* Loads the unwinder; part of start-up. */
void ac_stack_start(void);
/* Captures the caller's stack, leaving out the shim's own frames. */
void ac_stack_capture(struct ac_stack *out);
bool ac_pc_in_shim(const void *pc);
/* With --verbose: how many stacks were taken and what they cost. */
void ac_stack_print_stats(void);
/* The stack of the code a signal interrupted (async-signal-safe). */
void ac_stack_capture_from_signal(void *ucontext, struct ac_stack *out);

/* ---- findings.c ---- */
/* Completes a finding with the driver's answer and hands it to the reports. */
void ac_emit_finding(struct ac_finding *f, enum ac_driver_outcome outcome, CUresult result);
/* Records that the program initialised CUDA (for --require-cuda-init). */
void ac_note_cuda_init(CUresult result);

/* ---- check_*.c: the entry points' logic ---- */
CUresult ac_check_attach(const char *api, bool per_thread, CUstream stream, CUdeviceptr dptr,
                         size_t length, unsigned flags);
void ac_check_managed_allocated(const char *api, CUdeviceptr base, size_t size, unsigned flags);
/* The driver took placement advice for the memory at addr: recorded for the
 * timeline of later findings. */
void ac_check_advised(const char *api, CUdeviceptr addr, CUmem_advise advice);
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
struct ac_stream *ac_on_work_locked(const char *api, CUstream stream, bool per_thread,
                                    struct ac_op_origin_slot *slot);
void ac_on_work_busy_stack(const struct ac_op_origin_slot *slot, const struct ac_stack *stack);

/* ---- kernel_args.c: what launches and copies give the GPU (AC301, AC302) ---- */
void ac_on_launch(const char *api, CUfunction f, const struct ac_launch_dims *dims, CUstream stream,
                  bool per_thread, void **params, void **extra);
void ac_on_copy(const char *api, CUstream stream, bool per_thread, uintptr_t dst, uintptr_t src);
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
void ac_on_event_record(CUevent event, CUstream stream, bool per_thread);
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
void ac_on_attached(const char *api, CUstream stream, bool per_thread, CUdeviceptr dptr,
                    unsigned flags, const struct ac_stack *stack);
/* The stream whose host function this thread is running, or NULL. */
const struct ac_stream *ac_current_host_function_stream(void);

/* ---- guard.c: the page guard ---- */
void ac_guard_start(void);
/* Device device has no concurrent managed access: its driver protects managed
 * memory itself, so the guard gives up protection keys for mprotect. */
void ac_guard_device_protects_managed(int device);
/* Brings page protection exactly in line with the model; model lock held. */
void ac_guard_refresh_locked(void);
/* What ac_guard_refresh_after_move_locked compares with: the model as an
 * operation found it, taken under the same hold of the model lock. */
struct ac_guard_before {
  uint64_t generation, layout, busy_changes;
};
void ac_guard_before_locked(struct ac_guard_before *before);
/* ac_guard_refresh_locked after an operation that moved allocation a (which
 * may be NULL) between classes and did nothing else the guard follows - an
 * attach - since before: skipped where that cannot change a page. */
void ac_guard_refresh_after_move_locked(const struct ac_guard_before *before,
                                        const struct ac_alloc *a);
/* Marks a about to be freed and lifts what protected it; model lock held. */
void ac_guard_retire_locked(struct ac_alloc *a);
enum ac_guard_claim { AC_GUARD_NOT_OURS, AC_GUARD_HANDLED, AC_GUARD_RETRY };
/* From the SIGSEGV handler: judges a fault on guarded memory and lifts it.
 * pc is the faulting instruction; pkey the key of a protection-key fault, or -1.
 * AC_GUARD_RETRY: the page was no longer the guard's to protect when it
 * looked (a transition of another thread let it go), and the access may run
 * again; *epoch then says which protection of the guard's that was (it
 * changes at every transition), so that the handler can tell a page the
 * guard protects anew each time (threads racing: retried up to a far larger
 * bound) from one that faults again under the same protection (the driver
 * refusing it: a few retries, then the program's own fault). A key fault
 * whose report names a key the thread allowed (another thread retagged the
 * page in between) is retried the same way, its epoch the count of tags. */
enum ac_guard_claim ac_guard_on_fault(void *addr, bool is_write, uintptr_t pc, int pkey,
                                      void *ucontext, unsigned *epoch);
/* From the SIGSEGV handler: a signal sent by the guard to make this thread
 * drop protection keys (guard_keys.c); false if it was not one. */
bool ac_guard_keys_on_revocation(const siginfo_t *info, void *ucontext);
/* Around a call a signal would cut short (a sleep, a poll, a wait): the
 * guard does not signal a parked thread; it catches up on unpark. */
void ac_guard_park(void);
void ac_guard_unpark(void);
/* Whether pc is in the driver's code. */
bool ac_pc_in_driver(uintptr_t pc);
/* A system call is about to read (cpu_writes false) or fill a buffer. */
void ac_guard_check_buffer(const char *via, const void *buf, size_t len, bool cpu_writes);
void ac_guard_after_fork_child(void);
/* With --verbose: what the guard did and cost. */
void ac_guard_print_stats(void);
/* ---- guard_reporter.c: findings of the signal handler ---- */
/* A slot for the handler's next finding, or NULL (the ring stayed full);
 * model lock held, which it may release and retake while it waits. */
struct ac_finding *ac_guard_ring_slot_locked(void);
/* The slot is filled: hand it to the reporter. */
void ac_guard_ring_commit_locked(void);
void ac_guard_reporter_start(void);
void ac_guard_reporter_after_fork_child(void);
/* Reports what the signal handler found (normal context). */
void ac_guard_drain(void);
/* From the SIGSEGV handler, before a fault the guard cannot resolve may kill
 * the process: waits up to max_ms for the reporter to have written every
 * finding of the ring. Async-signal-safe. */
void ac_guard_wait_reported(int max_ms);
/* interceptors_signal.c */
void ac_signal_install_guard_handler(void);
/* One line through the report's message route (AC_PREFIX, the log or stderr). */
void ac_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Resets the model in a forked child (its managed memory is unmapped there). */
void ac_check_reset_after_fork(void);

#endif
