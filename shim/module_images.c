/* module_images.c - kernel parameter layouts from the images a program loads,
 * for drivers that cannot tell them (no cuFuncGetParamInfo and no
 * cuKernelGetParamInfo: every driver before 12.4, so JetPack 5 and 6).
 *
 * Only over such a driver: each image given to cuModuleLoadData(Ex) or
 * cuLibraryLoadData is read once (kernel_image.c: PTX text, an ELF cubin, or
 * a fatbin's first uncompressed one of those) into its kernels' layouts, kept per module; the
 * handle cuModuleGetFunction or cuLibraryGetKernel gives is tied to its
 * module and name. kernel_args.c asks here when it learns a layout. With the
 * parameter-info API present nothing is kept: the driver's answer is exact
 * for every image kind, and reading images would cost every program.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uthash.h>

#include "kernel_image.h"
#include "shim.h"

struct image_kernel {
  struct ac_image_kernel k;
  struct image_kernel *next;
};

struct image_module {
  uintptr_t module;
  struct image_kernel *kernels;
  UT_hash_handle hh;
};

struct image_function {
  uintptr_t handle, module;
  char name[AC_IMAGE_MAX_NAME];
  UT_hash_handle hh;
};

static struct image_module *image_modules;     /* under image_lock */
static struct image_function *image_functions; /* under image_lock */

bool ac_images_wanted(void) {
  return !ac_real.cuFuncGetParamInfo && !ac_real.cuKernelGetParamInfo;
}

static void keep_kernel(void *ctx, const struct ac_image_kernel *k) {
  struct image_module *m = ctx;
  if (k->count < 0) return; /* unreadable: unknown, never guessed */
  struct image_kernel *ik = malloc(sizeof *ik);
  if (!ik) return;
  ik->k = *k;
  ik->next = m->kernels;
  m->kernels = ik;
}

static void free_module(struct image_module *m) {
  while (m->kernels) {
    struct image_kernel *k = m->kernels;
    m->kernels = k->next;
    free(k);
  }
  free(m);
}

/* Unlinks module's kernels and the handles tied to it (image_lock held). */
static void drop_module_locked(uintptr_t module) {
  struct image_module *m;
  HASH_FIND(hh, image_modules, &module, sizeof module, m);
  if (m) {
    HASH_DEL(image_modules, m);
    free_module(m);
  }
  struct image_function *f, *tmp;
  HASH_ITER(hh, image_functions, f, tmp) {
    if (f->module != module) continue;
    HASH_DEL(image_functions, f);
    free(f);
  }
}

void ac_image_loaded(uintptr_t module, const void *image) {
  if (!module || !ac_images_wanted()) return;
  struct image_module *m = calloc(1, sizeof *m);
  if (!m) return;
  m->module = module;
  if (ac_image_kernels(image, keep_kernel, m) < 0) {
    static int told;
    if (!__atomic_exchange_n(&told, 1, __ATOMIC_RELAXED))
      ac_log("a module image holds no PTX or cubin that can be read (a compressed fatbin?): "
             "its kernels' parameter layouts are not known");
  }
  ac_lock(AC_LOCK_image);
  drop_module_locked(module); /* the handle may have named an unloaded module */
  HASH_ADD(hh, image_modules, module, sizeof m->module, m);
  ac_unlock(AC_LOCK_image);
}

void ac_image_function_found(uintptr_t handle, uintptr_t module, const char *name) {
  if (!handle || !name || !ac_images_wanted()) return;
  struct image_function *f;
  ac_lock(AC_LOCK_image);
  HASH_FIND(hh, image_functions, &handle, sizeof handle, f);
  if (!f && (f = calloc(1, sizeof *f))) {
    f->handle = handle;
    HASH_ADD(hh, image_functions, handle, sizeof f->handle, f);
  }
  if (f) {
    f->module = module;
    snprintf(f->name, sizeof f->name, "%s", name);
  }
  ac_unlock(AC_LOCK_image);
}

bool ac_image_layout(uintptr_t handle, struct ac_image_kernel *out, uintptr_t *module) {
  bool found = false;
  struct image_function *f;
  struct image_module *m = NULL;
  ac_lock(AC_LOCK_image);
  HASH_FIND(hh, image_functions, &handle, sizeof handle, f);
  if (f) HASH_FIND(hh, image_modules, &f->module, sizeof f->module, m);
  for (struct image_kernel *k = m ? m->kernels : NULL; k && !found; k = k->next)
    if (strcmp(k->k.name, f->name) == 0) {
      *out = k->k;
      *module = f->module;
      found = true;
    }
  ac_unlock(AC_LOCK_image);
  return found;
}

void ac_image_module_unloaded(uintptr_t module) {
  ac_lock(AC_LOCK_image);
  drop_module_locked(module);
  ac_unlock(AC_LOCK_image);
}
