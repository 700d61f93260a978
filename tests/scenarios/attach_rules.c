/* attach_rules.c - every row of docs/driver-facts.md's cuStreamAttachMemAsync
 * table, wrong and right, one case per run:
 *
 *   attach_rules DOOR CASE
 *
 * Each case checks the driver's answer; expectations.txt lists the findings.
 */
#include <signal.h>
#include <stdint.h>

#include "scenario.h"

#define MIB (1u << 20)
#define SIZE (4 * MIB)

static CUdeviceptr m;
static CUstream s;

static void null_single(void) {
  EXPECT_RC(cu.cuStreamAttachMemAsync(NULL, m, 0, CU_MEM_ATTACH_SINGLE), CUDA_ERROR_INVALID_VALUE);
}
static void legacy_single(void) {
  EXPECT_RC(cu.cuStreamAttachMemAsync(CU_STREAM_LEGACY, m, 0, CU_MEM_ATTACH_SINGLE), CUDA_SUCCESS);
}
static void per_thread_single(void) {
  EXPECT_RC(cu.cuStreamAttachMemAsync(CU_STREAM_PER_THREAD, m, 0, CU_MEM_ATTACH_SINGLE),
            CUDA_SUCCESS);
}
static void partial_length(void) {
  EXPECT_RC(cu.cuStreamAttachMemAsync(s, m, 4096, CU_MEM_ATTACH_SINGLE), CUDA_ERROR_INVALID_VALUE);
}
static void longer_length(void) {
  EXPECT_RC(cu.cuStreamAttachMemAsync(s, m, SIZE + 4096, CU_MEM_ATTACH_SINGLE),
            CUDA_ERROR_INVALID_VALUE);
}
static void offset_start(void) {
  EXPECT_RC(cu.cuStreamAttachMemAsync(s, m + 4096, 0, CU_MEM_ATTACH_SINGLE),
            CUDA_ERROR_INVALID_VALUE);
}
static void offset_partial(void) {
  EXPECT_RC(cu.cuStreamAttachMemAsync(s, m + 4096, SIZE - 4096, CU_MEM_ATTACH_SINGLE),
            CUDA_ERROR_INVALID_VALUE);
}
static void exact_size(void) {
  EXPECT_RC(cu.cuStreamAttachMemAsync(s, m, SIZE, CU_MEM_ATTACH_SINGLE), CUDA_SUCCESS);
}
static void host_zero(void) {
  EXPECT_RC(cu.cuStreamAttachMemAsync(s, m, 0, CU_MEM_ATTACH_HOST), CUDA_SUCCESS);
}
static void null_global_host(void) {
  EXPECT_RC(cu.cuStreamAttachMemAsync(NULL, m, 0, CU_MEM_ATTACH_GLOBAL), CUDA_SUCCESS);
  EXPECT_RC(cu.cuStreamAttachMemAsync(NULL, m, 0, CU_MEM_ATTACH_HOST), CUDA_SUCCESS);
}
/* With the guard on the call is refused; with --guard=off the driver crashes. */
static void flags_zero(void) {
  EXPECT_RC(cu.cuStreamAttachMemAsync(s, m, 0, 0), CUDA_ERROR_INVALID_VALUE);
}
static void flags_invalid(void) {
  static const unsigned bad[] = {3, 5, 6, 7, 8, 16};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
    EXPECT_RC(cu.cuStreamAttachMemAsync(s, m, 0, bad[i]), CUDA_ERROR_INVALID_VALUE);
}
static void never_created(void) {
  EXPECT_RC(cu.cuStreamAttachMemAsync((CUstream)0x1234, m, 0, CU_MEM_ATTACH_SINGLE),
            CUDA_ERROR_INVALID_HANDLE);
}
static void destroyed(void) {
  CUstream gone;
  EXPECT_RC(cu.cuStreamCreate(&gone, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
  EXPECT_RC(cu.cuStreamDestroy(gone), CUDA_SUCCESS);
  EXPECT_RC(cu.cuStreamAttachMemAsync(gone, m, 0, CU_MEM_ATTACH_SINGLE), CUDA_ERROR_INVALID_HANDLE);
}
static void device_memory(void) {
  CUdeviceptr d;
  EXPECT_RC(cu.cuMemAlloc(&d, SIZE), CUDA_SUCCESS);
  EXPECT_RC(cu.cuStreamAttachMemAsync(s, d, 0, CU_MEM_ATTACH_SINGLE), CUDA_ERROR_INVALID_VALUE);
  EXPECT_RC(cu.cuMemFree(d), CUDA_SUCCESS);
}
static void pinned_memory(void) {
  void *p;
  EXPECT_RC(cu.cuMemHostAlloc(&p, SIZE, 0), CUDA_SUCCESS);
  EXPECT_RC(cu.cuStreamAttachMemAsync(s, (CUdeviceptr)p, 0, CU_MEM_ATTACH_SINGLE),
            CUDA_ERROR_INVALID_VALUE);
  EXPECT_RC(cu.cuStreamAttachMemAsync(s, (CUdeviceptr)p, SIZE, CU_MEM_ATTACH_SINGLE),
            CUDA_ERROR_INVALID_VALUE);
  EXPECT_RC(cu.cuMemFreeHost(p), CUDA_SUCCESS);
}
static void pageable_memory(void) {
  char *p = aligned_alloc(4096, MIB);
  memset(p, 1, MIB);
  EXPECT_RC(cu.cuStreamAttachMemAsync(s, (CUdeviceptr)p, 0, CU_MEM_ATTACH_SINGLE),
            CUDA_ERROR_INVALID_VALUE);
  EXPECT_RC(cu.cuStreamAttachMemAsync(s, (CUdeviceptr)p, MIB, CU_MEM_ATTACH_SINGLE),
            CUDA_ERROR_INVALID_VALUE);
  EXPECT_RC(cu.cuStreamAttachMemAsync(s, (CUdeviceptr)p + 4096, 8192, CU_MEM_ATTACH_SINGLE),
            CUDA_ERROR_INVALID_VALUE);
  free(p);
}
static void null_pointer(void) {
  EXPECT_RC(cu.cuStreamAttachMemAsync(s, 0, 0, CU_MEM_ATTACH_SINGLE), CUDA_ERROR_INVALID_VALUE);
}
static void during_capture(void) {
  CUgraph g = NULL;
  EXPECT_RC(cu.cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_SUCCESS);
  EXPECT_RC(cu.cuStreamAttachMemAsync(s, m, 0, CU_MEM_ATTACH_SINGLE),
            CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
  EXPECT_RC(cu.cuStreamEndCapture(s, &g), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
  /* After the capture the same attach is fine. */
  EXPECT_RC(cu.cuStreamAttachMemAsync(s, m, 0, CU_MEM_ATTACH_SINGLE), CUDA_SUCCESS);
}
static void small_allocations(void) {
  CUdeviceptr a, b;
  EXPECT_RC(cu.cuMemAllocManaged(&a, 100, CU_MEM_ATTACH_GLOBAL), CUDA_SUCCESS);
  EXPECT_RC(cu.cuMemAllocManaged(&b, 100, CU_MEM_ATTACH_GLOBAL), CUDA_SUCCESS);
  EXPECT_RC(cu.cuStreamAttachMemAsync(s, a, 100, CU_MEM_ATTACH_SINGLE), CUDA_SUCCESS);
  EXPECT_RC(cu.cuStreamAttachMemAsync(s, b, 0, CU_MEM_ATTACH_SINGLE), CUDA_SUCCESS);
  EXPECT_RC(cu.cuStreamAttachMemAsync(s, a, 4096, CU_MEM_ATTACH_SINGLE), CUDA_ERROR_INVALID_VALUE);
}
/* NULL through cuStreamAttachMemAsync_ptsz is the thread's own default stream. */
static void ptsz_null_single(void) {
  EXPECT_RC(cu.cuStreamAttachMemAsync(NULL, m, 0, CU_MEM_ATTACH_SINGLE), CUDA_SUCCESS);
}
/* The programming guide's pattern: nothing to report. */
static void right_usage(void) {
  CUstream other;
  CUdeviceptr h;
  EXPECT_RC(cu.cuStreamCreate(&other, CU_STREAM_DEFAULT), CUDA_SUCCESS);
  EXPECT_RC(cu.cuMemAllocManaged(&h, MIB, CU_MEM_ATTACH_HOST), CUDA_SUCCESS);
  EXPECT_RC(cu.cuStreamAttachMemAsync(other, h, 0, CU_MEM_ATTACH_SINGLE), CUDA_SUCCESS);
  EXPECT_RC(cu.cuStreamSynchronize(other), CUDA_SUCCESS);
  EXPECT_RC(cu.cuStreamAttachMemAsync(s, m, SIZE, CU_MEM_ATTACH_SINGLE), CUDA_SUCCESS);
  EXPECT_RC(cu.cuStreamSynchronize(s), CUDA_SUCCESS); /* before re-attaching elsewhere */
  EXPECT_RC(cu.cuStreamAttachMemAsync(NULL, m, 0, CU_MEM_ATTACH_GLOBAL), CUDA_SUCCESS);
  EXPECT_RC(cu.cuStreamAttachMemAsync(CU_STREAM_LEGACY, h, 0, CU_MEM_ATTACH_HOST), CUDA_SUCCESS);
  EXPECT_RC(cu.cuStreamSynchronize(s), CUDA_SUCCESS);
  EXPECT_RC(cu.cuStreamDestroy(other), CUDA_SUCCESS);
  /* A new stream may get the destroyed one's handle: it is a live stream. */
  EXPECT_RC(cu.cuStreamCreate(&other, CU_STREAM_DEFAULT), CUDA_SUCCESS);
  EXPECT_RC(cu.cuStreamAttachMemAsync(other, h, 0, CU_MEM_ATTACH_SINGLE), CUDA_SUCCESS);
  EXPECT_RC(cu.cuStreamSynchronize(other), CUDA_SUCCESS);
  /* Hand the memory back before the stream goes. */
  EXPECT_RC(cu.cuStreamAttachMemAsync(other, h, 0, CU_MEM_ATTACH_HOST), CUDA_SUCCESS);
  EXPECT_RC(cu.cuStreamSynchronize(other), CUDA_SUCCESS);
  EXPECT_RC(cu.cuStreamDestroy(other), CUDA_SUCCESS);
  EXPECT_RC(cu.cuMemFree(h), CUDA_SUCCESS);
}
/* A finding, then a crash: the report must still hold the finding. */
static void crash_after_finding(void) {
  legacy_single();
  fflush(stdout);
  raise(SIGSEGV);
}
/* A __managed__ variable of a module, attached from its middle. */
static void managed_variable(void) {
  static const char ptx[] = ".version 8.0\n.target sm_90\n.address_size 64\n"
                            ".visible .global .attribute(.managed) .align 4 .b8 table[4096];\n";
  CUmodule mod;
  CUdeviceptr var;
  size_t bytes;
  EXPECT_RC(cu.cuModuleLoadData(&mod, ptx), CUDA_SUCCESS);
  EXPECT_RC(cu.cuModuleGetGlobal(&var, &bytes, mod, "table"), CUDA_SUCCESS);
  EXPECT_RC(cu.cuStreamAttachMemAsync(s, var + 64, 0, CU_MEM_ATTACH_SINGLE),
            CUDA_ERROR_INVALID_VALUE);
}

static const struct scenario_case cases[] = {
    {"null_single", null_single},
    {"legacy_single", legacy_single},
    {"per_thread_single", per_thread_single},
    {"partial_length", partial_length},
    {"longer_length", longer_length},
    {"offset_start", offset_start},
    {"offset_partial", offset_partial},
    {"exact_size", exact_size},
    {"host_zero", host_zero},
    {"null_global_host", null_global_host},
    {"flags_zero", flags_zero},
    {"flags_invalid", flags_invalid},
    {"never_created", never_created},
    {"destroyed", destroyed},
    {"device_memory", device_memory},
    {"pinned_memory", pinned_memory},
    {"pageable_memory", pageable_memory},
    {"null_pointer", null_pointer},
    {"during_capture", during_capture},
    {"small_allocations", small_allocations},
    {"ptsz_null_single", ptsz_null_single},
    {"right_usage", right_usage},
    {"crash_after_finding", crash_after_finding},
    {"managed_variable", managed_variable},
};

int main(int argc, char **argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: %s DOOR CASE\n", argv[0]);
    return 2;
  }
  const struct scenario_case *c =
      find_case(cases, sizeof cases / sizeof cases[0], argv[0], argv[2]);
  if (!c) return 2;
  start_cuda(argv[1]);
  EXPECT_RC(cu.cuMemAllocManaged(&m, SIZE, CU_MEM_ATTACH_GLOBAL), CUDA_SUCCESS);
  EXPECT_RC(cu.cuStreamCreate(&s, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
  c->run();
  EXPECT_RC(cu.cuStreamSynchronize(s), CUDA_SUCCESS);
  return finish();
}
