#!/usr/bin/env python3
"""Report files: %p and %q{NAME} in their names, no overwriting without
--overwrite, never through a symbolic link, --log-file, --print-limit, and a
record stream torn by a killed process (every complete record kept, the
torn one counted, the run failed)."""
import json
import os
import re
import sys
import tempfile

from harness import CLI, DEMO, ENV, FORKS, PREFIX, SHIM, check, finish, run, write_file


def findings_printed(text):
    return len(re.findall(r"^" + PREFIX + r"AC\d{3} ", text, re.M))


with tempfile.TemporaryDirectory() as d:
    # %p and %q{NAME} under the CLI: the program's pid, the CLI's environment.
    p = run([CLI, "--print-stderr", "off", "--json", f"{d}/r.%q{{RANK}}.%p.json", DEMO],
            dict(ENV, RANK="3"))
    made = [f for f in os.listdir(d) if f.startswith("r.3.")]
    pid = json.load(open(os.path.join(d, made[0])))["process"]["pid"] if made else None
    check("CLI: %q{RANK} and %p (the program's pid) in the report name",
          p.returncode == 0 and made == [f"r.3.{pid}.json"], (made, p.stderr))
    p = run([CLI, "--json", f"{d}/r.%q{{NO_SUCH_VARIABLE}}.json", DEMO])
    check("CLI: %q{UNSET} refused before the run", p.returncode == 2 and
          "NO_SUCH_VARIABLE is not set" in p.stderr and "AC101" not in p.stderr, p.stderr)
    p = run([CLI, "--json", f"{d}/r.%x.json", DEMO])
    check("CLI: an unknown %-escape refused", p.returncode == 2 and "unknown %x" in p.stderr)

    # Under plain LD_PRELOAD, %p is each process's own: a forked child gets its own report.
    env = dict(ENV, LD_PRELOAD=SHIM, ATTACHCHECK_JSON=f"{d}/each.%p.json",
               ATTACHCHECK_PRINT_STDERR="off")
    p = run([FORKS], env)
    each = sorted(f for f in os.listdir(d) if f.startswith("each."))
    rules = sorted(r for f in each for r in
                   (x["rule"] for x in json.load(open(os.path.join(d, f)))["findings"]))
    check("LD_PRELOAD: %p gives each process its own report", len(each) == 2 and
          rules == ["AC101", "AC101", "AC102"] and not [f for f in os.listdir(d) if
                                                        f.endswith(".jsonl")], (each, rules))
    p = run([DEMO], dict(env, ATTACHCHECK_JSON=f"{d}/x.%q{{NOPE}}.json"))
    check("LD_PRELOAD: %q{UNSET}: said, findings still on stderr",
          "NOPE is not set" in p.stderr and p.returncode == 0, p.stderr[:300])

    # An existing report is replaced, as valgrind and compute-sanitizer do, unless --overwrite
    # off; never through a symbolic link.
    target = write_file(d, "kept.json", "precious")
    p = run([CLI, "--overwrite", "off", "--json", target, DEMO])
    check("--overwrite off: an existing report file is refused before the run",
          p.returncode == 2 and "already exists" in p.stderr and open(target).read() == "precious",
          p.stderr)
    p = run([CLI, "--print-stderr", "off", "--json", target, DEMO])
    check("by default an existing report is replaced", p.returncode == 0 and
          json.load(open(target))["summary"]["errors"] == 5)
    # Under plain LD_PRELOAD a report of an earlier run is replaced; one another process of
    # the same run wrote is not (its findings would be lost in silence).
    same = write_file(d, "same.json", "an earlier run's")
    os.utime(same, (os.path.getmtime(same) - 60,) * 2)  # a minute ago
    p = run([FORKS], dict(env, ATTACHCHECK_JSON=same))
    written = json.load(open(same))
    check("LD_PRELOAD: an earlier run's report replaced; the same run's second writer refused, "
          "saying so", len(written["processes"]) == 1 and
          p.stderr.count("was written by another process of this run") == 1, p.stderr[-400:])
    victim = write_file(d, "victim", "untouched")
    os.symlink(victim, os.path.join(d, "link.json"))
    for overwrite in ["off", "on"]:
        p = run([CLI, "--overwrite", overwrite, "--json", os.path.join(d, "link.json"), DEMO])
        check(f"a symbolic link as report path is refused (--overwrite {overwrite})",
              p.returncode == 2 and "symbolic link" in p.stderr and
              open(victim).read() == "untouched", p.stderr)
    # Under plain LD_PRELOAD the shim refuses it at exit and keeps the records.
    p = run([DEMO], dict(env, ATTACHCHECK_JSON=os.path.join(d, "link.json")))
    folders = [f for f in os.listdir(d) if f.startswith("link.json.") and
               os.path.isdir(os.path.join(d, f))]
    streams = [f for f in folders for s in os.listdir(os.path.join(d, f)) if s.endswith(".jsonl")]
    check("LD_PRELOAD: a symbolic link is not written through; the records are kept",
          "symbolic link" in p.stderr and open(victim).read() == "untouched" and len(streams) == 1,
          p.stderr[-300:])

    # --log-file: the text goes there, the summary too; stderr keeps only the program's output.
    log = os.path.join(d, "run.log")
    p = run([CLI, "--log-file", log, DEMO])
    text = open(log).read() if os.path.exists(log) else ""
    check("--log-file: every finding and the summary in the file, none on stderr",
          findings_printed(text) == 5 and "summary: 5 errors" in text and
          findings_printed(p.stderr) == 0, (findings_printed(text), p.stderr[-200:]))
    p = run([CLI, "--overwrite", "off", "--log-file", log, DEMO])
    check("--log-file with --overwrite off: an existing log is refused too", p.returncode == 2 and
          "already exists" in p.stderr)
    p = run([CLI, "--log-file", log, FORKS])
    text = open(log).read()
    check("--log-file: both processes of a run append to one log, started afresh",
          findings_printed(text) == 3 and text.count("summary:") == 1, text[-300:])
    p = run([CLI, "--log-file", f"{d}/per.%p.log", FORKS])
    logs = [f for f in os.listdir(d) if f.startswith("per.")]
    check("--log-file with %p: a log per process", len(logs) == 2, logs)

    # --print-limit: the first N printed, the rest said once and kept in the report.
    p = run([CLI, "--print-limit", "2", "--json", f"{d}/limited.json", DEMO])
    report = json.load(open(f"{d}/limited.json"))
    check("--print-limit 2: two printed, one notice, all five in the report",
          findings_printed(p.stderr) == 2 and p.stderr.count("print limit of 2") == 1 and
          len(report["findings"]) == 5, p.stderr[-400:])
    p = run([CLI, "--print-limit", "-1", DEMO])
    check("--print-limit -1 refused", p.returncode == 2 and "--print-limit" in p.stderr)

    # --target-processes: a shell that runs the program (exec) is the application.
    for target, processes, findings in [("all", 2, 5), ("application-only", 1, 0)]:
        out = f"{d}/target-{target}.json"
        p = run([CLI, "--print-stderr", "off", "--require-cuda-init", "no", "--target-processes",
                 target, "--json", out, "/bin/sh", "-c", f"{DEMO} >/dev/null"])
        report = json.load(open(out))
        check(f"--target-processes {target}: {processes} process(es), {findings} findings",
              len(report["processes"]) == processes and len(report["findings"]) == findings,
              (len(report["processes"]), len(report["findings"])))
    p = run([CLI, "--target-processes", "application-only", "--json", f"{d}/forked.json", FORKS])
    check("--target-processes application-only: the program's own forks stay checked",
          len(json.load(open(f"{d}/forked.json"))["processes"]) == 2)

    # A process killed in the middle of writing a record: the merge keeps the rest.
    script = write_file(d, "torn.py",
                        "import os\n"
                        "path = os.path.join(os.environ['ATTACHCHECK_SESSION_DIR'], "
                        "f'{os.getpid()}.jsonl')\n"
                        "open(path, 'a').write('{\"type\": \"finding\", \"rule\": \"AC1')\n"
                        "os._exit(0)\n")
    p = run([CLI, "--require-cuda-init", "no", "--json", f"{d}/torn.json", sys.executable,
             script])
    report = json.load(open(f"{d}/torn.json"))
    check("a torn record: dropped and counted, the process record kept",
          report["summary"]["dropped_records"] == 1 and len(report["processes"]) >= 1 and
          "torn: 1 partial record" in p.stderr and p.returncode == 5,
          (report["summary"], p.stderr[-300:]))

finish("files")
