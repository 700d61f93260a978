/* tp_wrap.c - calls the driver through its own link, with a wrapper library
 * (tp_wrap_lib.c) in front of cuStreamAttachMemAsync; also the program built
 * with AddressSanitizer (tp_asan), whose runtime insists on loading first.
 *
 *   tp_wrap legacy_single   single-attach to CU_STREAM_LEGACY: AC101
 *   tp_wrap global_attach   a correct attach: no finding
 */
#include "tp.h"

static void attach_with(CUstream stream, unsigned flags) {
  tp_start();
  CUdeviceptr m = tp_managed(1 << 20, CU_MEM_ATTACH_GLOBAL);
  printf("cuStreamAttachMemAsync %d\n", cuStreamAttachMemAsync(stream, m, 0, flags));
  EXPECT_RC(cu.cuCtxSynchronize(), CUDA_SUCCESS);
  tp_fill((void *)m, 4096, 2);
  printf("sum %08x\n", tp_sum((void *)m, 4096));
}

static void legacy_single(void) {
  attach_with(CU_STREAM_LEGACY, CU_MEM_ATTACH_SINGLE);
}
static void global_attach(void) {
  attach_with(CU_STREAM_LEGACY, CU_MEM_ATTACH_GLOBAL);
}

static const struct scenario_case cases[] = {
    {"legacy_single", legacy_single},
    {"global_attach", global_attach},
};

TP_MAIN(cases)
