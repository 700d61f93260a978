#!/usr/bin/env python3
"""tests/python/run.py BUILD [--driver fake|real] [--cupy] [--cli ATTACHCHECK] - runs the
Python clients under the attachcheck CLI (the build's, or ATTACHCHECK: the command a wheel
installed) and checks each gives exactly the expected rules: cuda.bindings scripts (one clean,
one per rule family) over the stand-in driver in CI and over the real one on the GPU machine,
and the CuPy workloads (--cupy, GPU only). The clean runs must also show that the driver was
reached through cuGetProcAddress and that attachcheck answered it."""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
CASES = [  # script, expected rules, needs CuPy
    ("driver_clean.py", [], False),
    ("driver_attach.py", ["AC101", "AC102"], False),
    ("driver_host.py", ["AC201"], False),
    ("driver_device.py", ["AC301"], False),
    ("driver_order.py", ["AC401", "AC402"], False),
    ("driver_libdw_at_start.py", ["AC101"], False),
    ("cupy_clean.py", [], True),
    ("cupy_wrong.py", ["AC202"], True),
]

parser = argparse.ArgumentParser()
parser.add_argument("build")
parser.add_argument("--driver", choices=["fake", "real"], default="fake")
parser.add_argument("--cupy", action="store_true")
parser.add_argument("--cli", help="the attachcheck command to run (default: BUILD's)")
args = parser.parse_args()
build = os.path.abspath(args.build)
cli = args.cli or os.path.join(build, "bin", "attachcheck")
env = dict(os.environ)
source = os.path.dirname(os.path.dirname(HERE))
paths = [HERE, os.path.join(source, ".pydeps")] + env.get("PYTHONPATH", "").split(":")
env["PYTHONPATH"] = ":".join(p for p in paths if p)
if args.driver == "fake":
    env["LD_LIBRARY_PATH"] = os.path.join(build, "tests", "fakecuda")
# Without cuda-bindings (PyPI could not be reached) there is nothing to run:
# say so and let ctest count the test as skipped (SKIP_RETURN_CODE), not passed.
SKIPPED = 77
if subprocess.run([sys.executable, "-c", "import cuda.bindings.driver"], env=env,
                  capture_output=True).returncode != 0:
    print(f"SKIPPED python clients: {sys.executable} cannot import cuda.bindings from .pydeps/ "
          "(tools/test.sh installs cuda-bindings there from PyPI)")
    sys.exit(SKIPPED)
passed = failed = 0
with tempfile.TemporaryDirectory() as d:
    for script, expected, needs_cupy in CASES:
        if needs_cupy and not args.cupy:
            continue
        report = os.path.join(d, script + ".json")
        verbose = ["--verbose", "2"] if script == "driver_clean.py" else []
        p = subprocess.run([cli, "--json", report, *verbose,
                            sys.executable, os.path.join(HERE, script)],
                           env=env, capture_output=True, text=True, timeout=300)
        found = sorted({f["rule"] for f in json.load(open(report))["findings"]}) \
            if os.path.exists(report) else None
        problems = []
        if found != expected:
            problems.append(f"rules {found}, expected {expected}")
        if p.returncode != 0:
            problems.append(f"exit status {p.returncode}")
        if verbose and not all(f"cuGetProcAddress({name}," in p.stderr and
                               any(re.match(r"==attachcheck(:\d+)?== cuGetProcAddress\(" + name + ",", line)
                                   and line.endswith(": wrapped") for line in p.stderr.splitlines())
                               for name in ["cuStreamAttachMemAsync", "cuLaunchKernel"]):
            problems.append("the driver was not reached through attachcheck's cuGetProcAddress")
        if problems:
            failed += 1
            print(f"FAIL {script}: {'; '.join(problems)}\n{p.stderr[-2000:]}")
        else:
            passed += 1
            print(f"ok   {script}: {', '.join(expected) or 'no finding'}")
print(f"python clients: {passed} passed, {failed} failed")
sys.exit(1 if failed or not passed else 0)
