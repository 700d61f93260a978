"""CuPy with the managed-memory allocator, reading a result before its
stream is synchronised: the memory is globally attached, so AC202."""
import ctypes

import cupy as cp
import numpy as np

pool = cp.cuda.MemoryPool(cp.cuda.malloc_managed)
cp.cuda.set_allocator(pool.malloc)
s = cp.cuda.Stream(non_blocking=True)
with s:
    a = cp.arange(1 << 22, dtype=cp.int32)
    b = a * 2
view = np.ctypeslib.as_array((ctypes.c_int32 * b.size).from_address(b.data.ptr))
first = int(view[0])  # AC202: s has not been synchronised
s.synchronize()
