/* fake_module.c - PTX modules and libraries, kernels and launches.
 *
 * cuModuleLoadData reads the PTX text far enough to know each .entry's
 * parameter layout (so cuFuncGetParamInfo answers as the real driver does)
 * and each module-scope .global variable (those with .attribute(.managed) are
 * __managed__ variables and live in managed memory). Kernels never run.
 *
 * A library (cuLibraryLoadData) is such a module; its kernels (CUkernel) are
 * handles of their own, which a launch takes in place of a function as the
 * real driver's does, while cuFuncGetParamInfo refuses them
 * (docs/driver-facts.md).
 */
#include <ctype.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fake.h"

FAKE_EXPORT CUresult cuModuleUnload(CUmodule hmod);

#define MAX_PARAMS 64
#define MAX_NAME 128

struct fake_module;

/* The first word of a function and of a kernel handle, which tells them apart. */
#define FUNCTION_MAGIC 0xf0c7f0c7u
#define KERNEL_MAGIC 0x6b4e6b4eu

struct fake_function {
  uint32_t magic; /* FUNCTION_MAGIC */
  char name[MAX_NAME];
  struct fake_module *module;
  size_t count;
  size_t offset[MAX_PARAMS], size[MAX_PARAMS];
  struct fake_function *next;
};

struct fake_global {
  char name[MAX_NAME];
  CUdeviceptr address;
  size_t size;
  bool managed;
  struct fake_global *next;
};

struct fake_module {
  struct fake_function *functions;
  struct fake_global *globals;
};

/* A library's kernel: one per function, made when it is first asked for. */
struct fake_kernel {
  uint32_t magic; /* KERNEL_MAGIC */
  struct fake_function *function;
  struct fake_library *library;
  struct fake_kernel *next;
};

struct fake_library {
  CUmodule module;
  struct fake_kernel *kernels;
};

/* Size of a PTX scalar type such as ".u64" or ".f32"; 0 if it is none. */
static size_t type_size(const char *t) {
  if (t[0] != '.' || !strchr("usbf", t[1])) return 0;
  if (strcmp(t + 2, "8") == 0) return 1;
  if (strcmp(t + 2, "16") == 0) return 2;
  if (strcmp(t + 2, "32") == 0) return 4;
  if (strcmp(t + 2, "64") == 0) return 8;
  return 0;
}

/* Splits s into whitespace/comma separated tokens (in place). */
static int tokenize(char *s, char **tok, int max) {
  int n = 0;
  for (char *p = strtok(s, " \t\r\n,"); p && n < max; p = strtok(NULL, " \t\r\n,"))
    tok[n++] = p;
  return n;
}

/* Size and alignment of one declaration: ".align 8 .b8 name[24]" or ".u64 name". */
static bool declaration_layout(char **tok, int n, size_t *size, size_t *align, char *name) {
  size_t elem = 0, count = 1;
  *align = 0;
  for (int i = 0; i < n; i++) {
    if (strcmp(tok[i], ".align") == 0 && i + 1 < n)
      *align = strtoul(tok[++i], NULL, 10);
    else if (type_size(tok[i]))
      elem = type_size(tok[i]);
    else if (tok[i][0] != '.' && tok[i][0] != '=' && elem) {
      char *bracket = strchr(tok[i], '[');
      if (bracket) {
        count = strtoul(bracket + 1, NULL, 10);
        *bracket = 0;
      }
      snprintf(name, MAX_NAME, "%s", tok[i]);
      *size = elem * (count ? count : 1);
      if (!*align) *align = elem;
      return true;
    }
  }
  return false;
}

/* Where a parameter of this alignment goes at or after offset: as an
 * address counted from byte 0x210 of a 64-byte-aligned bank (where sm_90
 * code reads its first parameter), which gives the offsets the H100's
 * driver answers - a first parameter of .align 64 at 48 (docs/driver-facts.md). */
#define PARAM_BANK_START 0x210u
static size_t param_offset(size_t offset, size_t align) {
  size_t at = PARAM_BANK_START + offset;
  return (at + align - 1) / align * align - PARAM_BANK_START;
}

static bool parse_entry(struct fake_module *m, char *decl) {
  char *open = strchr(decl, '('), *close = strrchr(decl, ')');
  char *tok[16];
  struct fake_function *f = calloc(1, sizeof *f);
  if (!f) return false;
  f->magic = FUNCTION_MAGIC;
  char *name_end = open ? open : decl + strlen(decl);
  *name_end = 0;
  int n = tokenize(decl, tok, 16);
  snprintf(f->name, sizeof f->name, "%s", n ? tok[n - 1] : "");
  if (open && close) {
    *close = 0;
    size_t offset = 0;
    for (char *param = strtok_r(open + 1, ",", &close); param && f->count < MAX_PARAMS;
         param = strtok_r(NULL, ",", &close)) {
      char copy[512], name[MAX_NAME];
      size_t size, align;
      snprintf(copy, sizeof copy, "%s", param);
      n = tokenize(copy, tok, 16);
      if (!declaration_layout(tok, n, &size, &align, name)) continue;
      offset = param_offset(offset, align);
      f->offset[f->count] = offset;
      f->size[f->count++] = size;
      offset += size;
    }
  }
  f->module = m;
  f->next = m->functions;
  m->functions = f;
  return true;
}

static bool parse_global(struct fake_module *m, char *decl) {
  bool managed = strstr(decl, ".managed") != NULL;
  char *eq = strchr(decl, '=');
  if (eq) *eq = 0;
  char *tok[16], name[MAX_NAME];
  size_t size, align;
  int n = tokenize(decl, tok, 16);
  if (!declaration_layout(tok, n, &size, &align, name)) return true;
  struct fake_global *g = calloc(1, sizeof *g);
  if (!g) return false;
  snprintf(g->name, sizeof g->name, "%s", name);
  g->size = size;
  g->managed = managed;
  CUresult r;
  if (managed) {
    pthread_mutex_lock(&fake_lock);
    r = fake_alloc_managed(&g->address, size, CU_MEM_ATTACH_GLOBAL);
    pthread_mutex_unlock(&fake_lock);
  } else {
    r = cuMemAlloc_v2(&g->address, size);
  }
  if (r != CUDA_SUCCESS) {
    free(g);
    return false;
  }
  g->next = m->globals;
  m->globals = g;
  return true;
}

static bool is_directive(const char *decl, const char *word) {
  const char *p = strstr(decl, word);
  size_t len = strlen(word);
  return p && (p == decl || isspace((unsigned char)p[-1])) &&
         (isspace((unsigned char)p[len]) || p[len] == 0);
}

/* Walks the module-scope statements (ended by ';' or '{', outside braces). */
static bool parse_ptx(struct fake_module *m, const char *ptx) {
  size_t len = strlen(ptx);
  char *decl = malloc(len + 1);
  if (!decl) return false;
  int depth = 0;
  size_t n = 0;
  bool ok = true;
  for (const char *p = ptx; *p && ok; p++) {
    if (p[0] == '/' && p[1] == '/') {
      while (*p && *p != '\n')
        p++;
      if (!*p) break;
      continue;
    }
    if (*p == '}') depth--;
    if (depth > 0) {
      if (*p == '{') depth++;
      continue;
    }
    if (*p == ';' || *p == '{') {
      decl[n] = 0;
      if (is_directive(decl, ".entry"))
        ok = parse_entry(m, decl);
      else if (is_directive(decl, ".global"))
        ok = parse_global(m, decl);
      n = 0;
      if (*p == '{') depth++;
      continue;
    }
    if (*p != '}') decl[n++] = *p;
  }
  free(decl);
  return ok;
}

FAKE_EXPORT CUresult cuModuleLoadData(CUmodule *module, const void *image) {
  if (!fake_initialized) return CUDA_ERROR_NOT_INITIALIZED;
  if (!module || !image) return CUDA_ERROR_INVALID_VALUE;
  if (!strstr(image, ".version") || !strstr(image, ".target")) return CUDA_ERROR_INVALID_IMAGE;
  struct fake_module *m = calloc(1, sizeof *m);
  if (!m) return CUDA_ERROR_OUT_OF_MEMORY;
  if (!parse_ptx(m, image)) {
    cuModuleUnload((CUmodule)m);
    return CUDA_ERROR_INVALID_IMAGE;
  }
  *module = (CUmodule)m;
  return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult cuModuleGetFunction(CUfunction *hfunc, CUmodule hmod, const char *name) {
  if (!hfunc || !hmod || !name) return CUDA_ERROR_INVALID_VALUE;
  for (struct fake_function *f = ((struct fake_module *)hmod)->functions; f; f = f->next)
    if (strcmp(f->name, name) == 0) {
      *hfunc = (CUfunction)f;
      return CUDA_SUCCESS;
    }
  return CUDA_ERROR_NOT_FOUND;
}

static const struct fake_global *global_named(const struct fake_module *m, const char *name) {
  for (const struct fake_global *g = m->globals; g; g = g->next)
    if (strcmp(g->name, name) == 0) return g;
  return NULL;
}

/* A variable lookup's answer: g's address and size, or NOT_FOUND. */
static CUresult answer_global(const struct fake_global *g, CUdeviceptr *dptr, size_t *bytes) {
  if (!g) return CUDA_ERROR_NOT_FOUND;
  if (dptr) *dptr = g->address;
  if (bytes) *bytes = g->size;
  return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult cuModuleGetGlobal_v2(CUdeviceptr *dptr, size_t *bytes, CUmodule hmod,
                                          const char *name) {
  if (!hmod || !name) return CUDA_ERROR_INVALID_VALUE;
  return answer_global(global_named((struct fake_module *)hmod, name), dptr, bytes);
}

FAKE_EXPORT CUresult cuModuleUnload(CUmodule hmod) {
  if (!hmod) return CUDA_ERROR_INVALID_HANDLE;
  struct fake_module *m = (struct fake_module *)hmod;
  while (m->functions) {
    struct fake_function *f = m->functions;
    m->functions = f->next;
    free(f);
  }
  while (m->globals) {
    struct fake_global *g = m->globals;
    m->globals = g->next;
    fake_free_internal(g->address);
    free(g);
  }
  free(m);
  return CUDA_SUCCESS;
}

/* The function behind a handle a launch takes: a function, or a library's
 * kernel in its place. */
static struct fake_function *function_of(CUfunction f) {
  if (!f) return NULL;
  if (*(const uint32_t *)f == KERNEL_MAGIC) return ((struct fake_kernel *)f)->function;
  return *(const uint32_t *)f == FUNCTION_MAGIC ? (struct fake_function *)f : NULL;
}

static CUresult param_info(const struct fake_function *f, size_t index, size_t *offset,
                           size_t *size) {
  if (index >= f->count) return CUDA_ERROR_INVALID_VALUE;
  if (offset) *offset = f->offset[index];
  if (size) *size = f->size[index];
  return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult cuFuncGetParamInfo(CUfunction func, size_t index, size_t *offset,
                                        size_t *size) {
  /* FAKECUDA_NO_PARAM_INFO=1 plays a driver older than the API (12.4). */
  const char *old = getenv("FAKECUDA_NO_PARAM_INFO");
  if (old && *old == '1') return CUDA_ERROR_NOT_SUPPORTED;
  if (!func || *(const uint32_t *)func != FUNCTION_MAGIC) return CUDA_ERROR_INVALID_HANDLE;
  return param_info((struct fake_function *)func, index, offset, size);
}

bool fake_function_layout(CUfunction f, size_t *count, const size_t **sizes) {
  struct fake_function *fn = function_of(f);
  if (!fn) return false;
  *count = fn->count;
  *sizes = fn->size;
  return true;
}

static CUresult launch_with(CUfunction f, CUstream h, bool pt, void **params) {
  if (!fake_initialized) return CUDA_ERROR_NOT_INITIALIZED;
  struct fake_function *fn = function_of(f);
  if (!fn) return CUDA_ERROR_INVALID_HANDLE;
  if (fake_capture_kernel(h, pt, f, params, fn->count, fn->size)) return CUDA_SUCCESS;
  /* A Jetson's GPU owns the memory the stream may use from a launch until the
   * host synchronises, though the kernel here completes at once. */
  return fake_enqueue_kernel(h, pt);
}

FAKE_EXPORT CUresult cuLaunchKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz,
                                    unsigned bx, unsigned by, unsigned bz, unsigned shmem,
                                    CUstream h, void **params, void **extra) {
  (void)gx, (void)gy, (void)gz, (void)bx, (void)by, (void)bz, (void)shmem, (void)extra;
  return launch_with(f, h, false, params);
}

FAKE_EXPORT CUresult cuLaunchKernel_ptsz(CUfunction f, unsigned gx, unsigned gy, unsigned gz,
                                         unsigned bx, unsigned by, unsigned bz, unsigned shmem,
                                         CUstream h, void **params, void **extra) {
  (void)gx, (void)gy, (void)gz, (void)bx, (void)by, (void)bz, (void)shmem, (void)extra;
  return launch_with(f, h, true, params);
}

FAKE_EXPORT CUresult cuFuncGetModule(CUmodule *hmod, CUfunction func) {
  if (!hmod || !func) return CUDA_ERROR_INVALID_VALUE;
  *hmod = (CUmodule)((struct fake_function *)func)->module;
  return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult cuFuncGetName(const char **name, CUfunction func) {
  if (!name || !func) return CUDA_ERROR_INVALID_VALUE;
  *name = ((struct fake_function *)func)->name;
  return CUDA_SUCCESS;
}

/* A launch with attributes: those that record events record them once the
 * kernel is enqueued (fake_stream.c). */
static CUresult launch_ex(const CUlaunchConfig *config, CUfunction f, void **params, bool pt) {
  if (!config || !fake_launch_events_valid(config)) return CUDA_ERROR_INVALID_VALUE;
  CUresult r = launch_with(f, config->hStream, pt, params);
  if (r == CUDA_SUCCESS) fake_launch_events_record(config, pt);
  return r;
}

FAKE_EXPORT CUresult cuLaunchKernelEx(const CUlaunchConfig *config, CUfunction f, void **params,
                                      void **extra) {
  (void)extra;
  return launch_ex(config, f, params, false);
}

FAKE_EXPORT CUresult cuLaunchKernelEx_ptsz(const CUlaunchConfig *config, CUfunction f,
                                           void **params, void **extra) {
  (void)extra;
  return launch_ex(config, f, params, true);
}

/* ---- libraries ---- */

/* The real driver JIT-compiles PTX given to cuLibraryLoadData as it does for
 * cuModuleLoadData; options are not looked at. */
FAKE_EXPORT CUresult cuLibraryLoadData(CUlibrary *library, const void *code,
                                       CUjit_option *jit_options, void **jit_values,
                                       unsigned jit_count, CUlibraryOption *options,
                                       void **option_values, unsigned option_count) {
  (void)jit_options, (void)jit_values, (void)jit_count;
  (void)options, (void)option_values, (void)option_count;
  if (!library) return CUDA_ERROR_INVALID_VALUE;
  struct fake_library *l = calloc(1, sizeof *l);
  if (!l) return CUDA_ERROR_OUT_OF_MEMORY;
  CUresult r = cuModuleLoadData(&l->module, code);
  if (r != CUDA_SUCCESS) {
    free(l);
    return r;
  }
  *library = (CUlibrary)l;
  return CUDA_SUCCESS;
}

/* Its variables end with it: their addresses are no longer managed memory. */
FAKE_EXPORT CUresult cuLibraryUnload(CUlibrary library) {
  if (!library) return CUDA_ERROR_INVALID_HANDLE;
  struct fake_library *l = (struct fake_library *)library;
  while (l->kernels) {
    struct fake_kernel *k = l->kernels;
    l->kernels = k->next;
    free(k);
  }
  cuModuleUnload(l->module);
  free(l);
  return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult cuLibraryGetKernel(CUkernel *kernel, CUlibrary library, const char *name) {
  if (!kernel || !name) return CUDA_ERROR_INVALID_VALUE;
  if (!library) return CUDA_ERROR_INVALID_HANDLE;
  struct fake_library *l = (struct fake_library *)library;
  CUfunction f;
  CUresult r = cuModuleGetFunction(&f, l->module, name);
  if (r != CUDA_SUCCESS) return r;
  struct fake_kernel *k = l->kernels;
  while (k && k->function != (struct fake_function *)f)
    k = k->next;
  if (!k) {
    k = calloc(1, sizeof *k);
    if (!k) return CUDA_ERROR_OUT_OF_MEMORY;
    *k = (struct fake_kernel){KERNEL_MAGIC, (struct fake_function *)f, l, l->kernels};
    l->kernels = k;
  }
  *kernel = (CUkernel)k;
  return CUDA_SUCCESS;
}

/* A library's variable; managed_only: cuLibraryGetManaged, which does not
 * find the others. */
static CUresult library_variable(CUdeviceptr *dptr, size_t *bytes, CUlibrary library,
                                 const char *name, bool managed_only) {
  if (!library) return CUDA_ERROR_INVALID_HANDLE;
  if (!name) return CUDA_ERROR_INVALID_VALUE;
  const struct fake_global *g =
      global_named((struct fake_module *)((struct fake_library *)library)->module, name);
  return answer_global(g && (g->managed || !managed_only) ? g : NULL, dptr, bytes);
}

FAKE_EXPORT CUresult cuLibraryGetGlobal(CUdeviceptr *dptr, size_t *bytes, CUlibrary library,
                                        const char *name) {
  return library_variable(dptr, bytes, library, name, false);
}

FAKE_EXPORT CUresult cuLibraryGetManaged(CUdeviceptr *dptr, size_t *bytes, CUlibrary library,
                                         const char *name) {
  return library_variable(dptr, bytes, library, name, true);
}

static struct fake_kernel *kernel_of(CUkernel kernel) {
  return kernel && *(const uint32_t *)kernel == KERNEL_MAGIC ? (struct fake_kernel *)kernel : NULL;
}

FAKE_EXPORT CUresult cuKernelGetFunction(CUfunction *func, CUkernel kernel) {
  struct fake_kernel *k = kernel_of(kernel);
  if (!func) return CUDA_ERROR_INVALID_VALUE;
  if (!k) return CUDA_ERROR_INVALID_HANDLE;
  *func = (CUfunction)k->function;
  return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult cuKernelGetLibrary(CUlibrary *library, CUkernel kernel) {
  struct fake_kernel *k = kernel_of(kernel);
  if (!library) return CUDA_ERROR_INVALID_VALUE;
  if (!k) return CUDA_ERROR_INVALID_HANDLE;
  *library = (CUlibrary)k->library;
  return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult cuKernelGetParamInfo(CUkernel kernel, size_t index, size_t *offset,
                                          size_t *size) {
  struct fake_kernel *k = kernel_of(kernel);
  if (!k) return CUDA_ERROR_INVALID_HANDLE;
  return param_info(k->function, index, offset, size);
}

/* ---- tensor maps ----
 * A kernel takes one by value (a 128-byte parameter); the real driver keeps
 * the global address in its first eight bytes, as the stand-in does, so a
 * launch's arguments name it (docs/driver-facts.md). The address must be
 * 16-byte aligned; NULL is accepted. The rest of the stand-in's descriptor
 * is zero. */

static CUresult encode_map(CUtensorMap *map, void *address) {
  if (!map || (uintptr_t)address % 16) return CUDA_ERROR_INVALID_VALUE;
  memset(map, 0, sizeof *map);
  uint64_t a = (uintptr_t)address;
  memcpy(map, &a, sizeof a);
  return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult cuTensorMapEncodeTiled(
    CUtensorMap *map, CUtensorMapDataType type, cuuint32_t rank, void *address,
    const cuuint64_t *dims, const cuuint64_t *strides, const cuuint32_t *box,
    const cuuint32_t *element_strides, CUtensorMapInterleave interleave, CUtensorMapSwizzle swizzle,
    CUtensorMapL2promotion promotion, CUtensorMapFloatOOBfill fill) {
  (void)type, (void)rank, (void)dims, (void)strides, (void)box, (void)element_strides;
  (void)interleave, (void)swizzle, (void)promotion, (void)fill;
  return encode_map(map, address);
}

FAKE_EXPORT CUresult cuTensorMapEncodeIm2col(
    CUtensorMap *map, CUtensorMapDataType type, cuuint32_t rank, void *address,
    const cuuint64_t *dims, const cuuint64_t *strides, const int *lower, const int *upper,
    cuuint32_t channels, cuuint32_t pixels, const cuuint32_t *element_strides,
    CUtensorMapInterleave interleave, CUtensorMapSwizzle swizzle, CUtensorMapL2promotion promotion,
    CUtensorMapFloatOOBfill fill) {
  (void)type, (void)rank, (void)dims, (void)strides, (void)lower, (void)upper, (void)channels;
  (void)pixels, (void)element_strides, (void)interleave, (void)swizzle, (void)promotion, (void)fill;
  return encode_map(map, address);
}

FAKE_EXPORT CUresult cuTensorMapEncodeIm2colWide(
    CUtensorMap *map, CUtensorMapDataType type, cuuint32_t rank, void *address,
    const cuuint64_t *dims, const cuuint64_t *strides, int lower, int upper, cuuint32_t channels,
    cuuint32_t pixels, const cuuint32_t *element_strides, CUtensorMapInterleave interleave,
    CUtensorMapIm2ColWideMode mode, CUtensorMapSwizzle swizzle, CUtensorMapL2promotion promotion,
    CUtensorMapFloatOOBfill fill) {
  (void)type, (void)rank, (void)dims, (void)strides, (void)lower, (void)upper, (void)channels;
  (void)pixels, (void)element_strides, (void)interleave, (void)mode, (void)swizzle;
  (void)promotion, (void)fill;
  return encode_map(map, address);
}

FAKE_EXPORT CUresult cuTensorMapReplaceAddress(CUtensorMap *map, void *address) {
  if (!map || (uintptr_t)address % 16) return CUDA_ERROR_INVALID_VALUE;
  uint64_t a = (uintptr_t)address;
  memcpy(map, &a, sizeof a);
  return CUDA_SUCCESS;
}
