/* fake_proc.c - cuGetProcAddress and cuGetProcAddress_v2.
 *
 * Like the real driver: a name is mapped to its newest ABI the caller's
 * cudaVersion allows ("cuStreamDestroy" at 4000 is cuStreamDestroy_v2,
 * "cuGetProcAddress" at 12000 is cuGetProcAddress_v2), and the per-thread
 * flag selects the _ptsz / _ptds export where one exists. Lookups go through
 * this library's own symbol table.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include "fake.h"

struct versioned_name {
  const char *name;
  int since; /* cudaVersion from which the suffixed ABI is returned */
  const char *suffix;
};

static const struct versioned_name versioned[] = {
    {"cuGetProcAddress", 12000, "_v2"},
    {"cuStreamDestroy", 4000, "_v2"},
    {"cuEventDestroy", 4000, "_v2"},
    {"cuMemFree", 3020, "_v2"},
    {"cuMemAlloc", 3020, "_v2"},
    {"cuModuleGetGlobal", 3020, "_v2"},
    {"cuCtxDestroy", 4000, "_v2"},
    {"cuStreamBeginCapture", 10010, "_v2"},
    {"cuDevicePrimaryCtxRelease", 11000, "_v2"},
    {"cuDevicePrimaryCtxReset", 11000, "_v2"},
    {"cuStreamWaitValue32", 12000, "_v2"},
    {"cuStreamWaitValue64", 12000, "_v2"},
    {"cuStreamWriteValue32", 12000, "_v2"},
    {"cuStreamWriteValue64", 12000, "_v2"},
    {"cuStreamBatchMemOp", 12000, "_v2"},
    {"cuCtxCreate", 3020, "_v2"},
    {"cuMemcpyHtoD", 3020, "_v2"},
    {"cuMemcpy2D", 3020, "_v2"},
    {"cuMemcpyDtoH", 3020, "_v2"},
    {"cuMemsetD8", 3020, "_v2"},
    {"cuMemsetD32", 3020, "_v2"},
    {"cuMemsetD16", 3020, "_v2"},
    {"cuMemsetD2D8", 3020, "_v2"},
    {"cuMemsetD2D16", 3020, "_v2"},
    {"cuMemsetD2D32", 3020, "_v2"},
    {"cuMemcpyDtoD", 3020, "_v2"},
    {"cuMemcpyHtoDAsync", 3020, "_v2"},
    {"cuMemcpyDtoHAsync", 3020, "_v2"},
    {"cuMemcpyDtoDAsync", 3020, "_v2"},
    {"cuMemcpy2D", 3020, "_v2"},
    {"cuMemcpy2DUnaligned", 3020, "_v2"},
    {"cuMemcpy2DAsync", 3020, "_v2"},
    {"cuMemcpy3D", 3020, "_v2"},
    {"cuMemcpy3DAsync", 3020, "_v2"},
    {"cuMemAdvise", 12020, "_v2"},
    {"cuMemcpyBatchAsync", 13000, "_v2"},
    {"cuMemcpy3DBatchAsync", 13000, "_v2"},
};

static void *self_handle(void) {
  static void *handle;
  if (!handle) {
    Dl_info info;
    if (dladdr((void *)self_handle, &info))
      handle = dlopen(info.dli_fname, RTLD_LAZY | RTLD_NOLOAD);
  }
  return handle;
}

static void *lookup(const char *name) {
  void *h = self_handle();
  return h ? dlsym(h, name) : NULL;
}

/* The function for symbol, or NULL. */
static void *resolve(const char *symbol, int version, cuuint64_t flags) {
  char name[160];
  snprintf(name, sizeof name, "%s", symbol);
  for (size_t i = 0; i < sizeof versioned / sizeof versioned[0]; i++)
    /* A driver older than the suffixed ABI does not know it either. */
    if (strcmp(symbol, versioned[i].name) == 0 && version >= versioned[i].since &&
        versioned[i].since <= FAKECUDA_DRIVER_VERSION)
      snprintf(name, sizeof name, "%s%s", symbol, versioned[i].suffix);
  void *fn = NULL;
  if (flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) {
    char variant[192];
    snprintf(variant, sizeof variant, "%s_ptsz", name);
    fn = lookup(variant);
    if (!fn) {
      snprintf(variant, sizeof variant, "%s_ptds", name);
      fn = lookup(variant);
    }
  }
  return fn ? fn : lookup(name);
}

/* Measured on the H100: an unknown name is CUDA_SUCCESS with *pfn = NULL and
 * the status SYMBOL_NOT_FOUND here... */
FAKE_EXPORT CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int cudaVersion,
                                         cuuint64_t flags,
                                         CUdriverProcAddressQueryResult *symbolStatus) {
  if (!symbol || !pfn) return CUDA_ERROR_INVALID_VALUE;
  *pfn = resolve(symbol, cudaVersion, flags);
  if (symbolStatus)
    *symbolStatus = *pfn ? CU_GET_PROC_ADDRESS_SUCCESS : CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
  return CUDA_SUCCESS;
}

/* ...and CUDA_ERROR_NOT_FOUND with *pfn untouched through the 4-argument form. */
FAKE_EXPORT CUresult cuGetProcAddress(const char *symbol, void **pfn, int cudaVersion,
                                      cuuint64_t flags) {
  if (!symbol || !pfn) return CUDA_ERROR_INVALID_VALUE;
  void *fn = resolve(symbol, cudaVersion, flags);
  if (!fn) return CUDA_ERROR_NOT_FOUND;
  *pfn = fn;
  return CUDA_SUCCESS;
}
