/* managed_placement.c - where the driver places small managed allocations:
 * whether allocations of different sizes share pages, and where a request
 * of a whole number of pages starts. The page guard cannot protect a page
 * that holds memory of two classes (docs/driver-facts.md, "Placement of
 * managed allocations"); this measures how often that happens.
 *
 *   cc -I/usr/local/cuda/include managed_placement.c -o managed_placement \
 *      -L/usr/local/cuda/lib64/stubs -lcuda && ./managed_placement
 */
#include <cuda.h>
#include <stdio.h>
#include <unistd.h>

#define CHECK(call)                                                                                \
  do {                                                                                             \
    CUresult r_ = (call);                                                                          \
    if (r_ != CUDA_SUCCESS) return fprintf(stderr, "%s: %d\n", #call, (int)r_), 1;                 \
  } while (0)

static const size_t sizes[] = {64, 256, 100, 4096, 4096 + 64, 8192, 64, 2 * 4096, 1u << 20, 64};

int main(void) {
  CUdevice dev;
  CUcontext ctx;
  CHECK(cuInit(0));
  CHECK(cuDeviceGet(&dev, 0));
  CHECK(cuDevicePrimaryCtxRetain(&ctx, dev));
  CHECK(cuCtxSetCurrent(ctx));
  long page = sysconf(_SC_PAGESIZE);
  printf("page size %ld\n", page);
  for (int round = 0; round < 2; round++) {
    unsigned flags = round ? CU_MEM_ATTACH_HOST : CU_MEM_ATTACH_GLOBAL;
    printf("flags %s\n", round ? "HOST" : "GLOBAL");
    CUdeviceptr prev_end = 0;
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
      CUdeviceptr p, base;
      size_t range;
      CHECK(cuMemAllocManaged(&p, sizes[i], flags));
      CHECK(cuMemGetAddressRange(&base, &range, p));
      printf("  %8zu bytes at 0x%llx: page offset %5llu, 2 MiB offset %8llu, range %zu, "
             "gap after previous %lld, shares a page with it: %s\n",
             sizes[i], (unsigned long long)p, (unsigned long long)(p % (CUdeviceptr)page),
             (unsigned long long)(p % (2u << 20)), range,
             prev_end ? (long long)(p - prev_end) : 0LL,
             prev_end && (p / (CUdeviceptr)page) == ((prev_end - 1) / (CUdeviceptr)page) ? "yes"
                                                                                         : "no");
      prev_end = p + sizes[i];
    }
  }
  /* Many small ones in a row: how densely they are packed. */
  CUdeviceptr first = 0, last = 0;
  for (int i = 0; i < 1000; i++) {
    CUdeviceptr p;
    CHECK(cuMemAllocManaged(&p, 100, CU_MEM_ATTACH_GLOBAL));
    if (!first) first = p;
    last = p;
  }
  printf("1000 allocations of 100 bytes span %llu bytes (%.1f per allocation)\n",
         (unsigned long long)(last - first), (double)(last - first) / 999.0);
  return 0;
}
