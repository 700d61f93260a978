#!/usr/bin/env python3
"""Third-party CUDA programs under attachcheck: NVIDIA's CUDA samples
(nvidia_samples.txt says which, how they are built and what each must do).

  run.py build SAMPLES OUT   builds them from a cuda-samples checkout into OUT
                             (nvcc, any machine with the CUDA toolkit)
  run.py run OUT BUILD       runs each bare, then under BUILD's attachcheck on
                             each page-guard backend (the GPU machine), and
                             checks it against the table: the same exit status
                             as bare, the findings listed and no other, a
                             process that was checked (CUDA seen, nothing
                             lost), and bare's output where the table says
                             "same" (lines that tell times dropped). Exit 1
                             when one does not hold.

Nothing here runs in CI: the samples are not part of this tree, and they need a
GPU."""
import argparse
import concurrent.futures
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
TABLE = os.path.join(HERE, "nvidia_samples.txt")
# Lines a sample prints about time or speed: never the same twice.
TIMING = re.compile(r"time|[0-9] *(ms|msec|us|usec|s|sec|seconds)\b|\bms\b|msec|usec|\bsec\b|"
                    r"seconds|[GMT]B/s|bandwidth|gflop|elapsed|speedup|throughput", re.I)


def read_table():
    samples, kernels = [], []
    with open(TABLE) as f:
        for lineno, line in enumerate(f, 1):
            if not line.strip() or line.startswith("#"):
                continue
            cols = [c.strip() for c in line.split("|")]
            if cols[0] == "KERNEL" and len(cols) == 4:
                kernels.append({"source": cols[1], "output": cols[2], "mode": cols[3]})
            elif len(cols) == 7:
                name, directory, sources, flags, args, findings, output = cols
                samples.append({"name": name, "dir": directory, "sources": sources.split(),
                                "flags": flags.split(), "args": args.split(),
                                "findings": set() if findings == "-" else set(findings.split()),
                                "same_output": output == "same"})
            else:
                sys.exit(f"{TABLE}:{lineno}: expected 7 columns (or a KERNEL line of 4)")
    # Entries built from the same sources with the same flags share one program.
    programs = {}
    for s in samples:
        s["program"] = programs.setdefault((s["dir"], tuple(s["sources"]), tuple(s["flags"])),
                                           s["name"])
    return samples, kernels


def build(args):
    samples, kernels = read_table()
    nvcc = shutil.which("nvcc") or os.path.join(os.environ.get("CUDA_HOME", "/usr/local/cuda"),
                                                "bin", "nvcc")
    root = os.path.join(os.path.abspath(args.samples), "Samples")
    out = os.path.abspath(args.out)
    os.makedirs(os.path.join(out, "logs"), exist_ok=True)
    common = ["-O2", f"-arch={args.arch}", "-std=c++17", "--extended-lambda",
              "-Wno-deprecated-gpu-targets", "-I" + os.path.join(args.samples, "Common")]
    jobs = []
    for k in kernels:
        jobs.append((k["output"], os.path.dirname(os.path.join(root, k["source"])),
                     [nvcc, "-O2", f"-arch={args.arch}", "-Wno-deprecated-gpu-targets",
                      "-I" + os.path.join(args.samples, "Common"), k["mode"], "-o",
                      os.path.join(out, k["output"]), os.path.join(root, k["source"])]))
    for s in samples:
        if s["program"] == s["name"]:
            jobs.append((s["name"], os.path.join(root, s["dir"]),
                         [nvcc, *common, "-o", os.path.join(out, s["name"]), *s["sources"],
                          *s["flags"]]))

    def one(job):
        name, cwd, cmd = job
        with open(os.path.join(out, "logs", name + ".log"), "w") as log:
            ok = subprocess.run(cmd, cwd=cwd, stdout=log, stderr=subprocess.STDOUT).returncode == 0
        return name, ok

    failed = 0
    with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
        for name, ok in pool.map(one, jobs):
            print(("built  " if ok else "FAILED ") + name)
            failed += not ok
    return 1 if failed else 0


def run_one(cmd, cwd, timeout, env=None):
    try:
        p = subprocess.run(cmd, cwd=cwd, stdin=subprocess.DEVNULL, capture_output=True,
                           timeout=timeout, env=env)
        return p.returncode, p.stdout.decode(errors="replace"), p.stderr.decode(errors="replace")
    except subprocess.TimeoutExpired:
        return "timeout", "", ""


def normalised(text):
    lines = [l for l in text.replace("\r", "").splitlines()
             if not l.startswith("==attachcheck") and not TIMING.search(l)]
    # Addresses and process ids in names differ from run to run; threads and
    # processes interleave their lines.
    lines = [re.sub(r"0x[0-9a-fA-F]+", "0xADDR", l) for l in lines]
    lines = [re.sub(r"([A-Za-z]shm)[0-9]+", r"\1<PID>", l) for l in lines]
    return sorted(lines)


def check(sample, bare, checked, report):
    """What is wrong with one checked run against bare and the table, or []."""
    problems = []
    if checked[0] != bare[0]:
        problems.append(f"exit {checked[0]}, bare {bare[0]}")
    try:
        with open(report) as f:
            data = json.load(f)
    except (OSError, ValueError) as e:
        return problems + [f"no report: {e}"]
    summary = data.get("summary", {})
    if not summary.get("cuda_processes"):
        problems.append("no CUDA process was checked")
    for field in ("incomplete_processes", "dropped_records", "output_errors"):
        if summary.get(field):
            problems.append(f"{field} {summary[field]}")
    found = {f["rule"] for f in data.get("findings", [])}
    if found != sample["findings"]:
        problems.append(f"findings {sorted(found) or '-'}, expected "
                        f"{sorted(sample['findings']) or '-'}")
    if sample["same_output"] and normalised(checked[1]) != normalised(bare[1]):
        problems.append("output differs from bare")
    return problems


def run(args):
    samples, _ = read_table()
    corpus = os.path.abspath(args.corpus)
    attachcheck = os.path.join(os.path.abspath(args.build), "bin", "attachcheck")
    results = os.path.abspath(args.results or tempfile.mkdtemp(prefix="attachcheck-programs."))
    os.makedirs(results, exist_ok=True)
    failed = 0
    for s in samples:
        if args.only and s["name"] not in args.only:
            continue
        program = os.path.join(corpus, s["program"])
        if not os.access(program, os.X_OK):
            print(f"FAIL {s['name']}: {program} was not built")
            failed += 1
            continue
        bare = run_one([program, *s["args"]], corpus, args.timeout)
        lines, ok = [], True
        for backend in args.backends:
            report = os.path.join(results, f"{s['name']}.{backend}.json")
            if os.path.exists(report):
                os.unlink(report)
            checked = run_one([attachcheck, "--guard-pages", backend, "--json", report, "--",
                               program, *s["args"]], corpus, args.timeout)
            with open(os.path.join(results, f"{s['name']}.{backend}.log"), "w") as log:
                log.write(checked[1] + "\n----- stderr -----\n" + checked[2])
            problems = check(s, bare, checked, report)
            lines.append(f"{backend}: " + ("; ".join(problems) if problems else "as expected"))
            failed += bool(problems)
            ok = ok and not problems
        print(f"{'ok  ' if ok else 'FAIL'} {s['name']} (bare exit {bare[0]}): " + ", ".join(lines))
    print(f"programs: {failed} failed; logs and reports in {results}")
    return 1 if failed else 0


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="what", required=True)
    b = sub.add_parser("build", help="build the samples from a cuda-samples checkout")
    b.add_argument("samples", help="the checkout (its Samples/ and Common/)")
    b.add_argument("out", help="where the programs go")
    b.add_argument("--arch", default="sm_90")
    b.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    r = sub.add_parser("run", help="run them bare and under attachcheck (a GPU machine)")
    r.add_argument("corpus", help="the folder run.py build filled")
    r.add_argument("build", help="attachcheck's build folder")
    r.add_argument("--results", help="where logs and reports go (default: a new temporary one)")
    r.add_argument("--backends", nargs="+", default=["pkeys", "mprotect"])
    r.add_argument("--timeout", type=int, default=120)
    r.add_argument("--only", nargs="+", help="only these samples")
    args = parser.parse_args()
    return build(args) if args.what == "build" else run(args)


if __name__ == "__main__":
    sys.exit(main())
