#!/usr/bin/env python3
"""The Python wheel: tools/wheel.sh makes it from the build (manylinux-tagged by auditwheel where
.pydeps/ has it); it holds the CLI, the shim and its private libraries, the licence, and the
version of CMakeLists.txt; pip installs it into a fresh virtual environment with no compiler
to be found; and the installed `attachcheck` command checks the demo over the stand-in driver,
with source lines (libdw from inside the wheel). The virtual environment stays in
BUILD/wheel-test/venv for python.clients_wheel, which runs the Python clients through it."""
import json
import os
import re
import shutil
import subprocess
import zipfile

from harness import BUILD, DEMO, ENV, SOURCE, check, finish, run

HERE_OUT = os.path.join(BUILD, "wheel-test")
VENV = os.path.join(HERE_OUT, "venv")
VERSION = re.search(r"project\(attachcheck VERSION ([0-9.]+)",
                    open(os.path.join(SOURCE, "CMakeLists.txt")).read()).group(1)
INSIDE = ["attachcheck/__main__.py", "attachcheck/bin/attachcheck", "attachcheck/LICENSE",
          "attachcheck/lib/libattachcheck.so", "attachcheck/lib/libunwind.so.8",
          "attachcheck/lib/liblzma.so.5", "attachcheck/lib/libdw.so.1", "attachcheck/lib/libelf.so.1",
          f"attachcheck-{VERSION}.dist-info/LICENSE"]

shutil.rmtree(HERE_OUT, ignore_errors=True)
os.makedirs(HERE_OUT)
p = run([os.path.join(SOURCE, "tools", "wheel.sh"), BUILD, HERE_OUT], timeout=300)
wheels = [f for f in os.listdir(HERE_OUT) if f.endswith(".whl")]
check("tools/wheel.sh makes one wheel", p.returncode == 0 and len(wheels) == 1, p.stderr[-600:])
if not wheels:
    finish("wheel")
wheel = os.path.join(HERE_OUT, wheels[0])
auditwheel = subprocess.run(["/usr/bin/python3", "-c", "import auditwheel"],
                            env=dict(ENV, PYTHONPATH=os.path.join(SOURCE, ".pydeps")),
                            capture_output=True).returncode == 0
tag = wheels[0].split("-", 2)[2][:-4]
if auditwheel:
    check("auditwheel gave it a manylinux tag", re.match(r"py3-none-manylinux_2_\d+_", tag), tag)
else:
    print(f"no auditwheel in .pydeps/ (no PyPI): the wheel keeps the tag {tag}")
with zipfile.ZipFile(wheel) as z:
    names = set(z.namelist())
    meta = z.read(f"attachcheck-{VERSION}.dist-info/METADATA").decode()
    entry = z.read(f"attachcheck-{VERSION}.dist-info/entry_points.txt").decode()
    cli_mode = z.getinfo("attachcheck/bin/attachcheck").external_attr >> 16
check("the wheel holds the CLI, the shim, its private libraries and the licence",
      set(INSIDE) <= names, sorted(set(INSIDE) - names))
check(f"its metadata: version {VERSION} (CMakeLists.txt's), Apache-2.0, the console command",
      f"\nVersion: {VERSION}\n" in meta and "\nLicense: Apache-2.0\n" in meta and
      "attachcheck = attachcheck.__main__:main" in entry and cli_mode & 0o111, (meta[:300], entry))

# A fresh virtual environment, and pip with no compiler to be found (a PATH of the environment's
# own programs alone; CC naming nothing): a binary wheel builds nothing.
p = run(["/usr/bin/python3", "-m", "venv", VENV], timeout=120)
check("a fresh virtual environment", p.returncode == 0, p.stderr[-300:])
bare = {"PATH": os.path.join(VENV, "bin"), "HOME": HERE_OUT, "CC": "/nonexistent/cc",
        "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
p = run([os.path.join(VENV, "bin", "pip"), "install", "--no-index", "--no-deps", wheel], env=bare,
        timeout=120)
check("pip install of the wheel, no compiler needed", p.returncode == 0, p.stdout[-300:] + p.stderr[-300:])
installed = os.path.join(VENV, "bin", "attachcheck")
p = run([installed, "--version"])
check("the installed command: attachcheck --version", p.stdout == f"attachcheck {VERSION}\n",
      p.stdout + p.stderr)
p = run([os.path.join(VENV, "bin", "python"), "-m", "attachcheck", "-V"])
check("python -m attachcheck", p.stdout == f"attachcheck {VERSION}\n", p.stdout + p.stderr)
report = os.path.join(HERE_OUT, "demo.json")
p = run([installed, "--print-stderr", "off", "--json", report, DEMO])
found = json.load(open(report)) if os.path.exists(report) else {}
lines = [f["stack"][0].get("line") for f in found.get("findings", [])]
check("the installed command checks the demo over the stand-in driver, with source lines",
      p.returncode == 0 and found.get("summary", {}).get("errors") == 5 and all(lines),
      (p.returncode, p.stderr[-300:], lines))

finish("wheel")
