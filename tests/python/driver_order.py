"""Ordering mistakes (AC4xx) through cuda.bindings: AC401 and AC402."""
from cudapy import *

kernel = start()
s, t = stream(), stream()
m = managed()
ok(cu.cuStreamAttachMemAsync(s, m, 0, SINGLE))
launch(kernel, s, m)
ok(cu.cuStreamAttachMemAsync(t, m, 0, SINGLE))   # AC401: s's kernel is not ordered before it
ok(cu.cuCtxSynchronize())
ok(cu.cuStreamDestroy(t))                        # AC402: m is still single-attached to t
ok(cu.cuCtxSynchronize())
