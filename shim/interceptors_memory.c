/* interceptors_memory.c - wrappers of managed allocation, of every free of
 * memory the model may know (made through the shim, or learned from the
 * driver), and the lookups of __managed__ variables (kernels use those
 * without being passed them, so the model must know them). */
#include "shim.h"

AC_EXPORT CUresult cuMemAllocManaged(CUdeviceptr *dptr, size_t bytesize, unsigned int flags) {
  AC_START_OR_FAIL(cuMemAllocManaged);
  CUresult r = ac_real.cuMemAllocManaged(dptr, bytesize, flags);
  if (r == CUDA_SUCCESS && dptr)
    ac_check_managed_allocated("cuMemAllocManaged", *dptr, bytesize, flags);
  return r;
}

/* A free of the allocation at Base: retired before the call (the page guard
 * lets go of it), forgotten once it succeeded. Besides cuMemFree, the frees of
 * memory the model may have learned from the driver (check_memory.c keeps what
 * it asked): pinned, registered, stream-ordered and imported memory. */
#define FREE(Name, Params, Args, Base)                                                             \
  AC_EXPORT CUresult Name Params {                                                                 \
    AC_START_OR_FAIL(Name);                                                                        \
    uint64_t serial = ac_check_before_free((CUdeviceptr)(Base));                                   \
    CUresult r = ac_real.Name Args;                                                                \
    ac_check_freed((CUdeviceptr)(Base), serial, r);                                                \
    return r;                                                                                      \
  }
FREE(cuMemFree_v2, (CUdeviceptr dptr), (dptr), dptr)
FREE(cuMemFreeHost, (void *p), (p), (uintptr_t)p)
FREE(cuMemHostUnregister, (void *p), (p), (uintptr_t)p)
FREE(cuMemFreeAsync, (CUdeviceptr dptr, CUstream hStream), (dptr, hStream), dptr)
FREE(cuMemFreeAsync_ptsz, (CUdeviceptr dptr, CUstream hStream), (dptr, hStream), dptr)
FREE(cuIpcCloseMemHandle, (CUdeviceptr dptr), (dptr), dptr)

/* A range of virtual memory loses its mapping, or its reservation: whatever
 * the model learned inside it ends. */
#define RANGE_END(Name)                                                                            \
  AC_EXPORT CUresult Name(CUdeviceptr ptr, size_t size) {                                          \
    AC_START_OR_FAIL(Name);                                                                        \
    uint64_t serial = ac_check_before_range_end(ptr, size);                                        \
    CUresult r = ac_real.Name(ptr, size);                                                          \
    ac_check_range_ended(ptr, size, serial, r);                                                    \
    return r;                                                                                      \
  }
RANGE_END(cuMemUnmap)
RANGE_END(cuMemAddressFree)

AC_EXPORT CUresult cuLibraryGetManaged(CUdeviceptr *dptr, size_t *bytes, CUlibrary library,
                                       const char *name) {
  AC_START_OR_FAIL(cuLibraryGetManaged);
  size_t size = 0;
  CUresult r = ac_real.cuLibraryGetManaged(dptr, bytes ? bytes : &size, library, name);
  if (r == CUDA_SUCCESS && dptr)
    ac_check_managed_variable("cuLibraryGetManaged", *dptr, bytes ? *bytes : size,
                              (uintptr_t)library, name);
  return r;
}

/* cuModuleGetGlobal answers for every module-scope variable; only the
 * __managed__ ones belong in the model. */
AC_EXPORT CUresult cuModuleGetGlobal_v2(CUdeviceptr *dptr, size_t *bytes, CUmodule hmod,
                                        const char *name) {
  AC_START_OR_FAIL(cuModuleGetGlobal_v2);
  size_t size = 0;
  CUresult r = ac_real.cuModuleGetGlobal_v2(dptr, bytes ? bytes : &size, hmod, name);
  if (r != CUDA_SUCCESS || !dptr) return r;
  unsigned managed = 0;
  if (ac_real.cuPointerGetAttribute &&
      ac_real.cuPointerGetAttribute(&managed, CU_POINTER_ATTRIBUTE_IS_MANAGED, *dptr) ==
          CUDA_SUCCESS &&
      managed)
    ac_check_managed_variable("cuModuleGetGlobal_v2", *dptr, bytes ? *bytes : size, (uintptr_t)hmod,
                              name);
  return r;
}
