"""Attach mistakes (AC1xx) through cuda.bindings: AC101 and AC102."""
from cudapy import *

start()
s = stream()
m = managed()
legacy = cu.CUstream(cu.CU_STREAM_LEGACY)
cu.cuStreamAttachMemAsync(legacy, m, 0, SINGLE)   # AC101: the driver says CUDA_SUCCESS
cu.cuStreamAttachMemAsync(s, m, 4096, SINGLE)     # AC102: part of the allocation
ok(cu.cuCtxSynchronize())
