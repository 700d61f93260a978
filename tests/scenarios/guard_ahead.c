/* guard_ahead.c - managed memory the page guard closed, moved to the GPU just
 * before the work that reaches it (shim/guard/ahead.c), and what the program
 * sees of it: the driver's LAST_PREFETCH_LOCATION of the memory must be what
 * the program's own prefetches made it, as without attachcheck.
 *
 *   guard_ahead CASE
 *
 * Exit status: 0 when the memory the case asks about was never prefetched
 * (as the program sees it), 5 when last to the CPU, 7 when to device 0, 1 on
 * any other driver answer. Every case is a correct program: the memory is only
 * reached by the GPU (kernels are empty; sets and prefetches are the driver's).
 * Whether the guard did prefetch is its own count (--verbose 1; tests/cli/
 * test_ahead.py). guard_ahead mincore_answers tells that test whether the
 * guard can see which pages the CPU holds here.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "scenario.h"

static const char ptx[] = ".version 8.0\n.target sm_90\n.address_size 64\n"
                          ".visible .entry touch(.param .u64 p)\n{\n  ret;\n}\n";

static CUfunction kernel;
static CUstream s, t;
static CUdeviceptr busy, asked;
static size_t asked_size;

static CUresult (*range_attribute)(void *, size_t, CUmem_range_attribute, CUdeviceptr, size_t);
static CUresult (*set8)(CUdeviceptr, unsigned char, size_t, CUstream);
static CUresult (*advise)(CUdeviceptr, size_t, CUmem_advise, CUmemLocation);
static CUresult (*prefetch)(CUdeviceptr, size_t, CUmemLocation, unsigned, CUstream);
static CUresult (*instantiate)(CUgraphExec *, CUgraph, unsigned long long);
static CUresult (*graph_launch)(CUgraphExec, CUstream);
static CUresult (*range_attributes)(void **, size_t *, CUmem_range_attribute *, size_t, CUdeviceptr,
                                    size_t);

static void launch(CUstream stream, CUdeviceptr p) {
  void *args[] = {&p};
  EXPECT_RC(cu.cuLaunchKernel(kernel, 1, 1, 1, 32, 1, 1, 0, stream, args, NULL), CUDA_SUCCESS);
}

/* s turns busy (with memory of its own), then size fresh bytes are made:
 * GLOBAL memory while a stream works, closed at birth under mprotect. */
static CUdeviceptr fresh_while_busy(size_t size) {
  launch(s, busy);
  CUdeviceptr p;
  EXPECT_RC(cu.cuMemAllocManaged(&p, size, CU_MEM_ATTACH_GLOBAL), CUDA_SUCCESS);
  asked = p, asked_size = size;
  return p;
}

/* right: a kernel given fresh closed memory: moved */
static void fresh_kernel(void) {
  launch(s, fresh_while_busy(1 << 20));
}
/* right: two kernels given it: moved once */
static void fresh_two_kernels(void) {
  CUdeviceptr p = fresh_while_busy(1 << 20);
  launch(s, p);
  launch(s, p);
}
/* Prints the bytes from the first page of [p, p + size) the CPU holds to its
 * last (0 when none), as the kernel tells it: how much of the memory the
 * driver moved to the CPU for a write is the driver's choice (a real one may
 * move more than was written), and the guard asks the kernel the same way. */
static void print_held(CUdeviceptr p, size_t size) {
  size_t page = (size_t)sysconf(_SC_PAGESIZE), first = size, last = 0;
  unsigned char held[(1 << 20) / 4096];
  if (size / page > sizeof held || mincore((void *)p, size, held) != 0) {
    printf("guard_ahead: mincore did not answer\n");
    return;
  }
  for (size_t i = 0; i < size / page; i++)
    if (held[i] & 1) {
      if (first == size) first = i * page;
      last = (i + 1) * page;
    }
  printf("guard_ahead: the CPU holds %zu bytes from its first page held to its last\n",
         first == size ? 0 : last - first);
}

/* Kernels given 1 MiB in two busy periods, the CPU writing bytes [from, to)
 * of it between. */
static void touched_between(size_t from, size_t to) {
  CUdeviceptr p = fresh_while_busy(1 << 20);
  launch(s, p);
  EXPECT_RC(cu.cuCtxSynchronize(), CUDA_SUCCESS);
  memset((char *)p + from, 1, to - from);
  print_held(p, 1 << 20);
  launch(s, busy);
  launch(s, p);
}
/* right: the CPU not touching it between: moved once (the GPU still holds
 * it) */
static void again_kernel(void) {
  touched_between(0, 0);
}
/* right: the CPU writing half of it between: moved twice, the second time
 * only that half */
static void touched_kernel(void) {
  touched_between(256 << 10, 768 << 10);
}
/* right: the CPU writing one byte of it between: moved once (the GPU's
 * faults on a few pages cost less than a prefetch) */
static void touched_byte_kernel(void) {
  touched_between(5000, 5001);
}
/* right: a kernel given it in eight busy periods, the CPU touching nothing:
 * moved once; after the first periods the process takes no page fault, and
 * the guard does not even ask the kernel what the CPU holds */
static void again_many_kernel(void) {
  CUdeviceptr p = fresh_while_busy(1 << 20);
  for (int i = 0; i < 8; i++) {
    launch(s, p);
    EXPECT_RC(cu.cuCtxSynchronize(), CUDA_SUCCESS);
    launch(s, busy);
  }
}
/* right: moved, then the program prefetches it to the CPU itself (no CPU
 * fault maps it there): moved whole again for the next kernel */
static void placed_kernel(void) {
  CUdeviceptr p = fresh_while_busy(1 << 20);
  CUmemLocation cpu = {.type = CU_MEM_LOCATION_TYPE_HOST};
  if (!prefetch) exit(1);
  launch(s, p);
  EXPECT_RC(cu.cuCtxSynchronize(), CUDA_SUCCESS);
  EXPECT_RC(prefetch(p, 1 << 20, cpu, 0, t), CUDA_SUCCESS);
  EXPECT_RC(cu.cuCtxSynchronize(), CUDA_SUCCESS);
  launch(s, busy);
  launch(s, p);
}
/* right: a set of fresh closed memory: moved */
static void fresh_set(void) {
  CUdeviceptr p = fresh_while_busy(1 << 20);
  EXPECT_RC(set8(p, 0, 1 << 20, s), CUDA_SUCCESS);
}
/* right: memory open when the kernel is given it (nothing busy); not moved */
static void open_kernel(void) {
  EXPECT_RC(cu.cuMemAllocManaged(&asked, 1 << 20, CU_MEM_ATTACH_GLOBAL), CUDA_SUCCESS);
  asked_size = 1 << 20;
  launch(s, asked);
}
/* right: captured work runs later, if ever; not moved */
static void captured_kernel(void) {
  CUdeviceptr p = fresh_while_busy(1 << 20);
  CUgraph g;
  EXPECT_RC(cu.cuStreamBeginCapture(t, CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_SUCCESS);
  launch(t, p);
  EXPECT_RC(cu.cuStreamEndCapture(t, &g), CUDA_SUCCESS);
}
/* right: a graph whose kernel is given fresh closed memory, launched: moved */
static void graph_kernel(void) {
  CUdeviceptr p = fresh_while_busy(1 << 20);
  CUgraph g;
  CUgraphExec e;
  EXPECT_RC(cu.cuStreamBeginCapture(t, CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_SUCCESS);
  launch(t, p);
  EXPECT_RC(cu.cuStreamEndCapture(t, &g), CUDA_SUCCESS);
  EXPECT_RC(instantiate(&e, g, 0), CUDA_SUCCESS);
  EXPECT_RC(graph_launch(e, t), CUDA_SUCCESS);
}
/* right: memory the program placed itself; not moved */
static void advised_kernel(void) {
  CUdeviceptr p = fresh_while_busy(1 << 20);
  CUmemLocation cpu = {.type = CU_MEM_LOCATION_TYPE_HOST};
  if (!advise) exit(1);
  EXPECT_RC(advise(p, 1 << 20, CU_MEM_ADVISE_SET_PREFERRED_LOCATION, cpu), CUDA_SUCCESS);
  launch(s, p);
}
/* right: a kernel given a large allocation may touch a slice; not moved */
static void large_kernel(void) {
  launch(s, fresh_while_busy((size_t)128 << 20));
}
/* right: a set of a slice of a large allocation: that slice moved */
static void large_set(void) {
  CUdeviceptr p = fresh_while_busy((size_t)128 << 20);
  EXPECT_RC(set8(p + (1 << 20), 0, 1 << 20, s), CUDA_SUCCESS);
  asked = p + (1 << 20), asked_size = 1 << 20;
}

/* right: the program's own prefetch to the CPU, then the guard's to the
 * device: the program still sees the CPU */
static void own_cpu_prefetch_kernel(void) {
  CUdeviceptr p = fresh_while_busy(1 << 20);
  CUmemLocation cpu = {.type = CU_MEM_LOCATION_TYPE_HOST};
  if (!prefetch) exit(1);
  EXPECT_RC(prefetch(p, 1 << 20, cpu, 0, s), CUDA_SUCCESS);
  launch(s, p);
}
/* right: the program's own prefetch to the device */
static void own_device_prefetch_kernel(void) {
  CUdeviceptr p = fresh_while_busy(1 << 20);
  CUmemLocation gpu = {.type = CU_MEM_LOCATION_TYPE_DEVICE, .id = 0};
  if (!prefetch) exit(1);
  EXPECT_RC(prefetch(p, 1 << 20, gpu, 0, s), CUDA_SUCCESS);
  launch(s, p);
}

static const struct scenario_case cases[] = {
    {"fresh_two_kernels", fresh_two_kernels},
    {"again_kernel", again_kernel},
    {"touched_kernel", touched_kernel},
    {"touched_byte_kernel", touched_byte_kernel},
    {"again_many_kernel", again_many_kernel},
    {"placed_kernel", placed_kernel},
    {"graph_kernel", graph_kernel},
    {"own_cpu_prefetch_kernel", own_cpu_prefetch_kernel},
    {"own_device_prefetch_kernel", own_device_prefetch_kernel},
    {"fresh_kernel", fresh_kernel},
    {"fresh_set", fresh_set},
    {"open_kernel", open_kernel},
    {"captured_kernel", captured_kernel},
    {"advised_kernel", advised_kernel},
    {"large_kernel", large_kernel},
    {"large_set", large_set},
};

/* Whether mincore answers on closed pages, as the guard asks it (the kernel
 * does; an emulator may refuse them): exit 0 when it does, 3 when not. */
static int mincore_answers(void) {
  long page = sysconf(_SC_PAGESIZE);
  unsigned char held;
  void *p = mmap(NULL, (size_t)page, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return 1;
  int r = mincore(p, (size_t)page, &held);
  munmap(p, (size_t)page);
  return r == 0 ? 0 : 3;
}

int main(int argc, char **argv) {
  CUmodule mod;
  if (argc == 2 && strcmp(argv[1], "mincore_answers") == 0) return mincore_answers();
  const struct scenario_case *c = CASE_FROM_ARGS(cases, argc, argv);
  if (!c) return 2;
  start_cuda("link");
  *(void **)&range_attribute = dlsym(RTLD_DEFAULT, "cuMemRangeGetAttribute");
  *(void **)&set8 = dlsym(RTLD_DEFAULT, "cuMemsetD8Async");
  /* Newer than 11.4: each case that needs one looks. */
  *(void **)&advise = dlsym(RTLD_DEFAULT, "cuMemAdvise_v2");
  *(void **)&prefetch = dlsym(RTLD_DEFAULT, "cuMemPrefetchAsync_v2");
  *(void **)&range_attributes = dlsym(RTLD_DEFAULT, "cuMemRangeGetAttributes");
  *(void **)&instantiate = dlsym(RTLD_DEFAULT, "cuGraphInstantiateWithFlags");
  *(void **)&graph_launch = dlsym(RTLD_DEFAULT, "cuGraphLaunch");
  if (!range_attribute || !set8 || !range_attributes || !instantiate || !graph_launch)
    return fprintf(stderr, "guard_ahead: no entry\n"), 1;
  EXPECT_RC(cu.cuModuleLoadData(&mod, ptx), CUDA_SUCCESS);
  EXPECT_RC(cu.cuModuleGetFunction(&kernel, mod, "touch"), CUDA_SUCCESS);
  EXPECT_RC(cu.cuStreamCreate(&s, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
  EXPECT_RC(cu.cuStreamCreate(&t, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
  EXPECT_RC(cu.cuMemAllocManaged(&busy, 4096, CU_MEM_ATTACH_GLOBAL), CUDA_SUCCESS);
  c->run();
  EXPECT_RC(cu.cuCtxSynchronize(), CUDA_SUCCESS);
  /* The one attribute, then the same through the several-attribute form. */
  int where = 0, again = 0;
  EXPECT_RC(range_attribute(&where, sizeof where, CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION,
                            asked, asked_size),
            CUDA_SUCCESS);
  void *data[] = {&again};
  size_t sizes[] = {sizeof again};
  CUmem_range_attribute attrs[] = {CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION};
  EXPECT_RC(range_attributes(data, sizes, attrs, 1, asked, asked_size), CUDA_SUCCESS);
  if (finish() || again != where) return 1;
  if (where == 0) return 7;
  if (where == CU_DEVICE_CPU) return 5;
  if (where == CU_DEVICE_INVALID) return 0;
  fprintf(stderr, "guard_ahead: last prefetch location %d\n", where);
  return 1;
}
