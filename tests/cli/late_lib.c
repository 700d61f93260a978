/* late_lib.c - a library whose destructor makes a finding (AC101) once armed
 * (stream_prog late). A library the program links is initialised before the
 * preloaded shim, so its destructor runs after the shim's. */
#include <cuda.h>

static CUdeviceptr at_exit;

void late_lib_attach_at_exit(CUdeviceptr memory) {
  at_exit = memory;
}

__attribute__((destructor)) static void attach_at_exit(void) {
  if (at_exit) cuStreamAttachMemAsync(CU_STREAM_LEGACY, at_exit, 0, CU_MEM_ATTACH_SINGLE);
}
