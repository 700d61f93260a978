/* interceptors_memory.c - wrappers of managed allocation, of every free of
 * memory the model may know (made through the shim, or learned from the
 * driver), and the lookups of __managed__ variables (kernels use those
 * without being passed them, so the model must know them). */
#include "shim.h"

AC_EXPORT CUresult cuMemAllocManaged(CUdeviceptr *dptr, size_t bytesize, unsigned int flags) {
  AC_START_OR_FAIL(cuMemAllocManaged);
  ac_guard_fresh_begin(); /* the driver's mappings meanwhile are the allocation's */
  CUresult r = ac_real.cuMemAllocManaged(dptr, bytesize, flags);
  if (r == CUDA_SUCCESS && dptr)
    ac_check_managed_allocated(AC_RETURN_SLOT(), "cuMemAllocManaged", *dptr, bytesize, flags);
  ac_guard_fresh_end();
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
/* A stream-ordered free is also an operation of its stream. */
#define FREE_ASYNC(Name, PerThread)                                                                \
  AC_EXPORT CUresult Name(CUdeviceptr dptr, CUstream hStream) {                                    \
    AC_START_OR_FAIL(Name);                                                                        \
    uint64_t serial = ac_check_before_free(dptr);                                                  \
    CUresult r = ac_real.Name(dptr, hStream);                                                      \
    ac_check_freed(dptr, serial, r);                                                               \
    if (r == CUDA_SUCCESS) ac_on_work(#Name, hStream, PerThread);                                  \
    return r;                                                                                      \
  }
FREE_ASYNC(cuMemFreeAsync, false)
FREE_ASYNC(cuMemFreeAsync_ptsz, true)
FREE(cuIpcCloseMemHandle, (CUdeviceptr dptr), (dptr), dptr)

/* Placement advice: the driver's business, told in the timeline of findings
 * about the memory (check_memory.c). */
#define ADVISE(Name, Where)                                                                        \
  AC_EXPORT CUresult Name(CUdeviceptr devPtr, size_t count, CUmem_advise advice, Where) {          \
    AC_START_OR_FAIL(Name);                                                                        \
    CUresult r = ac_real.Name(devPtr, count, advice, where);                                       \
    if (r == CUDA_SUCCESS) ac_check_advised(#Name, devPtr, advice);                                \
    return r;                                                                                      \
  }
ADVISE(cuMemAdvise_v2, CUmemLocation where)
ADVISE(cuMemAdvise, CUdevice where)

/* Range attributes: the driver's answers, but for the last prefetch location
 * of memory the guard prefetched itself (guard/ahead.c), which is the
 * program's own (check_memory.c). */
AC_EXPORT CUresult cuMemRangeGetAttribute(void *data, size_t dataSize,
                                          CUmem_range_attribute attribute, CUdeviceptr devPtr,
                                          size_t count) {
  AC_START_OR_FAIL(cuMemRangeGetAttribute);
  CUresult r = ac_real.cuMemRangeGetAttribute(data, dataSize, attribute, devPtr, count);
  if (r == CUDA_SUCCESS) ac_check_prefetch_answer(data, dataSize, attribute, devPtr, count);
  return r;
}
AC_EXPORT CUresult cuMemRangeGetAttributes(void **data, size_t *dataSizes,
                                           CUmem_range_attribute *attributes, size_t numAttributes,
                                           CUdeviceptr devPtr, size_t count) {
  AC_START_OR_FAIL(cuMemRangeGetAttributes);
  CUresult r =
      ac_real.cuMemRangeGetAttributes(data, dataSizes, attributes, numAttributes, devPtr, count);
  for (size_t i = 0; r == CUDA_SUCCESS && data && dataSizes && attributes && i < numAttributes; i++)
    ac_check_prefetch_answer(data[i], dataSizes[i], attributes[i], devPtr, count);
  return r;
}

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

/* cuModuleGetGlobal and cuLibraryGetGlobal answer for every module-scope
 * variable; only the __managed__ ones belong in the model (the driver says
 * which: IS_MANAGED is 1 for them, 0 for the others). */
static void record_if_managed(const char *api, CUdeviceptr p, size_t size, uintptr_t owner,
                              const char *name) {
  unsigned managed = 0;
  if (ac_real.cuPointerGetAttribute &&
      ac_real.cuPointerGetAttribute(&managed, CU_POINTER_ATTRIBUTE_IS_MANAGED, p) == CUDA_SUCCESS &&
      managed)
    ac_check_managed_variable(api, p, size, owner, name);
}

/* A lookup of a module's or library's variable: the answer, recorded by
 * record (the managed ones are __managed__ variables, with their owner). */
#define VARIABLE_LOOKUP(Name, Owner, record)                                                       \
  AC_EXPORT CUresult Name(CUdeviceptr *dptr, size_t *bytes, Owner owner, const char *name) {       \
    AC_START_OR_FAIL(Name);                                                                        \
    size_t size = 0;                                                                               \
    CUresult r = ac_real.Name(dptr, bytes ? bytes : &size, owner, name);                           \
    if (r == CUDA_SUCCESS && dptr)                                                                 \
      record(#Name, *dptr, bytes ? *bytes : size, (uintptr_t)owner, name);                         \
    return r;                                                                                      \
  }
VARIABLE_LOOKUP(cuLibraryGetManaged, CUlibrary, ac_check_managed_variable)
VARIABLE_LOOKUP(cuModuleGetGlobal_v2, CUmodule, record_if_managed)
VARIABLE_LOOKUP(cuLibraryGetGlobal, CUlibrary, record_if_managed)
