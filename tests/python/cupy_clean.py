"""CuPy on its own stream with the managed-memory allocator, done right: the
CPU reads the result only after synchronising. CuPy reaches the driver
through the CUDA runtime (its cuGetProcAddress door). No finding."""
import ctypes

import cupy as cp
import numpy as np

pool = cp.cuda.MemoryPool(cp.cuda.malloc_managed)
cp.cuda.set_allocator(pool.malloc)
s = cp.cuda.Stream(non_blocking=True)
with s:
    a = cp.arange(1 << 20, dtype=cp.int32)
    b = a * 2
s.synchronize()
view = np.ctypeslib.as_array((ctypes.c_int32 * b.size).from_address(b.data.ptr))
assert view[10] == 20
print("clean")
