/* interceptors_memory.c - wrappers of managed allocation, free, and the
 * lookups of __managed__ variables (kernels use those without being passed
 * them, so the model must know them). */
#include "shim.h"

AC_EXPORT CUresult cuMemAllocManaged(CUdeviceptr *dptr, size_t bytesize, unsigned int flags) {
  AC_START_OR_FAIL(cuMemAllocManaged);
  CUresult r = ac_real.cuMemAllocManaged(dptr, bytesize, flags);
  if (r == CUDA_SUCCESS && dptr)
    ac_check_managed_allocated("cuMemAllocManaged", *dptr, bytesize, flags);
  return r;
}

AC_EXPORT CUresult cuMemFree_v2(CUdeviceptr dptr) {
  AC_START_OR_FAIL(cuMemFree_v2);
  uint64_t serial = ac_check_before_free(dptr);
  CUresult r = ac_real.cuMemFree_v2(dptr);
  ac_check_freed(dptr, serial, r);
  return r;
}

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
