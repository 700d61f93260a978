/* scenario.h - what the scenario programs share.
 *
 * A scenario is a driver-API program that makes calls with known answers:
 * every call's result is checked against docs/driver-facts.md (EXPECT_RC), so the
 * same program, run over the stand-in driver in CI and over the real driver
 * on the GPU, shows that the two agree, while the runner (run.py) checks the
 * findings attachcheck reports against expectations.txt.
 *
 * The driver is reached through the door named on the command line, so one
 * case can be run through each of them:
 *   link    the program's own link to libcuda.so.1
 *   dlsym   dlopen("libcuda.so.1") and dlsym per name
 *   gpa     dlsym "cuGetProcAddress_v2", look up "cuGetProcAddress" through it
 *           (at 12000, as the runtime does) and resolve everything through that
 *   gpa11   the same with the 4-argument resolver of cudaVersion 11030
 *   ptsz    like gpa, with CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM
 */
#ifndef SCENARIO_H
#define SCENARIO_H

#include <cuda.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

// clang-format off
#define DRIVER_FUNCTIONS(X)                                                                        \
  X(cuInit) X(cuDeviceGet) X(cuDevicePrimaryCtxRetain) X(cuCtxSetCurrent)                          \
  X(cuMemAllocManaged) X(cuMemAlloc) X(cuMemHostAlloc) X(cuMemFree) X(cuMemFreeHost)               \
  X(cuStreamCreate) X(cuStreamDestroy) X(cuStreamAttachMemAsync) X(cuStreamSynchronize)            \
  X(cuStreamBeginCapture) X(cuStreamEndCapture) X(cuGetErrorName) X(cuModuleLoadData)              \
  X(cuModuleGetGlobal) X(cuCtxSynchronize) X(cuModuleGetFunction) X(cuLaunchKernel)              \
  X(cuStreamQuery) X(cuEventCreate) X(cuEventRecord) X(cuEventSynchronize) X(cuStreamWaitEvent)    \
  X(cuLaunchHostFunc) X(cuMemcpyHtoD) X(cuEventDestroy) X(cuCtxGetCurrent)             \
  X(cuLaunchKernelEx) X(cuMemcpyAsync)
// clang-format on

struct driver {
#define FIELD(Name) __typeof__(&Name) Name;
  DRIVER_FUNCTIONS(FIELD)
#undef FIELD
};

static struct driver cu;
static int failures;

/* The API version each name is asked for, as the runtime asks (cudaVersion). */
static int version_of(const char *name) {
  if (strcmp(name, "cuStreamBeginCapture") == 0) return 10010;
  return 12000;
}

static void load_by_link(void) {
#define LINKED(Name) cu.Name = &Name;
  DRIVER_FUNCTIONS(LINKED)
#undef LINKED
}

static void *open_driver(void) {
  void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!h) fprintf(stderr, "scenario: dlopen libcuda.so.1: %s\n", dlerror()), exit(2);
  return h;
}

static void load_by_dlsym(void) {
  void *h = open_driver();
  /* The exported names behind cuda.h's macros (cuMemFree is cuMemFree_v2...). */
#define STR2(x) #x
#define STR(x) STR2(x)
#define LOOKED_UP(Name) *(void **)&cu.Name = dlsym(h, STR(Name));
  DRIVER_FUNCTIONS(LOOKED_UP)
#undef LOOKED_UP
}

static void load_by_proc_address(int resolver_version, cuuint64_t flags) {
  void *h = open_driver();
  __typeof__(&cuGetProcAddress_v2) gpa2 = (__typeof__(gpa2))dlsym(h, "cuGetProcAddress_v2");
  void *resolver = NULL;
  CUdriverProcAddressQueryResult status;
  if (!gpa2 && resolver_version < 12000) {
    /* A driver before 12.0 has only the 4-argument form: an 11.x runtime
     * finds it with dlsym and asks it for itself. */
    CUresult (*gpa1)(const char *, void **, int, cuuint64_t) =
        (CUresult(*)(const char *, void **, int, cuuint64_t))dlsym(h, "cuGetProcAddress");
    if (!gpa1 || gpa1("cuGetProcAddress", &resolver, resolver_version, 0) != CUDA_SUCCESS)
      fprintf(stderr, "scenario: cannot look up cuGetProcAddress\n"), exit(2);
  } else if (!gpa2 ||
             gpa2("cuGetProcAddress", &resolver, resolver_version, 0, &status) != CUDA_SUCCESS) {
    fprintf(stderr, "scenario: cannot look up cuGetProcAddress\n"), exit(2);
  }
#define RESOLVED(Name)                                                                             \
  if (resolver_version >= 12000)                                                                   \
    ((__typeof__(&cuGetProcAddress_v2))resolver)(#Name, (void **)&cu.Name, version_of(#Name),      \
                                                 flags, &status);                                  \
  else                                                                                             \
    ((CUresult(*)(const char *, void **, int, cuuint64_t))resolver)(#Name, (void **)&cu.Name,      \
                                                                    version_of(#Name), flags);
  DRIVER_FUNCTIONS(RESOLVED)
#undef RESOLVED
}

/* Names a driver before 12.0 (JetPack 5's 11.4) does not have: a case that
 * needs one finds it missing when it calls it. */
static int newer_than_11_4(const char *name) {
  return strcmp(name, "cuLaunchKernelEx") == 0;
}

static void load_driver(const char *door) {
  if (strcmp(door, "link") == 0)
    load_by_link();
  else if (strcmp(door, "dlsym") == 0)
    load_by_dlsym();
  else if (strcmp(door, "gpa") == 0)
    load_by_proc_address(12000, 0);
  else if (strcmp(door, "gpa11") == 0)
    load_by_proc_address(11030, 0);
  else if (strcmp(door, "ptsz") == 0)
    load_by_proc_address(12000, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM);
  else
    fprintf(stderr, "scenario: unknown door %s\n", door), exit(2);
#define PRESENT(Name)                                                                              \
  if (!cu.Name && !newer_than_11_4(#Name))                                                         \
    fprintf(stderr, "scenario: %s not found through %s\n", #Name, door), exit(2);
  DRIVER_FUNCTIONS(PRESENT)
#undef PRESENT
}

static const char *rc_name(CUresult r) {
  const char *n = NULL;
  return cu.cuGetErrorName && cu.cuGetErrorName(r, &n) == CUDA_SUCCESS && n ? n : "?";
}

#define EXPECT_RC(call, want)                                                                      \
  do {                                                                                             \
    CUresult got_ = (call);                                                                        \
    if (got_ != (want)) {                                                                          \
      failures++;                                                                                  \
      fprintf(stderr, "scenario: %s:%d: %s returned %s, expected %s\n", __FILE__, __LINE__, #call, \
              rc_name(got_), rc_name(want));                                                       \
    }                                                                                              \
  } while (0)

/* cuInit, device 0, its primary context made current. */
static void start_cuda(const char *door) {
  CUdevice dev;
  CUcontext ctx;
  load_driver(door);
  EXPECT_RC(cu.cuInit(0), CUDA_SUCCESS);
  EXPECT_RC(cu.cuDeviceGet(&dev, 0), CUDA_SUCCESS);
  EXPECT_RC(cu.cuDevicePrimaryCtxRetain(&ctx, dev), CUDA_SUCCESS);
  EXPECT_RC(cu.cuCtxSetCurrent(ctx), CUDA_SUCCESS);
  if (failures) exit(2);
}

/* One launch of f whose only argument is the pointer p. */
static __attribute__((unused)) void launch_with_pointer(CUfunction f, CUstream stream,
                                                        CUdeviceptr p) {
  void *args[] = {&p};
  EXPECT_RC(cu.cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, stream, args, NULL), CUDA_SUCCESS);
}

/* The configuration of a cuLaunchKernelEx of one block of 32 threads on stream. */
static __attribute__((unused)) CUlaunchConfig one_block_on(CUstream stream) {
  CUlaunchConfig config;
  memset(&config, 0, sizeof config);
  config.gridDimX = config.gridDimY = config.gridDimZ = 1;
  config.blockDimX = 32;
  config.blockDimY = config.blockDimZ = 1;
  config.hStream = stream;
  return config;
}

/* Attaches p to stream and waits until the attach is complete. */
static __attribute__((unused)) void attach_sync(CUstream stream, CUdeviceptr p, unsigned flags) {
  EXPECT_RC(cu.cuStreamAttachMemAsync(stream, p, 0, flags), CUDA_SUCCESS);
  EXPECT_RC(cu.cuStreamSynchronize(stream), CUDA_SUCCESS);
}

/* A kernel node of f, one block of 32 threads, given args. */
static __attribute__((unused)) CUDA_KERNEL_NODE_PARAMS one_block_node(CUfunction f, void **args) {
  CUDA_KERNEL_NODE_PARAMS k;
  memset(&k, 0, sizeof k);
  k.func = f;
  k.gridDimX = k.gridDimY = k.gridDimZ = 1;
  k.blockDimX = 32;
  k.blockDimY = k.blockDimZ = 1;
  k.kernelParams = args;
  return k;
}

/* One named case of a scenario program. */
struct scenario_case {
  const char *name;
  void (*run)(void);
};

/* The case called name, or NULL after saying so. */
static __attribute__((unused)) const struct scenario_case *
find_case(const struct scenario_case *cases, size_t n, const char *prog, const char *name) {
  for (size_t i = 0; i < n; i++)
    if (strcmp(cases[i].name, name) == 0) return &cases[i];
  fprintf(stderr, "%s: unknown case %s\n", prog, name);
  return NULL;
}

/* The case named by the only argument of a program run as PROG CASE, or NULL
 * after saying why. */
static __attribute__((unused)) const struct scenario_case *
case_from_args(const struct scenario_case *cases, size_t n, int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s CASE\n", argv[0]);
    return NULL;
  }
  return find_case(cases, n, argv[0], argv[1]);
}
#define CASE_FROM_ARGS(Cases, Argc, Argv)                                                          \
  case_from_args(Cases, sizeof Cases / sizeof Cases[0], Argc, Argv)

static int finish(void) {
  if (failures) fprintf(stderr, "scenario: %d unexpected result(s)\n", failures);
  return failures ? 1 : 0;
}

#endif
