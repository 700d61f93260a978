"""A device access mistake (AC3xx) through cuda.bindings: AC301."""
from cudapy import *

kernel = start()
s, t = stream(), stream()
m = managed()
ok(cu.cuStreamAttachMemAsync(s, m, 0, SINGLE))
ok(cu.cuStreamSynchronize(s))
launch(kernel, t, m)             # AC301: m belongs to s
ok(cu.cuCtxSynchronize())
