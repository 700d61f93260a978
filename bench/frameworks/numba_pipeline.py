"""bench/frameworks/numba_pipeline.py - F4: a Numba pipeline on managed arrays:
two kernels per step on a stream, a synchronisation, and the host reading and
writing the arrays between steps, as a simulation's host-side logic does.
Prints nanoseconds per step.

usage: numba_pipeline.py [STEPS [N]]"""
import sys
import time

import numpy as np

# This numba-cuda names np.row_stack, which the NumPy installed beside it
# removed (np.vstack is the same function): without it numba's first kernel
# compilation fails.
if not hasattr(np, "row_stack"):
    np.row_stack = np.vstack

from numba import cuda  # noqa: E402

steps = int(sys.argv[1]) if len(sys.argv) > 1 else 500
n = int(sys.argv[2]) if len(sys.argv) > 2 else 1 << 16


@cuda.jit
def scale(a, f):
    i = cuda.grid(1)
    if i < a.size:
        a[i] *= f


@cuda.jit
def add(a, b):
    i = cuda.grid(1)
    if i < a.size:
        a[i] += b[i]


a = cuda.managed_array(n, dtype=np.float32)
b = cuda.managed_array(n, dtype=np.float32)
a[:] = 1.0
b[:] = 0.5
stream = cuda.stream()
blocks = (n + 255) // 256


def step(k):
    scale[blocks, 256, stream](a, 0.999)
    add[blocks, 256, stream](a, b)
    stream.synchronize()
    b[k % n] = a[(k * 7) % n]  # the host's logic between steps


for k in range(10):
    step(k)
t0 = time.perf_counter()
for k in range(steps):
    step(k)
print(int((time.perf_counter() - t0) * 1e9 / steps))
