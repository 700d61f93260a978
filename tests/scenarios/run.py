#!/usr/bin/env python3
"""Runs the scenarios of expectations.txt under attachcheck and checks the
findings, the driver answers (the scenario checks those itself) and the exit
status. The same expectations hold over the stand-in driver (--driver fake,
CI) and over the real one (--driver real, the GPU suite)."""
import argparse
import json
import os
import re
import signal
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from elfmachine import machine  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))


def parse_expectations(path):
    cases = []
    with open(path) as f:
        for lineno, line in enumerate(f, 1):
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            cols = [c.strip() for c in line.split("|")]
            if len(cols) != 5:
                sys.exit(f"{path}:{lineno}: expected 5 columns, got {len(cols)}")
            name, command, options, findings, status = cols
            words = command.split()
            env = {}
            while words and re.match(r"^[A-Z][A-Z0-9_]*=", words[0]):
                key, value = words.pop(0).split("=", 1)
                env[key] = value
            cases.append({
                "name": name,
                "env": env,
                "command": words,
                "options": options.split(),
                "findings": [] if findings == "-" else findings.split(),
                "status": status,
            })
    return cases


def parse_token(token):
    """RULE[*COUNT][@API][!] -> dict"""
    want = {"guarded": token.endswith("!")}
    token = token.rstrip("!")
    if "@" in token:
        token, want["api"] = token.split("@", 1)
    if "*" in token:
        token, count = token.split("*", 1)
        want["count"] = int(count)
    want["rule"] = token
    return want


def entry_point(f):
    """The call a finding names: its entry point, or how a CPU access was seen."""
    return f.get("api") or f.get("access", {}).get("via")


def match(findings, wanted):
    """Pairs each wanted token with a distinct finding; returns the problems. The
    tokens that name an entry point or a count are paired first: a plain RULE
    must not take the finding that only a more precise token of the same rule
    can match (findings of two threads come in either order)."""
    left = list(findings)
    problems = []
    wants = sorted(((token, parse_token(token)) for token in wanted),
                   key=lambda tw: -(("api" in tw[1]) + ("count" in tw[1])))
    for token, want in wants:
        hit = None
        for f in left:
            if f.get("rule") != want["rule"]:
                continue
            if "api" in want and entry_point(f) != want["api"]:
                continue
            if "count" in want and f.get("count") != want["count"]:
                continue
            if bool(f.get("driver", {}).get("guarded")) != want["guarded"]:
                continue
            hit = f
            break
        if hit is None:
            problems.append(f"expected a finding {token}, not found")
        else:
            left.remove(hit)
    for f in left:
        problems.append("unexpected finding {} ({} x{}, guarded={})".format(
            f.get("rule"), entry_point(f), f.get("count"), f.get("driver", {}).get("guarded")))
    return problems


def expected_status(text):
    if text.startswith("signal:"):
        return 128 + getattr(signal, text.split(":", 1)[1])
    return int(text)


def run_case(case, build, driver, verbose):
    env = dict(os.environ)
    env.update(case["env"])
    if driver == "fake":
        fake = os.path.join(build, "tests", "fakecuda")
        if "FAKECUDA_DRIVER_VERSION" in case["env"]:  # an older driver's variant
            fake = os.path.join(fake, "driver-" + case["env"]["FAKECUDA_DRIVER_VERSION"])
        env["LD_LIBRARY_PATH"] = fake + ((":" + env["LD_LIBRARY_PATH"]) if env.get("LD_LIBRARY_PATH") else "")
    with tempfile.TemporaryDirectory() as tmp:
        report = os.path.join(tmp, "report.json")
        prog = [os.path.join(build, case["command"][0])] + case["command"][1:]
        cmd = [os.path.join(build, "bin", "attachcheck"), "--json", report] + case["options"] + ["--"] + prog
        proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120)
        problems = []
        if proc.returncode != expected_status(case["status"]):
            problems.append(f"exit status {proc.returncode}, expected {case['status']}")
        if case["name"].startswith("ok."):
            # a correct program's row rests on the program being correct on this
            # driver: bare, it must end as the row expects under attachcheck
            # (without preloads: a sanitizer build's runtime is the shim's need, not its)
            bare_env = {k: v for k, v in env.items() if k != "LD_PRELOAD"}
            bare = subprocess.run(prog, env=bare_env, capture_output=True, text=True, timeout=120)
            if bare.returncode != expected_status(case["status"]):
                problems.append(f"without attachcheck: exit status {bare.returncode}, expected "
                                f"{case['status']}: the program is not correct on this driver")
        try:
            with open(report) as f:
                data = json.load(f)
            problems += match(data.get("findings", []), case["findings"])
            if data.get("summary", {}).get("dropped_records"):
                problems.append("the report dropped records")
            if not data.get("summary", {}).get("cuda_processes"):
                problems.append("no process initialised CUDA: nothing was checked")
        except (OSError, ValueError) as e:
            problems.append(f"no readable JSON report: {e}")
        if problems or verbose:
            prefix = "".join(f"{k}={v} " for k, v in case["env"].items())
            print(f"--- {case['name']}: {prefix}{' '.join(cmd)}")
            print(proc.stderr, end="")
        return problems


def only(cases, name, what):
    """The cases to run: all, or the one called name (exits when there is none)."""
    if not name:
        return cases
    chosen = [c for c in cases if c["name"] == name]
    if not chosen:
        sys.exit(f"no {what} named {name}")
    return chosen


def run_all(cases, label, run_one, skip_reason):
    """Runs each case that skip_reason (a case -> None, or why it is skipped)
    lets through with run_one (a case -> its problems), a line each, then the
    summary line; returns the exit status."""
    passed = failed = skipped = 0
    for case in cases:
        why = skip_reason(case)
        if why is not None:
            skipped += 1
            print(f"skip {case['name']}" + (f": {why}" if why else ""))
            continue
        problems = run_one(case)
        if problems:
            failed += 1
            print(f"FAIL {case['name']}")
            for p in problems:
                print(f"     {p}")
        else:
            passed += 1
            print(f"ok   {case['name']}")
    print(f"{label}: {passed} passed, {failed} failed" + (f", {skipped} skipped" if skipped else ""))
    return 1 if failed else 0


def cpu_has_keys():
    try:
        with open("/proc/cpuinfo") as f:
            flags = f.read().split()
    except OSError:
        return False
    return "pku" in flags and "ospke" in flags


def shim_has_keys(build):
    """Whether the build's shim guards with protection keys here: the CPU has
    them and the shim is an x86-64 one. An aarch64 build runs under qemu-user
    on an x86-64 host, whose /proc/cpuinfo says pku, yet guards with mprotect
    alone - as on a CPU without keys, its keys rows are skipped."""
    shim = os.path.join(build, "lib", "libattachcheck.so")
    return machine(shim) == "x86_64" and cpu_has_keys()


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--build", required=True)
    ap.add_argument("--driver", choices=["fake", "real"], required=True)
    ap.add_argument("--only", help="run one scenario by name")
    ap.add_argument("--expectations", default=os.path.join(HERE, "expectations.txt"),
                    help="the expectations file (default: the scenarios')")
    ap.add_argument("--verbose", action="store_true")
    args = ap.parse_args()
    build = os.path.abspath(args.build)
    cases = only(parse_expectations(args.expectations), args.only, "scenario")
    keys = shim_has_keys(build)

    def skip_reason(case):
        # a device or driver the stand-in plays, not the real one (the real driver
        # hands small slots back and maps shared chunks by itself: those rows run there too)
        as_real = ("FAKECUDA_REUSE_SMALL", "FAKECUDA_SHARED_CHUNKS")
        if args.driver == "real" and any(k.startswith("FAKECUDA_") and k not in as_real
                                         for k in case["env"]):
            return ""
        # a row about the protection-keys backend, where the shim has none
        if "pkeys" in case["options"] and not keys:
            return "the shim under test has no protection keys here"
        return None

    return run_all(cases, os.path.basename(args.expectations),
                   lambda case: run_case(case, build, args.driver, args.verbose), skip_reason)


if __name__ == "__main__":
    sys.exit(main())
