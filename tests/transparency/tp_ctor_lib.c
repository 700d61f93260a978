/* tp_ctor_lib.c - a library that reaches the driver from its constructor, as
 * libcublas does: dlopen("libcuda.so.1") and dlsym of each entry point it
 * needs, before the program's main (and possibly before attachcheck's own
 * constructor). The program then calls the driver only through these. */
#include <cuda.h>
#include <dlfcn.h>
#include <stdio.h>

#include "tp_ctor_lib.h"

struct tp_ctor_driver tp_ctor_cu;

static void *find(void *h, const char *name) {
  void *f = dlsym(h, name);
  if (!f) fprintf(stderr, "tp_ctor_lib: %s not found\n", name);
  return f;
}

__attribute__((constructor)) static void reach_driver(void) {
  void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    fprintf(stderr, "tp_ctor_lib: dlopen libcuda.so.1: %s\n", dlerror());
    return;
  }
  *(void **)&tp_ctor_cu.init = find(h, "cuInit");
  *(void **)&tp_ctor_cu.device_get = find(h, "cuDeviceGet");
  *(void **)&tp_ctor_cu.primary_retain = find(h, "cuDevicePrimaryCtxRetain");
  *(void **)&tp_ctor_cu.set_current = find(h, "cuCtxSetCurrent");
  *(void **)&tp_ctor_cu.alloc_managed = find(h, "cuMemAllocManaged");
  *(void **)&tp_ctor_cu.attach = find(h, "cuStreamAttachMemAsync");
  *(void **)&tp_ctor_cu.synchronize = find(h, "cuCtxSynchronize");
  /* libraries initialise the driver while they load, too */
  if (tp_ctor_cu.init) tp_ctor_cu.init(0);
}

int tp_ctor_ready(void) {
  return tp_ctor_cu.init && tp_ctor_cu.device_get && tp_ctor_cu.primary_retain &&
         tp_ctor_cu.set_current && tp_ctor_cu.alloc_managed && tp_ctor_cu.attach &&
         tp_ctor_cu.synchronize;
}
