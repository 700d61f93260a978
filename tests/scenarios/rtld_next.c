/* rtld_next.c - RTLD_NEXT lookups keep the caller's identity under the shim,
 * and driver lookups still go through the shim. Exit status 0 when both hold. */
#include <stdio.h>

#include "scenario.h"

int rtld_next_finds_libc(void);

int main(void) {
  if (!rtld_next_finds_libc()) {
    fprintf(stderr, "rtld_next: dlsym(RTLD_NEXT) from a library did not find libc's getpid\n");
    return 1;
  }
  start_cuda("dlsym");
  CUdeviceptr m;
  EXPECT_RC(cu.cuMemAllocManaged(&m, 4096, CU_MEM_ATTACH_GLOBAL), CUDA_SUCCESS);
  EXPECT_RC(cu.cuStreamAttachMemAsync(CU_STREAM_LEGACY, m, 0, CU_MEM_ATTACH_SINGLE), CUDA_SUCCESS);
  return finish();
}
