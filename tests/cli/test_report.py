#!/usr/bin/env python3
"""attachcheck report: saved JSON reports - one per "node", written in separate folders by
separate runs with separate pids - merge into one report as the processes of one run do: the
SARIF equals the one a single run of the same job gives (apart from what differs from run to
run anyway: pids and load addresses), the text summary on stdout counts every occurrence, and
--error-exitcode, an incomplete report and unusable input give their statuses."""
import copy
import json
import os
import re
import subprocess
import sys
import tempfile

try:
    import jsonschema
except ImportError:  # a Python of its own (pyenv, venv) without it: Debian's has python3-jsonschema
    if sys.executable != "/usr/bin/python3" and os.path.exists("/usr/bin/python3"):
        os.execv("/usr/bin/python3", ["/usr/bin/python3"] + sys.argv)
    raise

from harness import (BUILD, CLI, DEMO, ENV, HERE, check, finish, run, sarif_results, stable,
                     write_file)

LAUNCH = os.path.join(BUILD, "tests", "cli", "launch")
SCHEMA = json.load(open(os.path.join(HERE, "sarif-schema-2.1.0.json")))
def cuda_invocations(log):
    """The invocations of the processes that used CUDA (a single run also has the launcher)."""
    return sorted(json.dumps(stable(i), sort_keys=True) for i in log["runs"][0]["invocations"]
                  if i["properties"].get("cudaInitialized"))


def report(args, cwd=None):
    return subprocess.run([CLI, "report", *args], env=ENV, capture_output=True, text=True,
                          timeout=60, cwd=cwd)


with tempfile.TemporaryDirectory() as d:
    # The job: two ranks of the demo. Once as one run under the CLI, launcher and all...
    p = run([CLI, "--print-stderr", "off", "--sarif", f"{d}/single.sarif", LAUNCH, "2", DEMO])
    single = json.load(open(f"{d}/single.sarif"))
    # ...and once rank by rank, each "node" writing into a folder of its own.
    for node in ["node0", "node1"]:
        os.mkdir(os.path.join(d, node))
        run([CLI, "--print-stderr", "off", "--json", "r.json", DEMO], cwd=os.path.join(d, node))
    saved = [f"{d}/node0/r.json", f"{d}/node1/r.json"]
    pids = [json.load(open(s))["process"]["pid"] for s in saved]
    p = report(["--sarif", f"{d}/merged.sarif", "--json", f"{d}/merged.json", *saved])
    merged = json.load(open(f"{d}/merged.sarif"))
    check("two nodes' reports merge into the SARIF of a single run of the same job",
          p.returncode == 0 and sarif_results(merged) == sarif_results(single) and
          cuda_invocations(merged) == cuda_invocations(single) and len(sarif_results(merged)) == 5,
          (p.stderr[-300:], sorted(sarif_results(merged)), sorted(sarif_results(single))))
    errors = [e.message for e in jsonschema.Draft4Validator(SCHEMA).iter_errors(merged)][:3]
    check("the merged SARIF is valid SARIF 2.1.0", not errors, errors)
    both = json.load(open(f"{d}/merged.json"))
    check("merged JSON: each finding counted twice, listing both nodes' processes",
          all(f["count"] == 2 and sorted(f["processes"]) == sorted(pids)
              for f in both["findings"]) and both["summary"]["processes"] == 2 and
          both["summary"]["errors"] == 5, both["summary"])
    lines = p.stdout.splitlines()
    check("the text summary on stdout: each finding with its count, where, the fix; the summary",
          lines.count("==attachcheck== 2 times in 2 processes:") == 5 and
          sum(bool(re.search(r"attach_mistakes\.c:\d+:\d+: error: AC\d+ [a-z-]+ in main$", l))
              for l in lines) == 5 and
          sum(l.startswith("==attachcheck==   fix: ") for l in lines) == 5 and
          lines[-1] == "==attachcheck== summary: 5 errors, 0 warnings, 0 notes (10 occurrences) "
          "in 2 processes",
          p.stdout[-600:])
    p = report(["--html", "merged.html", "--error-exitcode", "3", *saved], cwd=d)
    check("--error-exitcode N: status N on error findings; --html written",
          p.returncode == 3 and "<html" in open(f"{d}/merged.html").read(), p.stderr[-300:])
    p = report([saved[0], "--json", f"{d}/one.json"])
    check("options after the files; one report merges with itself unchanged",
          p.returncode == 0 and json.load(open(f"{d}/one.json"))["findings"] ==
          json.load(open(saved[0]))["findings"], p.stderr[-300:])

    # A report that says records of a process are missing: the merge says so too.
    cut = json.load(open(saved[0]))
    cut["processes"][0]["incomplete"] = {"cut": True, "torn_records": 0, "why": "No space left"}
    p = report([write_file(d, "cut.json", json.dumps(cut)), saved[1]])
    check("an incomplete report: status 5, said in one line",
          p.returncode == 5 and "incomplete" in p.stderr and "1 process " in p.stderr, p.stderr)

    older = json.load(open(saved[0]))
    older["schema_version"] = 1
    p = report([write_file(d, "v1.json", json.dumps(older)), saved[1]])
    check("a version-1 report is read (as a complete one)", p.returncode == 0 and
          "5 errors, 0 warnings, 0 notes (10 occurrences) in 2 processes" in p.stdout, p.stderr)

    # What cannot be used stops it with one line and status 2.
    newer = copy.deepcopy(cut)
    newer["schema_version"] = 99
    for name, args, words in [
            ("no report", [], "no report to read"),
            ("a missing file", [f"{d}/nothere.json"], "cannot read the report"),
            ("not a report", [write_file(d, "other.json", '{"a": 1}')], "not an attachcheck JSON"),
            ("another schema version", [write_file(d, "v99.json", json.dumps(newer))],
             "schema version 99"),
            ("an option of runs only", ["--guard", "on", saved[0]], "--guard does not apply"),
            ("an unknown option", ["--bogus", saved[0]], "unknown option '--bogus'"),
            ("two outputs on one file", ["--json", "x", "--sarif", "./x", saved[0]],
             "name the same file")]:
        p = report(args, cwd=d)
        check(f"attachcheck report: {name}: status 2, one line",
              p.returncode == 2 and words in p.stderr and len(p.stderr.splitlines()) == 1,
              p.stderr)
    p = report(["--help"])
    check("attachcheck report --help", p.returncode == 0 and "usage: attachcheck report" in p.stdout)

finish("report")
