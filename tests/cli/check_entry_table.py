#!/usr/bin/env python3
"""The wrapped rows of the driver table (shim/driver_api.inc) against two
references: every name is a real export of libcuda.so.1 (the toolkit's stub
lists them all), and the shim exports exactly those names plus its libc
interceptors - nothing more leaks out."""
import os
import re
import subprocess
import sys

table, shim, stub = sys.argv[1:4]


def exports(lib):
    out = subprocess.run(["nm", "-D", "--defined-only", lib], capture_output=True, text=True,
                         check=True).stdout
    return {line.split()[-1].split("@")[0] for line in out.splitlines() if line.strip()}


text = re.sub(r"/\*.*?\*/", "", open(table).read(), flags=re.S)
names = re.findall(r"^AC_WRAPPED\(\s*(\w+)", text, flags=re.M)
failed = 0
if len(names) != len(set(names)):
    print("duplicate rows:", sorted({n for n in names if names.count(n) > 1}))
    failed += 1
missing = sorted(set(names) - exports(stub))
if missing:
    print("not exported by the driver:", missing)
    failed += 1
shim_exports = exports(shim)
with open(os.path.join(os.path.dirname(table), "libc_interceptors.inc")) as f:
    LIBC = set(re.findall(r"^AC_LIBC\((\w+)\)", f.read(), re.M))
if shim_exports != set(names) | LIBC:
    print("shim exports differ from the table and the libc interceptors:",
          sorted(shim_exports ^ (set(names) | LIBC)))
    failed += 1
print(f"entry table ({len(names)} wrapped rows): {3 - failed} passed, {failed} failed")
sys.exit(1 if failed else 0)
