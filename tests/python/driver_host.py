"""A CPU access mistake (AC2xx) through cuda.bindings: AC201."""
from cudapy import *

kernel = start()
s = stream()
m = managed()
ok(cu.cuStreamAttachMemAsync(s, m, 0, SINGLE))
launch(kernel, s, m)
value = cpu_read(m)              # AC201: s may still be running the kernel
ok(cu.cuStreamSynchronize(s))
