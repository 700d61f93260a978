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

int fake_device_attribute(CUdevice_attribute attr);

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
/* Work was enqueued behind pending work; the host synchronised and work_pending
 * says whether any is still pending. The tegra profile takes managed memory
 * from the CPU between the two. */
void fake_work_pending(void);
void fake_host_synchronized(bool work_pending);

/* ---- memory (fake_memory.c) ---- */
enum fake_mem_kind { FAKE_MANAGED, FAKE_DEVICE, FAKE_PINNED };
struct fake_alloc {
  uintptr_t base;
  size_t size;
  enum fake_mem_kind kind;
  unsigned assoc;
  struct fake_alloc *next;
};
/* The allocation holding addr, or NULL. Caller holds fake_lock. */
struct fake_alloc *fake_find_alloc(uintptr_t addr);
CUresult fake_alloc_managed(CUdeviceptr *dptr, size_t bytes, unsigned assoc);
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
/* Graphs: a capture records kernel nodes with copies of their parameters. */
#define FAKE_GRAPH_NODES 32
#define FAKE_NODE_PARAMS 16
struct fake_graph_node {
  CUfunction func;
  void *params[FAKE_NODE_PARAMS];
  unsigned char storage[FAKE_NODE_PARAMS][64];
};
struct fake_graph {
  size_t count;
  struct fake_graph_node nodes[FAKE_GRAPH_NODES];
};
/* While the stream captures: records the launch as a node and returns true. */
bool fake_capture_kernel(CUstream h, bool per_thread_entry, CUfunction f, void **params,
                         size_t count, const size_t *sizes);
/* Enqueues one operation that completes at once (a kernel, a copy). */
CUresult fake_enqueue_work(CUstream h, bool per_thread_entry);
/* One operation on the legacy (or per-thread) stream that the host waits for. */
CUresult fake_sync_work(bool per_thread);
/* The last context ended: every created stream is destroyed (handles recycled). */
void fake_streams_end_all(void);

#endif
