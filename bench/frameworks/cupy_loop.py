"""bench/frameworks/cupy_loop.py - F2/F3: CuPy matrix and elementwise work on
managed arrays, with a fresh cudaMallocManaged per array (mode fresh) or a
memory pool over managed memory (mode pool). Prints nanoseconds per step.

usage: cupy_loop.py fresh|pool [STEPS [N]]"""
import sys
import time

import cupy as cp

mode = sys.argv[1]
steps = int(sys.argv[2]) if len(sys.argv) > 2 else 300
n = int(sys.argv[3]) if len(sys.argv) > 3 else 512
if mode == "pool":
    cp.cuda.set_allocator(cp.cuda.MemoryPool(cp.cuda.malloc_managed).malloc)
elif mode == "fresh":
    cp.cuda.set_allocator(cp.cuda.malloc_managed)
else:
    sys.exit("mode: fresh or pool")
a = cp.random.random((n, n), dtype=cp.float32)
b = cp.random.random((n, n), dtype=cp.float32)


def step():
    c = a @ b
    d = cp.tanh(c) * 0.5 + a
    return float(d[0, 0])  # the host reads one element each step


for _ in range(10):
    step()
cp.cuda.Device().synchronize()
t0 = time.perf_counter()
for _ in range(steps):
    step()
cp.cuda.Device().synchronize()
print(int((time.perf_counter() - t0) * 1e9 / steps))
