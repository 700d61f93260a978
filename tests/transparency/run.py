#!/usr/bin/env python3
"""Runs each case of cases.txt twice - bare, then under attachcheck - and
checks that attachcheck is transparent: the same exit status (or signal), the
same stdout, the expected findings in the JSON report (none for a correct
program) and at least one process that initialised CUDA in that report. A run
that outlives the case's timeout is killed with its process group and fails.
Works over the stand-in driver (--driver fake, CI) and the real one (--driver
real, tests/gpu/run.sh)."""
import argparse
import difflib
import importlib.util
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def scenario_runner():
    """tests/scenarios/run.py: its table reader and finding matcher serve here too."""
    spec = importlib.util.spec_from_file_location("scenario_run",
                                                  os.path.join(HERE, "..", "scenarios", "run.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


SCENARIOS = scenario_runner()

DEFAULT_TIMEOUT = 30
OUTPUT_CAP = 1 << 20


def parse_cases(path):
    """The rows of the table, read as the scenarios' expectations are (name |
    command | options | findings | a fifth column, here notes). Options may
    hold env:NAME=VALUE (for both runs), timeout:SECONDS, preload (run under
    plain LD_PRELOAD with ATTACHCHECK_JSON instead of the CLI) and own_calloc
    (the program replaces calloc); the others are attachcheck's."""
    cases = []
    for row in SCENARIOS.parse_expectations(path):
        case = dict(row, options=[], env={}, timeout=DEFAULT_TIMEOUT, preload=False,
                    own_calloc=False)
        for opt in row["options"]:
            if opt.startswith("env:"):
                key, value = opt[4:].split("=", 1)
                case["env"][key] = value
            elif opt.startswith("timeout:"):
                case["timeout"] = int(opt[8:])
            elif opt == "preload":
                case["preload"] = True
            elif opt == "own_calloc":
                case["own_calloc"] = True
            else:
                case["options"].append(opt)
        cases.append(case)
    return cases


def resolve(token, build):
    """src:PATH is in this folder; a path that exists in the build is made absolute."""
    if token.startswith("src:"):
        return os.path.join(HERE, token[4:])
    candidate = os.path.join(build, token)
    return candidate if "/" in token and os.path.exists(candidate) else token


def status_of(returncode):
    """A death by signal reads as the shell and the CLI report it: 128 + N."""
    return 128 - returncode if returncode < 0 else returncode


def read_capped(f):
    """The first OUTPUT_CAP bytes of an output file: a runaway loop stays readable."""
    f.seek(0)
    text = f.read(OUTPUT_CAP).decode(errors="replace")
    return text + ("\n[output truncated]\n" if f.read(1) else "")


def run(cmd, env, cwd, timeout):
    """(status, stdout, stderr, seconds), status None after a timeout."""
    start = time.monotonic()
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        proc = subprocess.Popen(cmd, env=env, cwd=cwd, stdout=out, stderr=err,
                                start_new_session=True)
        try:
            status = status_of(proc.wait(timeout=timeout))
        except subprocess.TimeoutExpired:
            status = None
        # the whole group: children left behind must not outlive the case
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.wait()
        return status, read_capped(out), read_capped(err), time.monotonic() - start


def base_env(build, driver, case):
    env = dict(os.environ)  # an LD_PRELOAD there (a sanitizer runtime) serves both runs
    env.pop("ATTACHCHECK_JSON", None)
    if driver == "fake":
        fake = os.path.join(build, "tests", "fakecuda")
        old = env.get("LD_LIBRARY_PATH")
        env["LD_LIBRARY_PATH"] = fake + (":" + old if old else "")
    env.update(case["env"])
    return env


def checked_command(case, build, prog, report, env):
    """The command and environment of the run under attachcheck."""
    if case["preload"]:
        # the shim first, then what was preloaded already, as the CLI does
        preload = [os.path.join(build, "lib", "libattachcheck.so"), env.get("LD_PRELOAD", "")]
        env = dict(env, LD_PRELOAD=" ".join(p for p in preload if p), ATTACHCHECK_JSON=report)
        return prog, env
    cli = os.path.join(build, "bin", "attachcheck")
    return [cli, "--json", report] + case["options"] + ["--"] + prog, env


def compare_runs(bare, checked, timeout):
    problems = []
    if bare[0] is None:
        problems.append(f"the bare run hung: killed after {timeout} s")
    if checked[0] is None:
        problems.append(f"the run under attachcheck hung: killed after {timeout} s")
    if bare[0] is not None and checked[0] is not None and bare[0] != checked[0]:
        problems.append(f"exit status {checked[0]} under attachcheck, {bare[0]} bare")
    if bare[1] != checked[1]:
        diff = difflib.unified_diff(bare[1].splitlines(), checked[1].splitlines(), "bare",
                                    "attachcheck", lineterm="", n=1)
        problems.append("stdout differs:\n       " + "\n       ".join(list(diff)[:40]))
    return problems


def check_report(report, wanted):
    try:
        with open(report) as f:
            data = json.load(f)
    except (OSError, ValueError) as e:
        return [f"no readable JSON report: {e}"]
    problems = SCENARIOS.match(data.get("findings", []), wanted)
    if data.get("summary", {}).get("cuda_processes", 0) < 1:
        problems.append("the report has no process that initialised CUDA (unchecked)")
    return problems


def run_case(case, build, driver, verbose):
    env = base_env(build, driver, case)
    prog = [resolve(t, build) for t in case["command"]]
    with tempfile.TemporaryDirectory() as tmp:
        report = os.path.join(tmp, "report.json")
        bare = run(prog, env, tmp, case["timeout"])
        cmd, checked_env = checked_command(case, build, prog, report, env)
        checked = run(cmd, checked_env, tmp, case["timeout"])
        problems = compare_runs(bare, checked, case["timeout"])
        if checked[0] is not None:
            problems += check_report(report, case["findings"])
        if problems or verbose:
            print(f"--- {case['name']}: {' '.join(cmd)}")
            print(f"    bare: status {bare[0]} in {bare[3]:.1f} s; "
                  f"attachcheck: status {checked[0]} in {checked[3]:.1f} s")
            print("    bare stderr:\n" + bare[2][-3000:], end="")
            print("    attachcheck stderr:\n" + checked[2][-6000:], end="")
        return problems


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--build", required=True)
    ap.add_argument("--driver", choices=["fake", "real"], required=True)
    ap.add_argument("--only", help="run one case by name")
    ap.add_argument("--cases", default=os.path.join(HERE, "cases.txt"))
    ap.add_argument("--verbose", action="store_true")
    args = ap.parse_args()
    build = os.path.abspath(args.build)
    cases = SCENARIOS.only(parse_cases(args.cases), args.only, "case")

    def skip_reason(case):
        # The GPU machine has no package registry: a case that runs a tool it
        # lacks is skipped there, and said. CI installs every tool.
        tool = case["command"][0]
        if args.driver == "real" and ":" not in tool and "/" not in tool and not shutil.which(tool):
            return f"{tool} is not installed here"
        # A case that fills its TMPDIR gets a small file system of its own
        # (small_tmpdir.sh mounts it, as root); never a shared /tmp.
        # A program's own calloc would take the allocator from under a
        # preloaded sanitizer runtime (the sanitized legs preload one).
        preloaded = os.environ.get("LD_PRELOAD", "")
        if case["own_calloc"] and re.search(r"[at]san[^/]*\.so", preloaded):
            return "the program replaces calloc, which the preloaded sanitizer runtime must own"
        tmpdir = case["env"].get("TMPDIR")
        if tmpdir and not os.path.ismount(tmpdir):
            return f"{tmpdir} is not a small file system of its own (small_tmpdir.sh mounts one)"
        return None

    return SCENARIOS.run_all(cases, "transparency",
                             lambda case: run_case(case, build, args.driver, args.verbose),
                             skip_reason)


if __name__ == "__main__":
    sys.exit(main())
