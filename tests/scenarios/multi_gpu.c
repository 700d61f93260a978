/* multi_gpu.c - two devices, a context on each: memory single-attached to a
 * stream of one device and used from the other's, the cross-device
 * synchronisation that makes it right, each device's own context
 * synchronisation, and each context's own legacy NULL stream. Contexts are
 * switched with cuCtxSetCurrent and with cuCtxPushCurrent / cuCtxPopCurrent,
 * and made with cuDevicePrimaryCtxRetain (device 0) and cuCtxCreate (device 1).
 *
 * The stand-in driver plays two devices with FAKECUDA_DEVICES=2
 * (expectations.txt); over the real driver tests/gpu/multi_gpu.txt runs the
 * same cases where nvidia-smi lists two GPUs or more. With
 * SCENARIO_ONE_DEVICE=1 both contexts are on device 0 - two contexts of one
 * GPU keep their streams apart just the same - so expectations.txt runs
 * those cases on a machine of one GPU too.
 *
 *   multi_gpu CASE
 */
#include <stdbool.h>

#include "scenario.h"

static const char ptx[] = ".version 8.0\n.target sm_90\n.address_size 64\n"
                          ".visible .entry use(.param .u64 p)\n{\n  ret;\n}\n";

/* Each device's context, its kernel (a module is loaded per context) and a
 * stream made in it. */
struct device_side {
  CUcontext ctx;
  CUfunction use;
  CUstream stream;
};
static struct device_side d0, d1;
static CUdeviceptr m, g;
static volatile int sink;

static void load_use(struct device_side *d) {
  CUmodule mod;
  EXPECT_RC(cu.cuModuleLoadData(&mod, ptx), CUDA_SUCCESS);
  EXPECT_RC(cu.cuModuleGetFunction(&d->use, mod, "use"), CUDA_SUCCESS);
  EXPECT_RC(cu.cuStreamCreate(&d->stream, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
}

/* Device 0's primary context and device 1's created one, each with its
 * kernel and stream; m and g are managed memory made in device 0's context;
 * device 0's context is current. */
static void start_two_devices(void) {
  CUdevice dev0, dev1;
  start_cuda("link");
  EXPECT_RC(cu.cuDeviceGet(&dev0, 0), CUDA_SUCCESS);
  const char *one = getenv("SCENARIO_ONE_DEVICE");
  EXPECT_RC(cu.cuDeviceGet(&dev1, one && *one == '1' ? 0 : 1), CUDA_SUCCESS);
  EXPECT_RC(cu.cuDevicePrimaryCtxRetain(&d0.ctx, dev0), CUDA_SUCCESS);
  load_use(&d0);
  EXPECT_RC(cu.cuMemAllocManaged(&m, 1 << 20, CU_MEM_ATTACH_GLOBAL), CUDA_SUCCESS);
  EXPECT_RC(cu.cuMemAllocManaged(&g, 1 << 20, CU_MEM_ATTACH_GLOBAL), CUDA_SUCCESS);
  EXPECT_RC(cuCtxCreate(&d1.ctx, NULL, 0, dev1), CUDA_SUCCESS); /* pushed: now current */
  load_use(&d1);
  EXPECT_RC(cuCtxPopCurrent(NULL), CUDA_SUCCESS);
  EXPECT_RC(cu.cuCtxSetCurrent(d0.ctx), CUDA_SUCCESS);
}

/* A launch of side d's kernel on its stream, given p, from its context. */
static void use_on(struct device_side *d, CUdeviceptr p) {
  EXPECT_RC(cuCtxPushCurrent(d->ctx), CUDA_SUCCESS);
  launch_with_pointer(d->use, d->stream, p);
  EXPECT_RC(cuCtxPopCurrent(NULL), CUDA_SUCCESS);
}

/* wrong: m single-attached to device 0's stream, given to a kernel on
 * device 1's stream (AC301) */
static void foreign_device_stream(void) {
  attach_sync(d0.stream, m, CU_MEM_ATTACH_SINGLE);
  use_on(&d1, m);
}
/* right: ... once device 0's work is over (an event of device 0 that device
 * 1's stream waits for), m is attached to device 1's stream and used there */
static void reattach_across_devices(bool wait) {
  CUevent e;
  attach_sync(d0.stream, m, CU_MEM_ATTACH_SINGLE);
  use_on(&d0, m);
  EXPECT_RC(cu.cuEventCreate(&e, CU_EVENT_DISABLE_TIMING), CUDA_SUCCESS);
  EXPECT_RC(cu.cuEventRecord(e, d0.stream), CUDA_SUCCESS);
  EXPECT_RC(cu.cuCtxSetCurrent(d1.ctx), CUDA_SUCCESS);
  if (wait) EXPECT_RC(cu.cuStreamWaitEvent(d1.stream, e, 0), CUDA_SUCCESS);
  EXPECT_RC(cu.cuStreamAttachMemAsync(d1.stream, m, 0, CU_MEM_ATTACH_SINGLE), CUDA_SUCCESS);
  launch_with_pointer(d1.use, d1.stream, m);
  EXPECT_RC(cu.cuCtxSetCurrent(d0.ctx), CUDA_SUCCESS);
}
static void reattach_after_device_event(void) {
  reattach_across_devices(true);
}
/* wrong: ... without the wait, the re-attach is unordered (AC401) */
static void reattach_unordered(void) {
  reattach_across_devices(false);
}

/* m single-attached to device 1's stream and used there; then the host
 * synchronises one context (device 0's, or device 1's) and touches m. */
static void sync_context_then_touch(struct device_side *synced) {
  EXPECT_RC(cu.cuCtxSetCurrent(d1.ctx), CUDA_SUCCESS);
  attach_sync(d1.stream, m, CU_MEM_ATTACH_SINGLE);
  launch_with_pointer(d1.use, d1.stream, m);
  EXPECT_RC(cu.cuCtxSetCurrent(synced->ctx), CUDA_SUCCESS);
  EXPECT_RC(cu.cuCtxSynchronize(), CUDA_SUCCESS);
  sink = *(volatile int *)m;
  EXPECT_RC(cu.cuCtxSetCurrent(d0.ctx), CUDA_SUCCESS);
}
/* wrong: device 0's synchronisation does not wait for device 1 (AC201) */
static void other_device_sync_touch(void) {
  sync_context_then_touch(&d0);
}
/* right: device 1's does */
static void own_device_sync_touch(void) {
  sync_context_then_touch(&d1);
}

/* A kernel on device 1's legacy NULL stream given m (GLOBAL); then the host
 * synchronises one context's NULL stream and touches m. */
static void sync_null_stream_then_touch(struct device_side *synced) {
  EXPECT_RC(cu.cuCtxSetCurrent(d1.ctx), CUDA_SUCCESS);
  launch_with_pointer(d1.use, NULL, m);
  EXPECT_RC(cu.cuCtxSetCurrent(synced->ctx), CUDA_SUCCESS);
  EXPECT_RC(cu.cuStreamSynchronize(NULL), CUDA_SUCCESS);
  sink = *(volatile int *)m;
  EXPECT_RC(cu.cuCtxSetCurrent(d0.ctx), CUDA_SUCCESS);
}
/* wrong: each context has its own NULL stream; device 0's is idle while
 * device 1's kernel runs (AC202) */
static void other_null_stream_sync_touch(void) {
  sync_null_stream_then_touch(&d0);
}
/* right: device 1's NULL stream is the kernel's */
static void own_null_stream_sync_touch(void) {
  sync_null_stream_then_touch(&d1);
}

/* right: device 1's context is destroyed, its NULL stream's work with it */
static void other_context_destroyed_touch(void) {
  EXPECT_RC(cu.cuCtxSetCurrent(d1.ctx), CUDA_SUCCESS);
  launch_with_pointer(d1.use, NULL, m);
  EXPECT_RC(cu.cuCtxSetCurrent(d0.ctx), CUDA_SUCCESS);
  EXPECT_RC(cuCtxDestroy(d1.ctx), CUDA_SUCCESS);
  d1.ctx = NULL;
  sink = *(volatile int *)m;
}

/* A kernel on device 1 given m, then the CPU touches g, which no kernel was
 * given: under `--semantics device` right only if every device has
 * concurrent managed access (else judged strictly: AC202). */
static void unreached_on_device1(void) {
  use_on(&d1, m);
  *(volatile int *)g = 1;
}

static const struct scenario_case cases[] = {
    {"foreign_device_stream", foreign_device_stream},
    {"reattach_after_device_event", reattach_after_device_event},
    {"reattach_unordered", reattach_unordered},
    {"other_device_sync_touch", other_device_sync_touch},
    {"own_device_sync_touch", own_device_sync_touch},
    {"other_null_stream_sync_touch", other_null_stream_sync_touch},
    {"own_null_stream_sync_touch", own_null_stream_sync_touch},
    {"other_context_destroyed_touch", other_context_destroyed_touch},
    {"unreached_on_device1", unreached_on_device1},
};

int main(int argc, char **argv) {
  const struct scenario_case *c = CASE_FROM_ARGS(cases, argc, argv);
  if (!c) return 2;
  start_two_devices();
  c->run();
  if (d1.ctx) {
    EXPECT_RC(cuCtxPushCurrent(d1.ctx), CUDA_SUCCESS);
    EXPECT_RC(cu.cuCtxSynchronize(), CUDA_SUCCESS);
    EXPECT_RC(cuCtxPopCurrent(NULL), CUDA_SUCCESS);
  }
  EXPECT_RC(cu.cuCtxSynchronize(), CUDA_SUCCESS);
  if (d1.ctx) EXPECT_RC(cuCtxDestroy(d1.ctx), CUDA_SUCCESS);
  return finish();
}
