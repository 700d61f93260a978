"""Debug information is read with libdw, loaded when checking starts - before
the program's first finding, from the thread that starts the driver - so the
reporter thread never loads a library while the program may be closing every
descriptor (a daemon's close_range). A finding's stack then names its source
line (AC101)."""
from cudapy import *


def mapped(name):
    return any(name in line for line in open("/proc/self/maps"))


kernel = start()
assert mapped("libdw.so"), "libdw not loaded when checking started"
s = stream()
m = managed()
ok(cu.cuStreamAttachMemAsync(s, m, 0, SINGLE))
launch(kernel, s, m)
ok(cu.cuStreamSynchronize(s))
cu.cuStreamAttachMemAsync(cu.CUstream(cu.CU_STREAM_LEGACY), m, 0, SINGLE)  # AC101
ok(cu.cuCtxSynchronize())
