#!/usr/bin/env python3
"""SARIF and multi-process reports: the log validates against the official
SARIF 2.1.0 schema (sarif-schema-2.1.0.json beside this file, OASIS errata01),
results point at the program's own code with the stack and code flows, the
fingerprints do not change from run to run (the program loads at other
addresses each time), and a program that forks gives one merged report in
which every finding says which processes it came from."""
import json
import os
import socket
import subprocess
import sys
import tempfile

try:
    import jsonschema
except ImportError:  # a Python of its own (pyenv, venv) without it: Debian's has python3-jsonschema
    if sys.executable != "/usr/bin/python3" and os.path.exists("/usr/bin/python3"):
        os.execv("/usr/bin/python3", ["/usr/bin/python3"] + sys.argv)
    raise

from harness import BUILD, CLI, DEMO, ENV, FORKS, HERE, SHIM, SOURCE, check, finish, write_file

SCHEMA = json.load(open(os.path.join(HERE, "sarif-schema-2.1.0.json")))


def attachcheck(folder, name, program, *options, env=ENV):
    sarif, js = os.path.join(folder, name + ".sarif"), os.path.join(folder, name + ".json")
    p = subprocess.run([CLI, "--print-stderr", "off", "--sarif", sarif, "--json", js, *options,
                        program], env=env, capture_output=True, text=True, timeout=60)
    return p, json.load(open(sarif)), json.load(open(js))


def schema_errors(log):
    return [e.message for e in jsonschema.Draft4Validator(SCHEMA).iter_errors(log)][:3]


with tempfile.TemporaryDirectory() as d:
    p, log, report = attachcheck(d, "demo", DEMO)
    check("demo: SARIF written", p.returncode == 0, p.stderr)
    check("demo: valid SARIF 2.1.0", not schema_errors(log), schema_errors(log))
    run = log["runs"][0]
    rules = run["tool"]["driver"]["rules"]
    check("rules table: the whole catalogue, with help",
          len(rules) >= 13 and all(r["id"].startswith("AC") and r["help"]["text"] for r in rules))
    docs = os.path.join(SOURCE, "docs")
    check("every rule has its page in docs/rules/, linked from its help and the index",
          all(os.path.exists(os.path.join(docs, "rules", r["id"] + ".md")) and
              f"docs/rules/{r['id']}.md" in r["help"]["markdown"] and
              f"(rules/{r['id']}.md)" in open(os.path.join(docs, "rules.md")).read() for r in rules),
          [r["id"] for r in rules])
    results = run["results"]
    ids = [r["ruleId"] for r in results]
    check("one result per finding, same rules as the JSON report",
          ids == [f["rule"] for f in report["findings"]] and
          sorted(ids) == ["AC101", "AC102", "AC107", "AC201", "AC301"], ids)
    check("rule indexes point into the table",
          all(rules[r["ruleIndex"]]["id"] == r["ruleId"] for r in results))
    check("levels from severities", all(r["level"] == "error" for r in results))
    primary = [r["locations"][0] for r in results]
    check("primary location: the program's own source line (main in attach_mistakes.c)",
          all(loc["logicalLocations"][0]["name"] == "main" and
              loc["physicalLocation"]["artifactLocation"]["uri"].endswith("/attach_mistakes.c") and
              loc["physicalLocation"]["region"]["startLine"] > 0 for loc in primary), primary[:1])
    check("full stack on every result", all(len(r["stacks"][0]["frames"]) >= 2 for r in results))
    ac201 = results[ids.index("AC201")]
    flows = ac201["codeFlows"][0]["threadFlows"]
    check("AC201 code flows: the host and the busy stream",
          [f["id"] for f in flows][0] == "host" and any(f["id"].startswith("stream-") for f in flows)
          and len(flows[0]["locations"]) == 3, [f["id"] for f in flows])
    ac301 = results[ids.index("AC301")]
    flows = [f["id"] for f in ac301["codeFlows"][0]["threadFlows"]]
    check("AC301 code flows: the host, the launch's stream and the memory's stream",
          flows[0] == "host" and len([f for f in flows if f.startswith("stream-")]) == 2, flows)
    check("invocation: the command line and pid",
          run["invocations"][0]["commandLine"].endswith("attach_mistakes") and
          run["invocations"][0]["processId"] == report["process"]["pid"])

    proc = report["process"]
    check("session details: host, driver version, GPUs, options",
          proc["host"] == socket.gethostname() and proc["cuda_driver_version"] == "13.0" and
          proc["gpus"] == ["attachcheck stand-in driver"] and proc["options"]["semantics"] ==
          "strict" and run["invocations"][0]["machine"] == proc["host"] and
          run["invocations"][0]["properties"]["gpus"] == proc["gpus"], proc)

    _, again, _ = attachcheck(d, "again", DEMO)
    # (AC201 comes from the page guard's reporter thread: its place in the order may vary.)
    prints = lambda log: sorted((r["ruleId"], r["partialFingerprints"]["attachcheckStack/v1"])
                                for r in log["runs"][0]["results"])
    check("fingerprints: the same from run to run", prints(again) == prints(log),
          (prints(again), prints(log)))
    check("fingerprints: distinct per finding", len({json.dumps(x) for x in prints(log)}) == 5)

    p, log, report = attachcheck(d, "forks", FORKS)
    check("two processes: valid SARIF", not schema_errors(log), schema_errors(log))
    check("two processes: both in the report, one invocation each",
          len(report["processes"]) == 2 and len(log["runs"][0]["invocations"]) == 2,
          report["processes"])
    pids = sorted(pr["pid"] for pr in report["processes"])
    by_rule = {f["rule"]: f for f in report["findings"]}
    check("the shared mistake is one finding from both processes",
          sorted(by_rule.get("AC101", {}).get("processes", [])) == pids and
          by_rule["AC101"]["count"] == 2, by_rule.get("AC101"))
    check("the child's own mistake names the child only",
          len(by_rule.get("AC102", {}).get("processes", [])) == 1)
    check("SARIF results carry the processes",
          all(r["properties"]["processes"] for r in log["runs"][0]["results"]))

    supp = write_file(d, "demo.supp", "AC201:main\n")
    _, log, _ = attachcheck(d, "supp", DEMO, "--suppressions", supp)
    marked = [r for r in log["runs"][0]["results"] if r.get("suppressions")]
    check("a suppressed finding is a result with an external suppression, still valid",
          [r["ruleId"] for r in marked] == ["AC201"] and marked[0]["suppressions"][0]["kind"] ==
          "external" and not schema_errors(log), marked)

    # MPI-style: a launcher (no CUDA) starts four ranks of the same program.
    launcher = write_file(d, "launch.py",
                          "import os, subprocess, sys\n"
                          "ranks = [subprocess.Popen([sys.argv[1]], stdout=subprocess.DEVNULL,\n"
                          "                          env=dict(os.environ, RANK=str(r))) "
                          "for r in range(4)]\n"
                          "sys.exit(max(p.wait() for p in ranks))\n")
    p = subprocess.run([CLI, "--print-stderr", "off", "--sarif", os.path.join(d, "mpi.sarif"),
                        "--json", os.path.join(d, "mpi.json"), sys.executable, launcher, DEMO],
                       env=ENV, capture_output=True, text=True, timeout=120)
    log, report = json.load(open(os.path.join(d, "mpi.sarif"))), json.load(open(os.path.join(d, "mpi.json")))
    ranks = sorted(pr["pid"] for pr in report["processes"] if pr.get("cuda_initialized"))
    check("MPI-style: one report, the launcher and four ranks, each finding from all four",
          p.returncode == 0 and len(report["processes"]) == 5 and len(ranks) == 4 and
          len(report["findings"]) == 5 and
          all(sorted(f["processes"]) == ranks and f["count"] == 4 for f in report["findings"]) and
          len(log["runs"][0]["invocations"]) == 5 and "5 errors" in p.stderr and
          "in 5 processes" in p.stderr, (p.stderr[-300:], [f["processes"] for f in report["findings"]]))

    # Without the CLI: the shim writes the SARIF log itself at exit.
    sarif = os.path.join(d, "alone.sarif")
    p = subprocess.run([DEMO], env=dict(ENV, LD_PRELOAD=SHIM, ATTACHCHECK_SARIF=sarif,
                                         ATTACHCHECK_PRINT_STDERR="off"),
                       capture_output=True, text=True, timeout=60)
    alone = json.load(open(sarif)) if os.path.exists(sarif) else {}
    check("plain LD_PRELOAD: SARIF written at exit, valid, nothing left behind",
          alone and not schema_errors(alone) and len(alone["runs"][0]["results"]) == 5 and
          not [f for f in os.listdir(d) if f.endswith(".jsonl")], p.stderr)

    # Source lines from debug information, C++ names demangled, --strip-paths.
    cpp = os.path.join(BUILD, "tests", "cli", "cpp_frames")
    source = os.path.join(HERE, "cpp_frames.cpp")
    line = next(i for i, text in enumerate(open(source), 1) if "AC101 here" in text)
    checkout = SOURCE + "/"
    p = subprocess.run([CLI, "--strip-paths", checkout, "--sarif", os.path.join(d, "cpp.sarif"),
                        cpp], env=ENV, capture_output=True, text=True, timeout=60)
    check("text: demangled function, file and line of the call",
          f"in model::buffer<float>::attach_to_legacy_stream()+0x" in p.stderr and
          f" tests/cli/cpp_frames.cpp:{line} (cpp_frames+0x" in p.stderr, p.stderr[-1500:])
    check("text: a static function is named from the full symbol table",
          " in run()+0x" in p.stderr)
    cpp_log = json.load(open(os.path.join(d, "cpp.sarif")))
    loc = cpp_log["runs"][0]["results"][0]["locations"][0]
    check("SARIF: the primary location is the source line, relative to the checkout",
          loc["physicalLocation"]["artifactLocation"]["uri"] == "tests/cli/cpp_frames.cpp" and
          loc["physicalLocation"]["region"]["startLine"] == line and
          loc["logicalLocations"][0]["name"] == "model::buffer<float>::attach_to_legacy_stream()",
          loc)
    check("SARIF with source lines: valid", not schema_errors(cpp_log), schema_errors(cpp_log))

finish("sarif")
