/* tp_ctor.c - a program that uses only the driver entry points a library
 * looked up in its constructor (tp_ctor_lib.c), before main.
 *
 *   tp_ctor legacy_single   single-attach to CU_STREAM_LEGACY: AC101
 *   tp_ctor global_attach   a correct attach: no finding
 */
#include <stdio.h>
#include <string.h>

#include "tp_ctor_lib.h"

static void run(unsigned flags, CUstream stream) {
  CUdevice dev;
  CUcontext ctx;
  CUdeviceptr m;
  printf("cuInit %d\n", tp_ctor_cu.init(0));
  printf("cuDeviceGet %d\n", tp_ctor_cu.device_get(&dev, 0));
  printf("cuDevicePrimaryCtxRetain %d\n", tp_ctor_cu.primary_retain(&ctx, dev));
  printf("cuCtxSetCurrent %d\n", tp_ctor_cu.set_current(ctx));
  printf("cuMemAllocManaged %d\n", tp_ctor_cu.alloc_managed(&m, 1 << 20, CU_MEM_ATTACH_GLOBAL));
  printf("cuStreamAttachMemAsync %d\n", tp_ctor_cu.attach(stream, m, 0, flags));
  printf("cuCtxSynchronize %d\n", tp_ctor_cu.synchronize());
}

int main(int argc, char **argv) {
  if (!tp_ctor_ready()) return fprintf(stderr, "tp_ctor: the library found no driver\n"), 2;
  if (argc == 2 && strcmp(argv[1], "legacy_single") == 0)
    run(CU_MEM_ATTACH_SINGLE, CU_STREAM_LEGACY);
  else if (argc == 2 && strcmp(argv[1], "global_attach") == 0)
    run(CU_MEM_ATTACH_GLOBAL, CU_STREAM_LEGACY);
  else
    return fprintf(stderr, "usage: %s legacy_single|global_attach\n", argv[0]), 2;
  return 0;
}
