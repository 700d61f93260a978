"""harness.py - what the report and CLI tests share: the build's paths (the
build folder is the test's first argument), the stand-in driver's
environment, and counting checks."""
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from elfmachine import machine  # noqa: E402

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


# What differs between two runs of one job anyway: pids, load addresses, the session folder.
VOLATILE = {"pid", "pc", "base", "processId", "ppid", "session_dir"}


def stable(value):
    """value without what differs from run to run; a list of pids becomes its length."""
    if isinstance(value, dict):
        return {k: (len(v) if k == "processes" else stable(v)) for k, v in value.items()
                if k not in VOLATILE}
    if isinstance(value, list):
        return [stable(v) for v in value]
    if isinstance(value, str):  # a handle or an address in a message
        return re.sub(r"0x[0-9a-f]{6,}", "0x…", value)
    return value


def sarif_results(log):
    """A SARIF log's results by fingerprint, stable (the order of findings that different
    threads found varies from run to run)."""
    return {r["partialFingerprints"]["attachcheckSource/v2"]: stable(r)
            for r in log["runs"][0]["results"]}


def x86_64(program):
    """Whether the program is an x86-64 one (its ELF header says; an aarch64 one runs here
    under qemu, with this Python an x86-64 one)."""
    return machine(program) == "x86_64"


def finish(suite):
    print(f"{suite}: {_counts['passed']} passed, {_counts['failed']} failed")
    sys.exit(1 if _counts["failed"] or not _counts["passed"] else 0)
