#!/usr/bin/env python3
"""The CTest recipe (examples/ctest, docs/ci.md "CTest"): the example project, configured with the
build's attachcheck and the CMake that runs the tests (3.25 on Debian 12: the launcher goes in
through CROSSCOMPILING_EMULATOR; TEST_LAUNCHER from 3.29), runs its tests over the stand-in
driver: the right test passes, the wrong one fails under attachcheck (--error-exitcode) and, run
under plain LD_PRELOAD, through ATTACHCHECK_ERROR_EXITCODE; each run leaves its report, and
`attachcheck report` merges them into one SARIF log with the paths relative to the project. The
GitHub Actions example (examples/ci/attachcheck.yml) is the one docs/ci.md shows."""
import glob
import json
import os
import subprocess
import tempfile
import xml.etree.ElementTree as ElementTree

from harness import CLI, ENV, SOURCE, check, finish, run

EXAMPLE = os.path.join(SOURCE, "examples", "ctest")

with tempfile.TemporaryDirectory() as d:
    build = os.path.join(d, "build")
    p = run(["cmake", "-S", EXAMPLE, "-B", build, f"-DATTACHCHECK={CLI}"], timeout=300)
    q = run(["cmake", "--build", build], timeout=300) if p.returncode == 0 else p
    check("the example project configures and builds", q.returncode == 0,
          p.stdout[-300:] + p.stderr[-300:] + q.stdout[-300:] + q.stderr[-300:])
    junit = os.path.join(d, "tests.xml")
    p = run(["ctest", "--test-dir", build, "--output-junit", junit], timeout=300)
    status = {t.get("name"): t.get("status") for t in ElementTree.parse(junit).iter("testcase")} \
        if os.path.exists(junit) else {}
    check("CTest: the right test passes; the wrong one fails under attachcheck and under "
          "ATTACHCHECK_ERROR_EXITCODE", status == {"attach.right": "run", "attach.wrong": "fail",
                                                   "attach.wrong_preloaded": "fail"}, status)
    listing = run(["ctest", "--test-dir", build, "-N", "-V"]).stdout
    commands = [l for l in listing.splitlines() if "Test command:" in l]
    check("the launcher is in front of the target's tests only",
          len(commands) == 3 and all(CLI in c and '"--error-exitcode" "1"' in c
                                     for c in commands[:2]) and CLI not in commands[2], commands)
    reports = sorted(glob.glob(os.path.join(build, "attachcheck-reports", "*.json")))
    rules = sorted(tuple(f["rule"] for f in json.load(open(r))["findings"]) for r in reports)
    check("each run left its report: nothing, AC101, AC101 (preloaded)",
          rules == [(), ("AC101",), ("AC101",)], (reports, rules))
    sarif = os.path.join(d, "tests.sarif")
    p = run([CLI, "report", "--sarif", sarif, "--error-exitcode", "1", *reports])
    results = json.load(open(sarif))["runs"][0]["results"] if os.path.exists(sarif) else []
    where = [r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] for r in results]
    check("attachcheck report merges them: one result, two occurrences, at the project's "
          "attach_test.c; status 1", p.returncode == 1 and len(results) == 1 and
          results[0]["occurrenceCount"] == 2 and where == ["attach_test.c"],
          (p.returncode, where, p.stderr[-300:]))

doc = open(os.path.join(SOURCE, "docs", "ci.md")).read()
workflow = open(os.path.join(SOURCE, "examples", "ci", "attachcheck.yml")).read()
check("docs/ci.md shows examples/ci/attachcheck.yml as it is", f"```yaml\n{workflow}```" in doc)
finish("ctest example")
