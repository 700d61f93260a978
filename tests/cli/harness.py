"""harness.py - what the report and CLI tests share: the build's paths (the
build folder is the test's first argument), the stand-in driver's
environment, and counting checks."""
import os
import subprocess
import sys

BUILD = os.path.abspath(sys.argv[1])
HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.path.dirname(os.path.dirname(HERE))
CLI = os.path.join(BUILD, "bin", "attachcheck")
SHIM = os.path.join(BUILD, "lib", "libattachcheck.so")
DEMO = os.path.join(BUILD, "examples", "attach_mistakes")
FORKS = os.path.join(BUILD, "tests", "cli", "two_processes")
ENV = dict(os.environ, LD_LIBRARY_PATH=os.path.join(BUILD, "tests", "fakecuda"))
# The start of the shim's lines (with its process's id: ==attachcheck:1234==).
PREFIX = r"==attachcheck(?::\d+)?== "
_counts = {"passed": 0, "failed": 0}


def check(name, cond, detail=""):
    _counts["passed" if cond else "failed"] += 1
    print(f"{'ok  ' if cond else 'FAIL'} {name} {'' if cond else detail}")


def run(args, env=ENV, timeout=60, **kw):
    return subprocess.run(args, env=env, capture_output=True, text=True, timeout=timeout, **kw)


def write_file(folder, name, text):
    """A file of the test's own (a suppression file, a helper script); its path."""
    path = os.path.join(folder, name)
    with open(path, "w") as f:
        f.write(text)
    return path


def finish(suite):
    print(f"{suite}: {_counts['passed']} passed, {_counts['failed']} failed")
    sys.exit(1 if _counts["failed"] or not _counts["passed"] else 0)
