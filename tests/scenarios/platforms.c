/* platforms.c - what differs on a Jetson (no concurrent managed access) and on
 * a Grace Hopper (pageable memory access): the stand-in driver plays either
 * with FAKECUDA_PROFILE (tegra, grace); expectations.txt runs each case on
 * the device it is about and on the default H100 for contrast.
 *
 *   platforms CASE
 *
 * Every driver answer is checked against what the device's attributes say it
 * must be, so the program holds over the real driver of any device.
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <time.h>

#include "scenario.h"

#define MIB (1u << 20)

static CUstream s;
static CUdeviceptr m;
static volatile int go_on; /* the host function waits for it */

static int device_attribute(CUdevice_attribute attr) {
  int v = -1;
  EXPECT_RC(cuDeviceGetAttribute(&v, attr, 0), CUDA_SUCCESS);
  return v;
}

/* Keeps its stream busy until the program says go_on (or a second passed). */
static void hold_stream(void *unused) {
  (void)unused;
  struct timespec ms = {0, 1000000};
  for (int i = 0; i < 1000 && !__atomic_load_n(&go_on, __ATOMIC_ACQUIRE); i++)
    nanosleep(&ms, NULL);
}

/* A CPU write to memory single-attached to a stream with pending work: AC201
 * everywhere; on a device without concurrent managed access the driver kills
 * the process for it, so the finding must be out before. */
static void touch_busy(void) {
  EXPECT_RC(cu.cuStreamAttachMemAsync(s, m, 0, CU_MEM_ATTACH_SINGLE), CUDA_SUCCESS);
  EXPECT_RC(cu.cuStreamSynchronize(s), CUDA_SUCCESS);
  EXPECT_RC(cu.cuLaunchHostFunc(s, hold_stream, NULL), CUDA_SUCCESS);
  *(volatile int *)m = 42; /* AC201; SIGSEGV on a Jetson */
  __atomic_store_n(&go_on, 1, __ATOMIC_RELEASE);
  EXPECT_RC(cu.cuStreamSynchronize(s), CUDA_SUCCESS);
}

/* The same write after the synchronisation: right on every device. */
/* Globally attached memory touched while another stream works: AC202, and
 * under --semantics device still an error where it is a crash. */
static void touch_global_busy(void) {
  EXPECT_RC(cu.cuLaunchHostFunc(s, hold_stream, NULL), CUDA_SUCCESS);
  *(volatile int *)m = 42; /* AC202; SIGSEGV on a Jetson */
  __atomic_store_n(&go_on, 1, __ATOMIC_RELEASE);
  EXPECT_RC(cu.cuStreamSynchronize(s), CUDA_SUCCESS);
}

static void touch_after_sync(void) {
  EXPECT_RC(cu.cuStreamAttachMemAsync(s, m, 0, CU_MEM_ATTACH_SINGLE), CUDA_SUCCESS);
  __atomic_store_n(&go_on, 1, __ATOMIC_RELEASE);
  EXPECT_RC(cu.cuLaunchHostFunc(s, hold_stream, NULL), CUDA_SUCCESS);
  EXPECT_RC(cu.cuStreamSynchronize(s), CUDA_SUCCESS);
  *(volatile int *)m = 42;
  if (*(volatile int *)m != 42) failures++, fprintf(stderr, "platforms: the write was lost\n");
}

/* malloc'd memory attached with its length: legal where the GPU reaches
 * pageable memory (Grace), CUDA_ERROR_INVALID_VALUE (AC104) elsewhere. */
static void pageable_with_length(void) {
  int pageable = device_attribute(CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS);
  char *p = malloc(MIB);
  EXPECT_RC(cu.cuStreamAttachMemAsync(s, (CUdeviceptr)p, MIB, CU_MEM_ATTACH_SINGLE),
            pageable ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE);
  EXPECT_RC(cu.cuStreamSynchronize(s), CUDA_SUCCESS);
  free(p);
}

/* With length 0 it is refused on every device (AC103 where pageable memory is
 * reachable, AC104 where it is not). */
static void pageable_zero_length(void) {
  char *p = malloc(MIB);
  EXPECT_RC(cu.cuStreamAttachMemAsync(s, (CUdeviceptr)p, 0, CU_MEM_ATTACH_SINGLE),
            CUDA_ERROR_INVALID_VALUE);
  free(p);
}

static const struct scenario_case cases[] = {
    {"touch_busy", touch_busy},
    {"touch_global_busy", touch_global_busy},
    {"touch_after_sync", touch_after_sync},
    {"pageable_with_length", pageable_with_length},
    {"pageable_zero_length", pageable_zero_length},
};

int main(int argc, char **argv) {
  const struct scenario_case *c = CASE_FROM_ARGS(cases, argc, argv);
  if (!c) return 2;
  start_cuda("link"); /* linked: the tegra profile's protection needs it (fake_profile.c) */
  EXPECT_RC(cu.cuMemAllocManaged(&m, MIB, CU_MEM_ATTACH_GLOBAL), CUDA_SUCCESS);
  EXPECT_RC(cu.cuStreamCreate(&s, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
  c->run();
  EXPECT_RC(cu.cuMemFree(m), CUDA_SUCCESS); /* the stream stays: m may be attached to it */
  return finish();
}
