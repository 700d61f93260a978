"""Debug information is read only for findings: until the first one, libdw is
not even mapped into the program; after it, it is (AC101)."""
from cudapy import *


def mapped(name):
    return any(name in line for line in open("/proc/self/maps"))


kernel = start()
s = stream()
m = managed()
ok(cu.cuStreamAttachMemAsync(s, m, 0, SINGLE))
launch(kernel, s, m)
ok(cu.cuStreamSynchronize(s))
assert not mapped("libdw.so"), "libdw loaded before any finding"
cu.cuStreamAttachMemAsync(cu.CUstream(cu.CU_STREAM_LEGACY), m, 0, SINGLE)  # AC101
assert mapped("libdw.so"), "libdw not loaded for the finding"
ok(cu.cuCtxSynchronize())
