/* doors.c - how a program's lookups reach the wrappers.
 *
 * Four doors lead to the driver: direct linking (the exported wrappers win by
 * LD_PRELOAD), dlopen + dlsym, cuGetProcAddress(_v2), and the export table
 * (left alone). For the two lookup doors the shim asks the real driver first,
 * with the caller's exact name, version and flags, and then swaps the answer
 * for the wrapper of the *same real function*, found by pointer identity. The
 * ABI is therefore right by construction: cuStreamDestroy asked at version
 * 4000 comes back as the real cuStreamDestroy_v2 and so as its wrapper, and the
 * per-thread flag gives the _ptsz function and so its wrapper.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "shim.h"

struct door {
  void *real;
  void *wrapper;
};

static struct door doors[AC_ENTRY_COUNT];
static size_t door_count;
static const void *driver_base; /* where libcuda is mapped: its own lookups stay real */

static int by_real(const void *a, const void *b) {
  const struct door *x = a, *y = b;
  return (x->real > y->real) - (x->real < y->real);
}

void ac_doors_build_map(void) {
  door_count = 0;
#define ADD(Name)                                                                                  \
  if (ac_driver_entry[AC_ID_##Name])                                                               \
    doors[door_count++] = (struct door){ac_driver_entry[AC_ID_##Name], (void *)&Name};
#define AC_WRAPPED(Name, Params, Effect, Why) ADD(Name)
#define AC_LEFT_ALONE(Name, Reason, Why)
#include "driver_api.inc"
#undef AC_WRAPPED
#undef AC_LEFT_ALONE
#undef ADD
  qsort(doors, door_count, sizeof doors[0], by_real);
  Dl_info info;
  if (door_count && dladdr(doors[0].real, &info)) driver_base = info.dli_fbase;
}

void *ac_wrapper_for(void *real) {
  size_t lo = 0, hi = door_count;
  while (lo < hi) {
    size_t mid = (lo + hi) / 2;
    if (doors[mid].real == real) return doors[mid].wrapper;
    if (doors[mid].real < real)
      lo = mid + 1;
    else
      hi = mid;
  }
  return real;
}

/* ---- cuGetProcAddress ---- */

/* The runtime first looks up "cuGetProcAddress" through cuGetProcAddress and
 * resolves everything else through the pointer it gets (docs/driver-facts.md). If
 * the driver's answer is not one of its exported resolvers, still hand back
 * a wrapper, of the arity the caller expects. */
static void *resolver_wrapper(int cuda_version) {
  return cuda_version >= 12000 ? (void *)&cuGetProcAddress_v2 : (void *)&cuGetProcAddress;
}

static void substitute(const char *symbol, void **pfn, int version, cuuint64_t flags) {
  void *real = *pfn;
  void *wrapper = ac_wrapper_for(real);
  if (wrapper == real && strcmp(symbol, "cuGetProcAddress") == 0)
    wrapper = resolver_wrapper(version);
  *pfn = wrapper;
  if (ac_opts.verbose >= 2)
    ac_log("cuGetProcAddress(%s, %d, %llu): %s", symbol, version, (unsigned long long)flags,
           wrapper == real ? "passed through" : "wrapped");
}

AC_EXPORT CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int cudaVersion,
                                       cuuint64_t flags,
                                       CUdriverProcAddressQueryResult *symbolStatus) {
  if (!ac_start()) return CUDA_ERROR_NOT_INITIALIZED;
  if (!ac_real.cuGetProcAddress_v2) return CUDA_ERROR_NOT_FOUND; /* a driver before 12.0 */
  CUresult r = ac_real.cuGetProcAddress_v2(symbol, pfn, cudaVersion, flags, symbolStatus);
  if (r == CUDA_SUCCESS && symbol && pfn && *pfn) substitute(symbol, pfn, cudaVersion, flags);
  return r;
}

AC_EXPORT CUresult cuGetProcAddress(const char *symbol, void **pfn, int cudaVersion,
                                    cuuint64_t flags) {
  if (!ac_start()) return CUDA_ERROR_NOT_INITIALIZED;
  if (!ac_real.cuGetProcAddress) return CUDA_ERROR_NOT_FOUND;
  CUresult r = ac_real.cuGetProcAddress(symbol, pfn, cudaVersion, flags);
  if (r == CUDA_SUCCESS && symbol && pfn && *pfn) substitute(symbol, pfn, cudaVersion, flags);
  return r;
}

/* ---- dlsym ---- */

typedef void *(*dlsym_fn)(void *, const char *);
static dlsym_fn real_dlsym;

static dlsym_fn find_real_dlsym(void) {
  dlsym_fn fn = __atomic_load_n(&real_dlsym, __ATOMIC_ACQUIRE);
  if (fn) return fn;
  static const char *const versions[] = {"GLIBC_2.34", "GLIBC_2.2.5", "GLIBC_2.17"};
  for (size_t i = 0; !fn && i < sizeof versions / sizeof versions[0]; i++)
    fn = (dlsym_fn)dlvsym(RTLD_NEXT, "dlsym", versions[i]);
  __atomic_store_n(&real_dlsym, fn, __ATOMIC_RELEASE);
  return fn;
}

void *ac_real_dlsym(void *handle, const char *name) {
  dlsym_fn fn = find_real_dlsym();
  return fn ? fn(handle, name) : NULL;
}

static bool is_driver_name(const char *name) {
  return name && name[0] == 'c' && name[1] == 'u' && name[2] >= 'A' && name[2] <= 'Z';
}

static bool called_from_driver(const void *caller) {
  Dl_info info;
  return driver_base && dladdr(caller, &info) && info.dli_fbase == driver_base;
}

/* A driver name looked up through a handle: the real answer, or its wrapper. */
__attribute__((used)) static void *dlsym_driver_name(void *handle, const char *name) {
  void *real = ac_real_dlsym(handle, name);
  if (!real || !ac_start()) return real;
  void *wrapper = ac_wrapper_for(real);
  if (ac_opts.verbose >= 2)
    ac_log("dlsym(%s): %s", name, wrapper == real ? "passed through" : "wrapped");
  return wrapper;
}

/* Called by the exported dlsym (dlsym_x86_64.S) with the caller's return
 * address; returns the function the stub jumps to with the caller's own
 * arguments and return address. Everything but a driver name goes to the
 * real dlsym as if called directly, so RTLD_NEXT keeps meaning "after the
 * caller" (OpenMP runtimes under PyTorch rely on it). */
__attribute__((used, visibility("hidden"))) dlsym_fn ac_dlsym_route(void *handle, const char *name,
                                                                    const void *caller) {
  dlsym_fn real = find_real_dlsym();
  if (!real || handle == RTLD_NEXT || !is_driver_name(name) || called_from_driver(caller))
    return real;
  return dlsym_driver_name;
}
