/* tp_ctor_lib.h - the driver entry points tp_ctor_lib.c found in its constructor. */
#ifndef TP_CTOR_LIB_H
#define TP_CTOR_LIB_H

#include <cuda.h>

struct tp_ctor_driver {
  CUresult (*init)(unsigned);
  CUresult (*device_get)(CUdevice *, int);
  CUresult (*primary_retain)(CUcontext *, CUdevice);
  CUresult (*set_current)(CUcontext);
  CUresult (*alloc_managed)(CUdeviceptr *, size_t, unsigned);
  CUresult (*attach)(CUstream, CUdeviceptr, size_t, unsigned);
  CUresult (*synchronize)(void);
};

extern struct tp_ctor_driver tp_ctor_cu;

/* 1 when every entry point was found. */
int tp_ctor_ready(void);

#endif
