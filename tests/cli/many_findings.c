/* many_findings.c - sixty findings in one process, for the HTML report's test
 * (test_html.py): the same three mistakes - memory single-attached to the
 * legacy stream (AC101), a set on another stream than the memory's (AC301),
 * and the CPU touching memory while its stream works (AC201) - each made from
 * twenty call depths, so each is a finding of its own (its stack differs),
 * and a timeline too wide for one screen. */
#include <cuda.h>
#include <stdio.h>

#define DEPTHS 20
#define BYTES (1 << 16)

static CUstream a, b;
static CUdeviceptr m, other;

static void legacy_attach(void) {
  cuStreamAttachMemAsync(CU_STREAM_LEGACY, other, 0, CU_MEM_ATTACH_SINGLE); /* AC101 */
}

static void foreign_set(void) {
  cuMemsetD8Async(m, 0, BYTES, b); /* m is a's: AC301 */
}

static void touch_busy(void) {
  cuMemsetD8Async(m, 1, BYTES, a);
  ((volatile char *)m)[0] = 2; /* a is busy: AC201 */
  cuStreamSynchronize(a);
}

/* what, called from d frames deeper: a stack of its own. */
static void at_depth(int d, void (*what)(void)) {
  if (d > 0)
    at_depth(d - 1, what);
  else
    what();
}

int main(void) {
  CUdevice dev;
  CUcontext ctx;
  if (cuInit(0) || cuDeviceGet(&dev, 0) || cuDevicePrimaryCtxRetain(&ctx, dev) ||
      cuCtxSetCurrent(ctx) || cuMemAllocManaged(&m, BYTES, CU_MEM_ATTACH_GLOBAL) ||
      cuMemAllocManaged(&other, BYTES, CU_MEM_ATTACH_GLOBAL) ||
      cuStreamCreate(&a, CU_STREAM_NON_BLOCKING) || cuStreamCreate(&b, CU_STREAM_NON_BLOCKING)) {
    fprintf(stderr, "many_findings: no CUDA device\n");
    return 1;
  }
  cuStreamAttachMemAsync(a, m, 0, CU_MEM_ATTACH_SINGLE);
  cuStreamSynchronize(a);
  for (int d = 0; d < DEPTHS; d++) {
    at_depth(d, legacy_attach);
    at_depth(d, foreign_set);
    at_depth(d, touch_busy);
  }
  cuCtxSynchronize();
  return 0;
}
