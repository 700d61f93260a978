/* tp_wrap_lib.c - a program's own wrapper of a driver entry point, as tracing
 * tools and profilers install: it defines cuStreamAttachMemAsync, says so, and
 * forwards to the next definition found with dlsym(RTLD_NEXT). Under
 * attachcheck the wrapper must still run, and the call still be checked. */
#define _GNU_SOURCE
#include <cuda.h>
#include <dlfcn.h>
#include <stdio.h>

CUresult cuStreamAttachMemAsync(CUstream h, CUdeviceptr p, size_t n, unsigned flags) {
  CUresult (*next)(CUstream, CUdeviceptr, size_t, unsigned);
  *(void **)&next = dlsym(RTLD_NEXT, "cuStreamAttachMemAsync");
  printf("wrapper called, next %s\n", next && next != cuStreamAttachMemAsync ? "found" : "missing");
  return next ? next(h, p, n, flags) : CUDA_ERROR_NOT_FOUND;
}
