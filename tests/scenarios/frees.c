/* frees.c - the end of memory the model learned from the driver rather than
 * saw made: pinned (cuMemFreeHost), registered (cuMemHostUnregister),
 * stream-ordered (cuMemFreeAsync), imported from another process
 * (cuIpcCloseMemHandle) and mapped virtual memory (cuMemUnmap,
 * cuMemAddressFree). An attach of such memory is refused and teaches the model
 * what it is (AC104); once it ends, the address is no longer that memory.
 *
 * Each KIND is made, attached (AC104), ended, then:
 *   KIND_forgotten  attached again with length 0: unknown memory now, judged
 *                   as the driver says it is (AC104 on the H100, AC103 where
 *                   pageable memory may be attached)
 *   KIND_reused     the address mapped again as the program's own pageable
 *                   memory and attached with its length, which is right where
 *                   pageable memory may be attached
 *
 *   frees CASE
 */
#define _GNU_SOURCE
#include <spawn.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "scenario.h"

#define SIZE (1u << 20)

static CUstream s;

/* An attach the driver refuses (p is no managed memory): the model learns p,
 * or after the end judges what p is now (AC104, or AC103). */
static void attach_refused(CUdeviceptr p) {
  EXPECT_RC(cu.cuStreamAttachMemAsync(s, p, 0, CU_MEM_ATTACH_SINGLE), CUDA_ERROR_INVALID_VALUE);
}

/* After the end: size bytes of the program's own memory at p (unless it has
 * them already), attached with their length. */
static void attach_as_pageable(CUdeviceptr p, size_t size, bool map) {
  if (map &&
      mmap((void *)(uintptr_t)p, size, PROT_READ | PROT_WRITE,
           MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0) != (void *)(uintptr_t)p) {
    fprintf(stderr, "scenario: the address was not free again\n");
    failures++;
    return;
  }
  EXPECT_RC(cu.cuStreamAttachMemAsync(s, p, size, CU_MEM_ATTACH_SINGLE), CUDA_SUCCESS);
}

static void then(CUdeviceptr p, size_t size, bool reuse, bool map) {
  if (reuse)
    attach_as_pageable(p, size, map);
  else
    attach_refused(p);
}

/* ---- pinned memory ---- */
static void host_alloc(bool reuse) {
  void *h;
  EXPECT_RC(cu.cuMemHostAlloc(&h, SIZE, 0), CUDA_SUCCESS);
  attach_refused((uintptr_t)h);
  EXPECT_RC(cu.cuMemFreeHost(h), CUDA_SUCCESS);
  then((uintptr_t)h, SIZE, reuse, true);
}
static void host_alloc_forgotten(void) {
  host_alloc(false);
}
static void host_alloc_reused(void) {
  host_alloc(true);
}

/* ---- registered memory: the program's own pages stay ---- */
static void host_register(bool reuse) {
  void *h = mmap(NULL, SIZE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  EXPECT_RC(cuMemHostRegister(h, SIZE, 0), CUDA_SUCCESS);
  attach_refused((uintptr_t)h);
  EXPECT_RC(cuMemHostUnregister(h), CUDA_SUCCESS);
  then((uintptr_t)h, SIZE, reuse, false);
}
static void host_register_forgotten(void) {
  host_register(false);
}
static void host_register_reused(void) {
  host_register(true);
}

/* ---- stream-ordered memory ---- */
static void alloc_async(bool reuse) {
  CUdeviceptr d;
  EXPECT_RC(cuMemAllocAsync(&d, SIZE, s), CUDA_SUCCESS);
  attach_refused(d);
  EXPECT_RC(cuMemFreeAsync(d, s), CUDA_SUCCESS);
  EXPECT_RC(cu.cuStreamSynchronize(s), CUDA_SUCCESS);
  then(d, SIZE, reuse, true);
}
static void alloc_async_forgotten(void) {
  alloc_async(false);
}
static void alloc_async_reused(void) {
  alloc_async(true);
}

/* ---- virtual memory: physical memory mapped into a reserved range ---- */
static void virtual_memory(bool reuse) {
  CUmemAllocationProp prop;
  memset(&prop, 0, sizeof prop);
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location = (CUmemLocation){CU_MEM_LOCATION_TYPE_DEVICE, 0};
  size_t size = 0;
  CUdeviceptr p;
  CUmemGenericAllocationHandle physical;
  EXPECT_RC(cuMemGetAllocationGranularity(&size, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM),
            CUDA_SUCCESS);
  EXPECT_RC(cuMemAddressReserve(&p, size, 0, 0, 0), CUDA_SUCCESS);
  EXPECT_RC(cuMemCreate(&physical, size, &prop, 0), CUDA_SUCCESS);
  EXPECT_RC(cuMemMap(p, size, 0, physical, 0), CUDA_SUCCESS);
  CUmemAccessDesc access = {prop.location, CU_MEM_ACCESS_FLAGS_PROT_READWRITE};
  EXPECT_RC(cuMemSetAccess(p, size, &access, 1), CUDA_SUCCESS);
  attach_refused(p);
  EXPECT_RC(cuMemUnmap(p, size), CUDA_SUCCESS);
  if (!reuse) attach_refused(p); /* the range is still reserved */
  EXPECT_RC(cuMemRelease(physical), CUDA_SUCCESS);
  EXPECT_RC(cuMemAddressFree(p, size), CUDA_SUCCESS);
  if (reuse) attach_as_pageable(p, size, true);
}
static void virtual_memory_forgotten(void) {
  virtual_memory(false);
}
static void virtual_memory_reused(void) {
  virtual_memory(true);
}

/* ---- memory imported from another process ----
 * The program exports device memory and runs itself as the importer
 * (ipc_import), which gets the handle and what to do in its environment
 * (not ATTACHCHECK_* names: the shim warns of those it does not know). */
#define HANDLE_ENV "SCENARIO_IPC_HANDLE"
#define REUSE_ENV "SCENARIO_IPC_REUSE"

static void ipc_import(void) {
  const char *hex = getenv(HANDLE_ENV);
  CUipcMemHandle handle;
  CUdeviceptr p;
  memset(&handle, 0, sizeof handle);
  for (size_t i = 0; hex && i < sizeof handle.reserved && hex[2 * i] && hex[2 * i + 1]; i++) {
    unsigned byte;
    sscanf(hex + 2 * i, "%2x", &byte);
    handle.reserved[i] = (char)byte;
  }
  EXPECT_RC(cuIpcOpenMemHandle(&p, handle, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS), CUDA_SUCCESS);
  attach_refused(p);
  EXPECT_RC(cuIpcCloseMemHandle(p), CUDA_SUCCESS);
  then(p, SIZE, getenv(REUSE_ENV) != NULL, true);
}

static void ipc(bool reuse) {
  CUdeviceptr d;
  CUipcMemHandle handle;
  char hex[2 * sizeof handle.reserved + 1];
  EXPECT_RC(cu.cuMemAlloc(&d, SIZE), CUDA_SUCCESS);
  EXPECT_RC(cuIpcGetMemHandle(&handle, d), CUDA_SUCCESS);
  for (size_t i = 0; i < sizeof handle.reserved; i++)
    sprintf(hex + 2 * i, "%02x", (unsigned char)handle.reserved[i]);
  setenv(HANDLE_ENV, hex, 1);
  if (reuse) setenv(REUSE_ENV, "1", 1);
  char *argv[] = {"frees", "ipc_import", NULL};
  extern char **environ;
  pid_t child;
  int status = -1;
  if (posix_spawn(&child, "/proc/self/exe", NULL, NULL, argv, environ) != 0 ||
      waitpid(child, &status, 0) != child || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    fprintf(stderr, "scenario: the importing process failed (status %d)\n", status);
    failures++;
  }
  EXPECT_RC(cu.cuMemFree(d), CUDA_SUCCESS);
}
static void ipc_forgotten(void) {
  ipc(false);
}
static void ipc_reused(void) {
  ipc(true);
}

static const struct scenario_case cases[] = {
    {"host_alloc_forgotten", host_alloc_forgotten},
    {"host_alloc_reused", host_alloc_reused},
    {"host_register_forgotten", host_register_forgotten},
    {"host_register_reused", host_register_reused},
    {"alloc_async_forgotten", alloc_async_forgotten},
    {"alloc_async_reused", alloc_async_reused},
    {"virtual_memory_forgotten", virtual_memory_forgotten},
    {"virtual_memory_reused", virtual_memory_reused},
    {"ipc_forgotten", ipc_forgotten},
    {"ipc_reused", ipc_reused},
    {"ipc_import", ipc_import},
};

int main(int argc, char **argv) {
  const struct scenario_case *c = CASE_FROM_ARGS(cases, argc, argv);
  if (!c) return 2;
  start_cuda("link");
  EXPECT_RC(cu.cuStreamCreate(&s, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
  c->run();
  EXPECT_RC(cu.cuCtxSynchronize(), CUDA_SUCCESS);
  return finish();
}
