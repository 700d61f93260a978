/* fake_core.c - initialisation, devices, contexts, error names.
 *
 * One device (an H100) unless FAKECUDA_DEVICES asks for more (up to
 * FAKE_MAX_DEVICES), each with its primary context; a context is current per
 * thread, set or pushed and popped as on the real driver. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fake.h"

pthread_mutex_t fake_lock = PTHREAD_MUTEX_INITIALIZER;
bool fake_initialized;

struct fake_context {
  int device;
};
static struct fake_context primary_contexts[FAKE_MAX_DEVICES] = {{0}, {1}, {2}, {3}};
static __thread CUcontext current_context;
/* cuCtxPushCurrent's stack of the contexts below the current one. */
#define CONTEXT_STACK 16
static __thread CUcontext context_stack[CONTEXT_STACK];
static __thread int context_depth;

int fake_device_count(void) {
  const char *v = getenv("FAKECUDA_DEVICES");
  int n = v && *v ? atoi(v) : 1;
  return n < 1 ? 1 : n > FAKE_MAX_DEVICES ? FAKE_MAX_DEVICES : n;
}
static bool valid_device(CUdevice dev) {
  return dev >= 0 && dev < fake_device_count();
}

CUcontext fake_current_context(void) {
  return current_context;
}
CUdevice fake_current_device(void) {
  return current_context ? ((struct fake_context *)current_context)->device : 0;
}

_Noreturn void fake_crash_like_the_driver(void) {
  volatile int *volatile nowhere = NULL;
  *nowhere = 1;
  abort();
}

FAKE_EXPORT CUresult cuInit(unsigned int flags) {
  if (flags != 0) return CUDA_ERROR_INVALID_VALUE;
  /* An older driver is another build of this library (it must not export the
   * newer names): asking this one to play it is refused, with the folder of
   * the one that does, rather than answered as a newer driver would. */
  const char *wanted = getenv("FAKECUDA_DRIVER_VERSION");
  if (wanted && *wanted && atoi(wanted) != FAKECUDA_DRIVER_VERSION) {
    fprintf(stderr,
            "fakecuda: this libcuda.so.1 plays driver %d; for FAKECUDA_DRIVER_VERSION=%s use "
            "the one in build/tests/fakecuda/driver-%s/ (LD_LIBRARY_PATH)\n",
            FAKECUDA_DRIVER_VERSION, wanted, wanted);
    return CUDA_ERROR_NO_DEVICE;
  }
  if (fake_profile() == FAKE_PROFILE_UNKNOWN) {
    fprintf(stderr, "fakecuda: FAKECUDA_PROFILE=%s: no such device (h100, tegra, grace)\n",
            getenv("FAKECUDA_PROFILE"));
    return CUDA_ERROR_NO_DEVICE;
  }
  fake_initialized = true;
  return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult cuDriverGetVersion(int *version) {
  if (!version) return CUDA_ERROR_INVALID_VALUE;
  *version = FAKECUDA_DRIVER_VERSION;
  return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult cuDeviceGetCount(int *count) {
  if (!fake_initialized) return CUDA_ERROR_NOT_INITIALIZED;
  if (!count) return CUDA_ERROR_INVALID_VALUE;
  *count = fake_device_count();
  return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult cuDeviceGet(CUdevice *dev, int ordinal) {
  if (!fake_initialized) return CUDA_ERROR_NOT_INITIALIZED;
  if (!dev) return CUDA_ERROR_INVALID_VALUE;
  if (!valid_device(ordinal)) return CUDA_ERROR_INVALID_DEVICE;
  *dev = ordinal;
  return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult cuDeviceGetName(char *name, int len, CUdevice dev) {
  if (!name || len <= 0) return CUDA_ERROR_INVALID_VALUE;
  if (!valid_device(dev)) return CUDA_ERROR_INVALID_DEVICE;
  strncpy(name, "attachcheck stand-in driver", (size_t)len - 1);
  name[len - 1] = 0;
  return CUDA_SUCCESS;
}

/* A device's memory: 80 GiB, an H100's order (driver-API programs such as
 * NVIDIA's matrixMulDrv ask before they start; nothing is allocated from it). */
FAKE_EXPORT CUresult cuDeviceTotalMem_v2(size_t *bytes, CUdevice dev) {
  if (!fake_initialized) return CUDA_ERROR_NOT_INITIALIZED;
  if (!bytes) return CUDA_ERROR_INVALID_VALUE;
  if (!valid_device(dev)) return CUDA_ERROR_INVALID_DEVICE;
  *bytes = (size_t)80 << 30;
  return CUDA_SUCCESS;
}

/* The profile's value (the H100's: docs/driver-facts.md), overridable by
 * FAKECUDA_<NAME> for every device or FAKECUDA_<NAME>_<DEVICE> for one. */
static int attribute_or_env(const char *env, int profile_value, CUdevice dev) {
  char one[96];
  snprintf(one, sizeof one, "%s_%d", env, dev);
  const char *v = getenv(one);
  if (!v || !*v) v = getenv(env);
  return v && *v ? atoi(v) : profile_value;
}

int fake_device_attribute(CUdevice_attribute attr, CUdevice dev) {
  enum fake_profile p = fake_profile();
  switch (attr) {
  case CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS:
    return attribute_or_env("FAKECUDA_CONCURRENT_MANAGED_ACCESS", p != FAKE_PROFILE_TEGRA, dev);
  case CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS:
    return attribute_or_env("FAKECUDA_PAGEABLE_MEMORY_ACCESS", p == FAKE_PROFILE_GRACE, dev);
  case CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS_USES_HOST_PAGE_TABLES:
    return p == FAKE_PROFILE_GRACE;
  case CU_DEVICE_ATTRIBUTE_INTEGRATED:
    return p == FAKE_PROFILE_TEGRA;
  case CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY:
    return 1;
  case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR:
    return p == FAKE_PROFILE_TEGRA ? 8 : 9; /* Orin: 8.7 */
  case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR:
    return p == FAKE_PROFILE_TEGRA ? 7 : 0;
  case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT:
    return p == FAKE_PROFILE_TEGRA ? 16 : 132;
  case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK:
    return 1024;
  case CU_DEVICE_ATTRIBUTE_WARP_SIZE:
    return 32;
  case CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING:
    return 1;
  default:
    return 0;
  }
}

FAKE_EXPORT CUresult cuDeviceGetAttribute(int *pi, CUdevice_attribute attrib, CUdevice dev) {
  if (!fake_initialized) return CUDA_ERROR_NOT_INITIALIZED;
  if (!pi) return CUDA_ERROR_INVALID_VALUE;
  if (!valid_device(dev)) return CUDA_ERROR_INVALID_DEVICE;
  *pi = fake_device_attribute(attrib, dev);
  return CUDA_SUCCESS;
}

/* Contexts own every allocation and stream: when the last one ends (a
 * created context destroyed, the primary context released to zero or reset)
 * they all end, as on the real driver. */
static int created_contexts, primary_refs[FAKE_MAX_DEVICES];

/* Whether any context but dev's primary one is live. */
static bool other_contexts_live(CUdevice dev) {
  if (__atomic_load_n(&created_contexts, __ATOMIC_SEQ_CST) > 0) return true;
  for (int d = 0; d < FAKE_MAX_DEVICES; d++)
    if (d != dev && __atomic_load_n(&primary_refs[d], __ATOMIC_SEQ_CST) > 0) return true;
  return false;
}

static void context_ended(void) {
  if (other_contexts_live(-1)) return;
  fake_streams_end_all();
  fake_memory_end_all();
}

FAKE_EXPORT CUresult cuDevicePrimaryCtxRetain(CUcontext *pctx, CUdevice dev) {
  if (!fake_initialized) return CUDA_ERROR_NOT_INITIALIZED;
  if (!pctx) return CUDA_ERROR_INVALID_VALUE;
  if (!valid_device(dev)) return CUDA_ERROR_INVALID_DEVICE;
  __atomic_add_fetch(&primary_refs[dev], 1, __ATOMIC_SEQ_CST);
  *pctx = (CUcontext)&primary_contexts[dev];
  return CUDA_SUCCESS;
}

/* The old ABIs share the body rather than call the exported _v2: the real
 * driver calls no export of its own, and a shim in front must see one call. */
static CUresult release_primary(CUdevice dev) {
  if (!valid_device(dev)) return CUDA_ERROR_INVALID_DEVICE;
  if (primary_refs[dev] == 0) return CUDA_ERROR_INVALID_CONTEXT;
  if (__atomic_sub_fetch(&primary_refs[dev], 1, __ATOMIC_SEQ_CST) == 0) context_ended();
  return CUDA_SUCCESS;
}
FAKE_EXPORT CUresult cuDevicePrimaryCtxRelease_v2(CUdevice dev) {
  return release_primary(dev);
}
FAKE_EXPORT CUresult cuDevicePrimaryCtxRelease(CUdevice dev) {
  return release_primary(dev);
}

/* Every allocation and stream of the primary context ends; the context
 * stays retained and comes back on its next use. */
static CUresult reset_primary(CUdevice dev) {
  if (!fake_initialized) return CUDA_ERROR_NOT_INITIALIZED;
  if (!valid_device(dev)) return CUDA_ERROR_INVALID_DEVICE;
  if (!other_contexts_live(dev)) {
    fake_streams_end_all();
    fake_memory_end_all();
  }
  return CUDA_SUCCESS;
}
FAKE_EXPORT CUresult cuDevicePrimaryCtxReset_v2(CUdevice dev) {
  return reset_primary(dev);
}
FAKE_EXPORT CUresult cuDevicePrimaryCtxReset(CUdevice dev) {
  return reset_primary(dev);
}

static bool is_primary(CUcontext ctx) {
  return (uintptr_t)ctx >= (uintptr_t)&primary_contexts[0] &&
         (uintptr_t)ctx < (uintptr_t)&primary_contexts[FAKE_MAX_DEVICES];
}

static CUresult create_context(CUcontext *pctx, CUdevice dev) {
  if (!fake_initialized) return CUDA_ERROR_NOT_INITIALIZED;
  if (!pctx) return CUDA_ERROR_INVALID_VALUE;
  if (!valid_device(dev)) return CUDA_ERROR_INVALID_DEVICE;
  struct fake_context *c = calloc(1, sizeof *c);
  if (!c) return CUDA_ERROR_OUT_OF_MEMORY;
  c->device = dev;
  __atomic_add_fetch(&created_contexts, 1, __ATOMIC_SEQ_CST);
  *pctx = (CUcontext)c;
  /* A created context is pushed on the calling thread's stack. */
  if (context_depth < CONTEXT_STACK) context_stack[context_depth++] = current_context;
  current_context = *pctx;
  return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult cuCtxCreate_v2(CUcontext *pctx, unsigned int flags, CUdevice dev) {
  (void)flags;
  return create_context(pctx, dev);
}
FAKE_EXPORT CUresult cuCtxCreate_v4(CUcontext *pctx, CUctxCreateParams *params, unsigned int flags,
                                    CUdevice dev) {
  (void)params;
  (void)flags;
  return create_context(pctx, dev);
}

FAKE_EXPORT CUresult cuCtxDestroy_v2(CUcontext ctx) {
  if (!ctx) return CUDA_ERROR_INVALID_VALUE;
  if (is_primary(ctx)) return CUDA_ERROR_INVALID_CONTEXT;
  /* Destroying the current context pops it from the thread's stack. */
  if (current_context == ctx)
    current_context = context_depth > 0 ? context_stack[--context_depth] : NULL;
  free(ctx);
  if (__atomic_sub_fetch(&created_contexts, 1, __ATOMIC_SEQ_CST) == 0) context_ended();
  return CUDA_SUCCESS;
}

/* ---- green contexts: a share of the device's SMs, with streams of their own ---- */

FAKE_EXPORT CUresult cuDeviceGetDevResource(CUdevice dev, CUdevResource *res,
                                            CUdevResourceType type) {
  if (!fake_initialized) return CUDA_ERROR_NOT_INITIALIZED;
  if (!res) return CUDA_ERROR_INVALID_VALUE;
  if (!valid_device(dev)) return CUDA_ERROR_INVALID_DEVICE;
  if (type != CU_DEV_RESOURCE_TYPE_SM) return CUDA_ERROR_INVALID_RESOURCE_TYPE;
  memset(res, 0, sizeof *res);
  res->type = type;
  res->sm.smCount = 132; /* an H100 */
  return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult cuDevResourceGenerateDesc(CUdevResourceDesc *desc, CUdevResource *res,
                                               unsigned int count) {
  if (!desc || !res || count == 0) return CUDA_ERROR_INVALID_VALUE;
  *desc = (CUdevResourceDesc)calloc(1, sizeof(CUdevResource));
  return *desc ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}

FAKE_EXPORT CUresult cuGreenCtxCreate(CUgreenCtx *green, CUdevResourceDesc desc, CUdevice dev,
                                      unsigned int flags) {
  if (!fake_initialized) return CUDA_ERROR_NOT_INITIALIZED;
  if (!green || !desc || flags != CU_GREEN_CTX_DEFAULT_STREAM) return CUDA_ERROR_INVALID_VALUE;
  if (!valid_device(dev)) return CUDA_ERROR_INVALID_DEVICE;
  struct fake_context *c = calloc(1, sizeof *c);
  if (!c) return CUDA_ERROR_OUT_OF_MEMORY;
  c->device = dev;
  *green = (CUgreenCtx)c;
  return CUDA_SUCCESS;
}

CUcontext fake_green_primary(CUgreenCtx green) {
  return (CUcontext)&primary_contexts[((struct fake_context *)green)->device];
}

FAKE_EXPORT CUresult cuGreenCtxDestroy(CUgreenCtx green) {
  if (!green) return CUDA_ERROR_INVALID_HANDLE;
  free(green);
  return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult cuCtxSetCurrent(CUcontext ctx) {
  if (!fake_initialized) return CUDA_ERROR_NOT_INITIALIZED;
  current_context = ctx;
  return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult cuCtxGetCurrent(CUcontext *pctx) {
  if (!fake_initialized) return CUDA_ERROR_NOT_INITIALIZED;
  if (!pctx) return CUDA_ERROR_INVALID_VALUE;
  *pctx = current_context;
  return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult cuCtxGetDevice(CUdevice *dev) {
  if (!fake_initialized) return CUDA_ERROR_NOT_INITIALIZED;
  if (!dev) return CUDA_ERROR_INVALID_VALUE;
  if (!current_context) return CUDA_ERROR_INVALID_CONTEXT;
  *dev = ((struct fake_context *)current_context)->device;
  return CUDA_SUCCESS;
}

/* The context pushed becomes current, the one current before goes below it. */
FAKE_EXPORT CUresult cuCtxPushCurrent_v2(CUcontext ctx) {
  if (!fake_initialized) return CUDA_ERROR_NOT_INITIALIZED;
  if (!ctx) return CUDA_ERROR_INVALID_CONTEXT;
  if (context_depth == CONTEXT_STACK) return CUDA_ERROR_OUT_OF_MEMORY;
  context_stack[context_depth++] = current_context;
  current_context = ctx;
  return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult cuCtxPopCurrent_v2(CUcontext *pctx) {
  if (!fake_initialized) return CUDA_ERROR_NOT_INITIALIZED;
  if (!current_context) return CUDA_ERROR_INVALID_CONTEXT;
  if (pctx) *pctx = current_context;
  current_context = context_depth > 0 ? context_stack[--context_depth] : NULL;
  return CUDA_SUCCESS;
}

struct error_name {
  CUresult code;
  const char *name, *text;
};
static const struct error_name error_names[] = {
    {CUDA_SUCCESS, "CUDA_SUCCESS", "no error"},
    {CUDA_ERROR_INVALID_VALUE, "CUDA_ERROR_INVALID_VALUE", "invalid argument"},
    {CUDA_ERROR_OUT_OF_MEMORY, "CUDA_ERROR_OUT_OF_MEMORY", "out of memory"},
    {CUDA_ERROR_NOT_INITIALIZED, "CUDA_ERROR_NOT_INITIALIZED", "initialization error"},
    {CUDA_ERROR_NO_DEVICE, "CUDA_ERROR_NO_DEVICE", "no CUDA-capable device is detected"},
    {CUDA_ERROR_INVALID_DEVICE, "CUDA_ERROR_INVALID_DEVICE", "invalid device ordinal"},
    {CUDA_ERROR_INVALID_IMAGE, "CUDA_ERROR_INVALID_IMAGE", "device kernel image is invalid"},
    {CUDA_ERROR_INVALID_CONTEXT, "CUDA_ERROR_INVALID_CONTEXT", "invalid device context"},
    {CUDA_ERROR_INVALID_HANDLE, "CUDA_ERROR_INVALID_HANDLE", "invalid resource handle"},
    {CUDA_ERROR_NOT_FOUND, "CUDA_ERROR_NOT_FOUND", "named symbol not found"},
    {CUDA_ERROR_NOT_READY, "CUDA_ERROR_NOT_READY", "device not ready"},
    {CUDA_ERROR_ILLEGAL_STATE, "CUDA_ERROR_ILLEGAL_STATE", "the operation is not permitted"},
    {CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, "CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED",
     "operation not permitted when stream is capturing"},
    {CUDA_ERROR_STREAM_CAPTURE_INVALIDATED, "CUDA_ERROR_STREAM_CAPTURE_INVALIDATED",
     "operation failed due to a previous error during capture"},
    {CUDA_ERROR_STREAM_CAPTURE_UNMATCHED, "CUDA_ERROR_STREAM_CAPTURE_UNMATCHED",
     "capture was not initiated in this stream"},
    {CUDA_ERROR_STREAM_CAPTURE_UNJOINED, "CUDA_ERROR_STREAM_CAPTURE_UNJOINED",
     "capture sequence contains a fork that was not joined to the primary stream"},
    {CUDA_ERROR_STREAM_CAPTURE_ISOLATION, "CUDA_ERROR_STREAM_CAPTURE_ISOLATION",
     "dependency created on uncaptured work in another stream"},
    {CUDA_ERROR_STREAM_CAPTURE_IMPLICIT, "CUDA_ERROR_STREAM_CAPTURE_IMPLICIT",
     "operation would make the legacy stream depend on a capturing blocking stream"},
    {CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED, "CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED",
     "part or all of the requested memory range is already mapped"},
    {CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED, "CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED",
     "pointer does not correspond to a registered memory region"},
    {CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE, "CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE",
     "the graph update was not performed because it included changes which violated "
     "constraints specific to instantiated graph update"},
};

static const struct error_name *find_error(CUresult code) {
  for (size_t i = 0; i < sizeof error_names / sizeof error_names[0]; i++)
    if (error_names[i].code == code) return &error_names[i];
  return NULL;
}

FAKE_EXPORT CUresult cuGetErrorName(CUresult error, const char **pStr) {
  if (!pStr) return CUDA_ERROR_INVALID_VALUE;
  const struct error_name *e = find_error(error);
  *pStr = e ? e->name : NULL;
  return e ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

FAKE_EXPORT CUresult cuGetErrorString(CUresult error, const char **pStr) {
  if (!pStr) return CUDA_ERROR_INVALID_VALUE;
  const struct error_name *e = find_error(error);
  *pStr = e ? e->text : NULL;
  return e ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}
