/* fake.h - internals shared by the stand-in driver's files.
 *
 * The stand-in driver is CI's libcuda.so.1: it implements the subset of the
 * driver API that the scenarios use, with the return codes measured on the
 * real driver (docs/driver-facts.md), including the two calls that crash the real
 * driver. Managed memory is ordinary mmap'd memory, kernels do not run, host
 * functions do run (on a driver thread, in stream order).
 */
#ifndef FAKE_H
#define FAKE_H

#define __CUDA_API_VERSION_INTERNAL 1
#include <cuda.h>
#include <uthash.h>
#include <utlist.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define FAKE_EXPORT __attribute__((visibility("default")))

/* The driver version played: 13000 for libcuda.so.1 itself; the old-driver
 * variants (CMakeLists.txt, since.txt) are built with an older one. */
#ifndef FAKECUDA_DRIVER_VERSION
#define FAKECUDA_DRIVER_VERSION 13000
#endif

extern pthread_mutex_t fake_lock;
extern bool fake_initialized;

/* Dies with SIGSEGV inside the driver, as the real one does on some bad input. */
_Noreturn void fake_crash_like_the_driver(void);

/* Devices: FAKECUDA_DEVICES of them (1 by default). */
#define FAKE_MAX_DEVICES 4
int fake_device_count(void);
int fake_device_attribute(CUdevice_attribute attr, CUdevice dev);
/* The calling thread's current context, or NULL. */
CUcontext fake_current_context(void);
/* The device of the current context (device 0 without one). */
CUdevice fake_current_device(void);
/* Whether a prefetch may be enqueued: the stream's device has concurrent
 * managed access. */
bool fake_prefetch_allowed(void);
/* The primary context of a green context's device. */
CUcontext fake_green_primary(CUgreenCtx green);

/* ---- the device played (fake_profile.c): FAKECUDA_PROFILE ---- */
enum fake_profile {
  FAKE_PROFILE_H100,
  FAKE_PROFILE_TEGRA,
  FAKE_PROFILE_GRACE,
  FAKE_PROFILE_UNKNOWN
};
enum fake_profile fake_profile(void);
/* Managed memory mapped at base (len bytes) or unmapped; fake_lock held. */
void fake_managed_mapped(uintptr_t base, size_t len);
void fake_managed_unmapped(uintptr_t base);
/* The tegra profile's ownership of managed memory (fake_lock held): stream
 * got work (a kernel, a host function); the host saw its work complete, or
 * every stream's (a context synchronisation); an allocation was made or
 * attached anew. Nothing but under the tegra profile. */
void fake_tegra_active(const void *stream);
void fake_tegra_idle(const void *stream);
void fake_tegra_all_idle(void);
void fake_tegra_changed(void);
/* A kernel enqueued on stream h (fake_stream.c). */
CUresult fake_enqueue_kernel(CUstream h, bool per_thread_entry);

/* ---- memory (fake_memory.c) ---- */
enum fake_mem_kind { FAKE_MANAGED, FAKE_DEVICE, FAKE_PINNED };
/* Who maps an allocation's pages: the driver (unmapped when it ends), the
 * program (registered host memory stays), or a reserved range (cuMemMap). */
enum fake_mapping { FAKE_MAPPED_BY_DRIVER, FAKE_MAPPED_BY_PROGRAM, FAKE_MAPPED_IN_RESERVE };
struct fake_alloc {
  uintptr_t base;
  size_t size;
  enum fake_mem_kind kind;
  unsigned assoc;
  const void *stream; /* CU_MEM_ATTACH_SINGLE's stream */
  enum fake_mapping mapping;
  bool ipc_opened; /* by cuIpcOpenMemHandle: ended by cuIpcCloseMemHandle */
  /* Where the last prefetch of it went, +2 (0: never; 1: the CPU; 2 + n:
   * device n), as cuMemRangeGetAttribute's LAST_PREFETCH_LOCATION tells. */
  int prefetched;
  struct fake_alloc *next, *prev;
  UT_hash_handle hh; /* by base: records never overlap, so a base names one */
};
/* fn for each allocation. Caller holds fake_lock. */
void fake_for_each_alloc(void (*fn)(const struct fake_alloc *a, void *ctx), void *ctx);
/* The allocation holding addr, or NULL. Caller holds fake_lock. */
struct fake_alloc *fake_find_alloc(uintptr_t addr);
CUresult fake_alloc_managed(CUdeviceptr *dptr, size_t bytes, unsigned assoc);
/* Device memory (cuMemAlloc's). */
CUresult fake_alloc_device(CUdeviceptr *dptr, size_t bytesize);
/* A stream-ordered allocation of device memory: an operation of stream h. */
CUresult fake_alloc_async(CUdeviceptr *dptr, size_t bytesize, CUstream h, bool per_thread_entry);
/* Frees memory the driver made for itself (a module's variables) without
 * passing through the exported cuMemFree, as the real driver does. */
CUresult fake_free_internal(CUdeviceptr dptr);
/* The last context ended: every allocation goes, its addresses may come back. */
void fake_memory_end_all(void);

/* ---- streams (fake_stream.c) ---- */
struct fake_stream;
/* Resolves a stream argument; crashes on a handle that is no live stream. */
struct fake_stream *fake_stream_checked(CUstream h, bool per_thread_entry);
bool fake_stream_is_null(CUstream h, bool per_thread_entry);
/* Enqueues one operation that completes at once (a kernel, a copy). */
CUresult fake_enqueue_work(CUstream h, bool per_thread_entry);
/* One operation on the legacy (or per-thread) stream that the host waits for. */
CUresult fake_sync_work(bool per_thread);
/* The last context ended: every created stream is destroyed (handles recycled). */
void fake_streams_end_all(void);
/* cuLaunchKernelEx's event attributes: whether the driver takes them, and
 * their records once the kernel is enqueued. */
bool fake_launch_events_valid(const CUlaunchConfig *config);
void fake_launch_events_record(const CUlaunchConfig *config, bool per_thread_entry);
/* Whether the driver takes these memory operations: none names managed memory. */
bool fake_mem_ops_valid(unsigned count, const CUstreamBatchMemOpParams *ops);
/* Whether one of the operations names managed memory. */
bool fake_mem_ops_name_managed(unsigned count, const CUstreamBatchMemOpParams *ops);
/* The nodes of a capture's graph that a capturing stream's next node
 * depends on, or that an event recorded in a capture stands for. */
#define FAKE_CAPTURE_DEPS 8
struct fake_capture_tail {
  size_t count;
  size_t node[FAKE_CAPTURE_DEPS];
};
/* The graph the stream captures into, or NULL, and where the stream stands
 * in it; caller holds fake_lock. */
struct fake_graph *fake_capture_graph_locked(CUstream h, bool per_thread_entry,
                                             struct fake_capture_tail **tail);

/* ---- graphs (fake_graph.c) ---- */
struct fake_graph;
struct fake_graph *fake_graph_new(void);
void fake_graph_free(struct fake_graph *g);
/* While the stream captures: records the launch, copy or set as a node of its
 * graph and returns true (the work is not enqueued). */
bool fake_capture_kernel(CUstream h, bool per_thread_entry, CUfunction f, void **params,
                         size_t count, const size_t *sizes);
bool fake_capture_copy(CUstream h, bool per_thread_entry, const CUDA_MEMCPY3D *copy);
bool fake_capture_set(CUstream h, bool per_thread_entry, const CUDA_MEMSET_NODE_PARAMS *set);
bool fake_capture_event(CUstream h, bool per_thread_entry, CUevent event);
bool fake_capture_event_wait(CUstream h, bool per_thread_entry, CUevent event);
/* A node without parameters here (a host function, a stream-ordered
 * allocation or free), captured: true if h captures. */
bool fake_capture_plain(CUstream h, bool per_thread_entry, CUgraphNodeType type);
/* Whether every node of g comes before one of tail's (no fork left unjoined). */
bool fake_graph_joined(const struct fake_graph *g, const struct fake_capture_tail *tail);

/* ---- modules (fake_module.c) ---- */
/* A function's parameter sizes; false for a handle that is no function. */
bool fake_function_layout(CUfunction f, size_t *count, const size_t **sizes);

#endif
