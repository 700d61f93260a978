#!/usr/bin/env python3
"""A real MPI launcher (Open MPI's mpirun, Debian's openmpi-bin) over the stand-in driver, four
ranks of the demo, in both forms docs/ci.md gives: the launcher under attachcheck (one report,
every finding from all four ranks), and attachcheck under the launcher with a report per rank
(%q{OMPI_COMM_WORLD_RANK}), merged afterwards by `attachcheck report` into the same findings.
As root (with mpirun's --allow-run-as-root, which Open MPI wants only then) and as an
unprivileged user (nobody, when the tests run as root and nobody can reach the build)."""
import json
import os
import shutil
import subprocess
import tempfile

from harness import CLI, DEMO, ENV, check, finish, sarif_results

RANKS = 4
RULES = ["AC101", "AC102", "AC107", "AC201", "AC301"]
MPIRUN = shutil.which("mpirun")
IS_ROOT = os.geteuid() == 0


def mpirun(as_root):
    # --oversubscribe: four ranks on a machine of fewer cores (CI has two).
    return [MPIRUN, "--oversubscribe", "-n", str(RANKS)] + (["--allow-run-as-root"] if as_root else [])


def run(args, folder, user):
    # HOME in the folder: nobody's does not exist, and Open MPI looks there.
    env = dict(ENV, HOME=folder, TMPDIR=folder)
    kw = dict(user=65534, group=65534, extra_groups=[]) if user == "nobody" else {}
    return subprocess.run(args, env=env, cwd=folder, capture_output=True, text=True, timeout=120,
                          **kw)


def each_from_every_rank(report):
    return (sorted(f["rule"] for f in report["findings"]) == RULES and
            all(len(set(f["processes"])) == RANKS and f["count"] == RANKS
                for f in report["findings"]) and report["summary"]["cuda_processes"] == RANKS)


def both_forms(user):
    with tempfile.TemporaryDirectory() as folder:
        os.chmod(folder, 0o777)
        as_root = user == "root"
        # One report for the whole job: the launcher under attachcheck.
        p = run([CLI, "--print-stderr", "off", "--json", "all.json", "--sarif", "all.sarif",
                 *mpirun(as_root), DEMO], folder, user)
        one = json.load(open(os.path.join(folder, "all.json"))) if p.returncode == 0 else {}
        check(f"{user}: attachcheck --json all.json mpirun -n 4: every finding from all four ranks",
              one and each_from_every_rank(one), (p.returncode, p.stderr[-500:]))
        # A report per rank, as on several nodes, then merged.
        p = run([*mpirun(as_root), CLI, "--print-stderr", "off", "--json",
                 "r.%q{OMPI_COMM_WORLD_RANK}.json", DEMO], folder, user)
        per_rank = sorted(n for n in os.listdir(folder) if n.startswith("r."))
        check(f"{user}: mpirun -n 4 attachcheck --json r.%q{{OMPI_COMM_WORLD_RANK}}.json: "
              "a report per rank", p.returncode == 0 and
              per_rank == [f"r.{r}.json" for r in range(RANKS)], (per_rank, p.stderr[-500:]))
        p = run([CLI, "report", "--json", "merged.json", "--sarif", "merged.sarif", *per_rank],
                folder, user)
        merged = json.load(open(os.path.join(folder, "merged.json"))) if p.returncode == 0 else {}
        same = merged and sarif_results(json.load(open(os.path.join(folder, "merged.sarif")))) == \
            sarif_results(json.load(open(os.path.join(folder, "all.sarif"))))
        check(f"{user}: attachcheck report r.*.json: every finding from all four ranks, the same "
              "results as the launcher under attachcheck",
              merged and each_from_every_rank(merged) and same and
              p.stdout.count(f"times in {RANKS} processes") == len(RULES),
              (p.returncode, p.stderr[-300:], p.stdout[-300:]))


if not MPIRUN:
    print("SKIPPED mpi: no mpirun (tools/deps.sh installs Debian's openmpi-bin)")
    raise SystemExit(77)
both_forms("root" if IS_ROOT else "this user")
if IS_ROOT:
    probe = subprocess.run(["test", "-x", CLI, "-a", "-r", DEMO], user=65534, group=65534,
                           extra_groups=[])
    if probe.returncode == 0:
        both_forms("nobody")
    else:
        print("skip nobody: the build folder cannot be reached by another user here")
finish("mpi")
