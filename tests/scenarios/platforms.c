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
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

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

/* Keeps its stream busy until the program says go_on, or ms (the data)
 * milliseconds passed. */
static void hold_stream(void *ms) {
  struct timespec one = {0, 1000000};
  for (intptr_t i = 0; i < (intptr_t)ms && !__atomic_load_n(&go_on, __ATOMIC_ACQUIRE); i++)
    nanosleep(&one, NULL);
}

/* Adds one to the int at p after about a millisecond (one thread): on a GPU a
 * CPU read made right after the launch sees the value before it. */
static const char ptx[] = ".version 8.0\n.target sm_90\n.address_size 64\n"
                          ".visible .entry add_one(.param .u64 p)\n{\n"
                          "  .reg .b64 %rd<3>;\n  .reg .b32 %r<3>;\n"
                          "  ld.param.u64 %rd1, [p];\n  cvta.to.global.u64 %rd2, %rd1;\n"
                          "  nanosleep.u32 1000000;\n  ld.global.u32 %r1, [%rd2];\n"
                          "  add.s32 %r2, %r1, 1;\n  st.global.u32 [%rd2], %r2;\n  ret;\n}\n";
static CUfunction add_one;

static void launch_add_one(CUdeviceptr p) {
  void *args[] = {&p};
  EXPECT_RC(cu.cuLaunchKernel(add_one, 1, 1, 1, 1, 1, 1, 0, s, args, NULL), CUDA_SUCCESS);
}

/* A CPU write to memory single-attached to a stream with pending work: AC201
 * everywhere; on a device without concurrent managed access the driver kills
 * the process for it, so the finding must be out before. */
/* The write while a host function holds the stream for up to ms. */
static void touch_while_held(intptr_t ms) {
  EXPECT_RC(cu.cuStreamAttachMemAsync(s, m, 0, CU_MEM_ATTACH_SINGLE), CUDA_SUCCESS);
  EXPECT_RC(cu.cuStreamSynchronize(s), CUDA_SUCCESS);
  EXPECT_RC(cu.cuLaunchHostFunc(s, hold_stream, (void *)ms), CUDA_SUCCESS);
  *(volatile int *)m = 42; /* AC201; SIGSEGV on a Jetson */
  __atomic_store_n(&go_on, 1, __ATOMIC_RELEASE);
  EXPECT_RC(cu.cuStreamSynchronize(s), CUDA_SUCCESS);
}
static void touch_busy(void) {
  touch_while_held(1000);
}
/* The same write after the synchronisation: right on every device. */
/* Globally attached memory touched while another stream works: AC202, and
 * under --semantics device still an error where it is a crash. */
static void touch_global_busy(void) {
  EXPECT_RC(cu.cuLaunchHostFunc(s, hold_stream, (void *)1000), CUDA_SUCCESS);
  *(volatile int *)m = 42; /* AC202; SIGSEGV on a Jetson */
  __atomic_store_n(&go_on, 1, __ATOMIC_RELEASE);
  EXPECT_RC(cu.cuStreamSynchronize(s), CUDA_SUCCESS);
}

static void touch_after_sync(void) {
  EXPECT_RC(cu.cuStreamAttachMemAsync(s, m, 0, CU_MEM_ATTACH_SINGLE), CUDA_SUCCESS);
  __atomic_store_n(&go_on, 1, __ATOMIC_RELEASE);
  EXPECT_RC(cu.cuLaunchHostFunc(s, hold_stream, (void *)1000), CUDA_SUCCESS);
  EXPECT_RC(cu.cuStreamSynchronize(s), CUDA_SUCCESS);
  *(volatile int *)m = 42;
  if (*(volatile int *)m != 42) failures++, fprintf(stderr, "platforms: the write was lost\n");
}

/* --on-error repair's cases (docs/rules/AC201.md, AC202.md): a kernel is
 * pending, not a host function, so the work completes on its own; without
 * concurrent managed access the access kills the process unless it waits. */
static void touch_launched(void) {
  EXPECT_RC(cu.cuStreamAttachMemAsync(s, m, 0, CU_MEM_ATTACH_SINGLE), CUDA_SUCCESS);
  EXPECT_RC(cu.cuStreamSynchronize(s), CUDA_SUCCESS);
  launch_add_one(m + 64);
  *(volatile int *)m = 42; /* AC201; SIGSEGV on a Jetson, unless repaired */
  EXPECT_RC(cu.cuStreamSynchronize(s), CUDA_SUCCESS);
  if (*(volatile int *)m != 42) failures++, fprintf(stderr, "platforms: the write was lost\n");
}

static void touch_global_launched(void) {
  launch_add_one(m + 64);
  *(volatile int *)m = 42; /* AC202 */
  EXPECT_RC(cu.cuStreamSynchronize(s), CUDA_SUCCESS);
}

/* The kernel is given other memory: under --semantics device on a GPU with
 * concurrent managed access the write to m races with nothing (no finding, no
 * repair); under strict semantics, or on a Jetson, it is AC202. */
static void touch_global_unused(void) {
  CUdeviceptr other;
  EXPECT_RC(cu.cuMemAllocManaged(&other, 4096, CU_MEM_ATTACH_GLOBAL), CUDA_SUCCESS);
  launch_add_one(other);
  *(volatile int *)m = 42; /* AC202 under strict semantics */
  EXPECT_RC(cu.cuStreamSynchronize(s), CUDA_SUCCESS);
  if (*(volatile int *)m != 42) failures++, fprintf(stderr, "platforms: the write was lost\n");
  EXPECT_RC(cu.cuMemFree(other), CUDA_SUCCESS);
}

/* What a Jetson lets the CPU touch while a kernel runs: memory attached to
 * the host, and memory single-attached to a stream with no work, while
 * another stream works (the right cases beside touch_launched). */
static void host_attached_while_launched(void) {
  CUdeviceptr h;
  EXPECT_RC(cu.cuMemAllocManaged(&h, 4096, CU_MEM_ATTACH_HOST), CUDA_SUCCESS);
  launch_add_one(m + 64);
  *(volatile int *)h = 42; /* legal: the GPU never owns host-attached memory */
  EXPECT_RC(cu.cuStreamSynchronize(s), CUDA_SUCCESS);
  EXPECT_RC(cu.cuMemFree(h), CUDA_SUCCESS);
}

static void single_idle_while_other_launched(void) {
  CUstream idle;
  CUdeviceptr other;
  EXPECT_RC(cu.cuStreamCreate(&idle, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
  EXPECT_RC(cu.cuMemAllocManaged(&other, 4096, CU_MEM_ATTACH_GLOBAL), CUDA_SUCCESS);
  EXPECT_RC(cu.cuStreamAttachMemAsync(idle, other, 0, CU_MEM_ATTACH_SINGLE), CUDA_SUCCESS);
  EXPECT_RC(cu.cuStreamAttachMemAsync(s, m, 0, CU_MEM_ATTACH_SINGLE), CUDA_SUCCESS);
  EXPECT_RC(cu.cuStreamSynchronize(idle), CUDA_SUCCESS);
  EXPECT_RC(cu.cuStreamSynchronize(s), CUDA_SUCCESS);
  launch_add_one(m + 64);
  *(volatile int *)other = 42; /* legal: its stream has no work */
  EXPECT_RC(cu.cuStreamSynchronize(s), CUDA_SUCCESS);
  EXPECT_RC(cu.cuMemFree(other), CUDA_SUCCESS);
}

/* Many threads repaired at once, while a timer's signal interrupts their
 * waits: each of 8 threads, 100 times, launches on its own stream and writes
 * the memory attached to it before synchronising (AC201, one finding: one
 * place), and every write must land. The repairs' table, their futex waits
 * (interrupted, they wait again) and the repairer's synchronisations all
 * take part; without repair on a Jetson the first write kills the process. */
#define STORM_THREADS 8
#define STORM_ROUNDS 100
static volatile int ticks;
static void tick(int sig) {
  (void)sig;
  ticks++;
}
static void *storm_thread(void *arg) {
  CUcontext ctx = arg;
  CUstream own;
  CUdeviceptr mine;
  EXPECT_RC(cu.cuCtxSetCurrent(ctx), CUDA_SUCCESS);
  EXPECT_RC(cu.cuStreamCreate(&own, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
  EXPECT_RC(cu.cuMemAllocManaged(&mine, 4096, CU_MEM_ATTACH_GLOBAL), CUDA_SUCCESS);
  EXPECT_RC(cu.cuStreamAttachMemAsync(own, mine, 0, CU_MEM_ATTACH_SINGLE), CUDA_SUCCESS);
  EXPECT_RC(cu.cuStreamSynchronize(own), CUDA_SUCCESS);
  void *args[] = {&mine};
  for (int i = 0; i < STORM_ROUNDS; i++) {
    EXPECT_RC(cu.cuLaunchKernel(add_one, 1, 1, 1, 1, 1, 1, 0, own, args, NULL), CUDA_SUCCESS);
    ((volatile int *)mine)[1] = i; /* AC201 */
    EXPECT_RC(cu.cuStreamSynchronize(own), CUDA_SUCCESS);
    if (((volatile int *)mine)[1] != i) __atomic_add_fetch(&failures, 1, __ATOMIC_RELAXED);
  }
  EXPECT_RC(cu.cuMemFree(mine), CUDA_SUCCESS);
  EXPECT_RC(cu.cuStreamDestroy(own), CUDA_SUCCESS);
  return NULL;
}
static void repair_storm(void) {
  CUcontext ctx;
  EXPECT_RC(cu.cuCtxGetCurrent(&ctx), CUDA_SUCCESS);
  struct sigaction sa = {.sa_handler = tick, .sa_flags = SA_RESTART};
  sigaction(SIGALRM, &sa, NULL);
  struct itimerval every = {{0, 500}, {0, 500}};
  setitimer(ITIMER_REAL, &every, NULL);
  pthread_t t[STORM_THREADS];
  for (int i = 0; i < STORM_THREADS; i++)
    pthread_create(&t[i], NULL, storm_thread, ctx);
  for (int i = 0; i < STORM_THREADS; i++)
    pthread_join(t[i], NULL);
  struct itimerval off = {{0, 0}, {0, 0}};
  setitimer(ITIMER_REAL, &off, NULL);
}

/* A read right after the launch (AC201): on a GPU it sees the value before
 * the kernel's add, unless the read waited for the kernel - which, with
 * PLATFORMS_EXPECT_WAITED set (the --on-error repair rows), it must have:
 * it then equals what the synchronisation shows. Over the stand-in no kernel
 * runs, so both are what was there. */
static void read_after_launch(void) {
  EXPECT_RC(cu.cuStreamAttachMemAsync(s, m, 0, CU_MEM_ATTACH_SINGLE), CUDA_SUCCESS);
  EXPECT_RC(cu.cuStreamSynchronize(s), CUDA_SUCCESS);
  *(volatile int *)m = 0;
  launch_add_one(m);
  int seen = *(volatile int *)m; /* AC201 */
  EXPECT_RC(cu.cuStreamSynchronize(s), CUDA_SUCCESS);
  int after = *(volatile int *)m;
  printf("platforms: read %d right after the launch, %d after the synchronisation\n", seen, after);
  if (getenv("PLATFORMS_EXPECT_WAITED") && seen != after)
    failures++, fprintf(stderr, "platforms: the read did not wait for the kernel\n");
}

/* read(2) into busy memory: EFAULT on a Jetson (the kernel finds it
 * inaccessible), unless the call waits for the work first. */
static void read_into_launched(void) {
  int fds[2];
  if (pipe(fds) != 0 || write(fds[1], "abcd", 4) != 4) failures++;
  EXPECT_RC(cu.cuStreamAttachMemAsync(s, m, 0, CU_MEM_ATTACH_SINGLE), CUDA_SUCCESS);
  EXPECT_RC(cu.cuStreamSynchronize(s), CUDA_SUCCESS);
  launch_add_one(m + 64);
  ssize_t got = read(fds[0], (void *)m, 4); /* AC201 */
  if (got != 4) failures++, fprintf(stderr, "platforms: read returned %zd\n", got);
  EXPECT_RC(cu.cuStreamSynchronize(s), CUDA_SUCCESS);
  close(fds[0]);
  close(fds[1]);
}

/* The host function holds the stream until the write is done (up to 5 s):
 * waiting for it before the write cannot end, and a repair must be given
 * up (--repair-wait). */
static void touch_held(void) {
  touch_while_held(5000);
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
    {"touch_launched", touch_launched},
    {"read_after_launch", read_after_launch},
    {"repair_storm", repair_storm},
    {"host_attached_while_launched", host_attached_while_launched},
    {"single_idle_while_other_launched", single_idle_while_other_launched},
    {"touch_global_launched", touch_global_launched},
    {"touch_global_unused", touch_global_unused},
    {"read_into_launched", read_into_launched},
    {"touch_held", touch_held},
    {"pageable_with_length", pageable_with_length},
    {"pageable_zero_length", pageable_zero_length},
};

int main(int argc, char **argv) {
  const struct scenario_case *c = CASE_FROM_ARGS(cases, argc, argv);
  if (!c) return 2;
  start_cuda("link"); /* linked: the tegra profile's protection needs it (fake_profile.c) */
  CUmodule mod;
  EXPECT_RC(cu.cuModuleLoadData(&mod, ptx), CUDA_SUCCESS);
  EXPECT_RC(cu.cuModuleGetFunction(&add_one, mod, "add_one"), CUDA_SUCCESS);
  EXPECT_RC(cu.cuMemAllocManaged(&m, MIB, CU_MEM_ATTACH_GLOBAL), CUDA_SUCCESS);
  EXPECT_RC(cu.cuStreamCreate(&s, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
  c->run();
  EXPECT_RC(cu.cuMemFree(m), CUDA_SUCCESS); /* the stream stays: m may be attached to it */
  return finish();
}
