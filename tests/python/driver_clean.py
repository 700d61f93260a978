"""The attach rules followed, through cuda.bindings: no finding."""
from cudapy import *

kernel = start()
s, t = stream(), stream()
mine = managed()
ok(cu.cuStreamAttachMemAsync(s, mine, 0, SINGLE))  # memory of stream s
ok(cu.cuStreamSynchronize(s))
cpu_write(mine, 41)
launch(kernel, s, mine)                            # used on its own stream
ok(cu.cuStreamSynchronize(s))
assert cpu_read(mine) in (41, 42)                  # after the synchronise: the CPU's turn
host = managed(flags=HOST)
cpu_write(host, 7)                                 # HOST memory: the CPU's at any time
launch(kernel, t, managed())                       # GLOBAL memory on another stream
ok(cu.cuCtxSynchronize())
ok(cu.cuStreamAttachMemAsync(t, mine, 0, SINGLE))  # re-attach after s's work is done
ok(cu.cuStreamSynchronize(t))
ok(cu.cuStreamAttachMemAsync(t, mine, 0, GLOBAL))  # and back before t goes away
ok(cu.cuStreamSynchronize(t))
for x in (s, t):
    ok(cu.cuStreamDestroy(x))
print("clean")
