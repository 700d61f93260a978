#!/usr/bin/env python3
"""Suppressions: RULE:PATTERN lines by rule id, rule name or *, matched against
a frame's function, source file or module, at FILE:LINE, or as a sequence
anchored at the program's top frame (^); suppressed findings kept in the
reports and counted, not printed and not failing the run; bad files refused
with the file and line; --gen-suppressions lines that each silence the
finding they were printed for and no other finding of the demo and the
wrong-case programs."""
import json
import os
import re
import subprocess
import tempfile

from harness import BUILD, CLI, DEMO, ENV, PREFIX, SHIM, check, finish, write_file

DEMO_RULES = ["AC101", "AC102", "AC107", "AC201", "AC301"]


def attachcheck(folder, *options):
    report = os.path.join(folder, "r.json")
    if os.path.exists(report):
        os.unlink(report)
    p = subprocess.run([CLI, "--json", report, "--error-exitcode", "9", *options, DEMO], env=ENV,
                       capture_output=True, text=True, timeout=60)
    return p, json.load(open(report)) if os.path.exists(report) else None


def printed(stderr):
    return sorted(set(re.findall(PREFIX + r"(AC\d{3}) ", stderr)))


with tempfile.TemporaryDirectory() as d:
    p, report = attachcheck(d)
    check("no suppressions: all five printed, status 9", printed(p.stderr) == DEMO_RULES and
          p.returncode == 9, (printed(p.stderr), p.returncode))

    supp = write_file(d, "a.supp", "# third-party noise\n\nAC101:main\n  AC102 : attach_mistakes \n"
                 "attach-during-capture:*\n")
    p, report = attachcheck(d, "--suppressions", supp)
    check("by id + function, id + module name, rule name + *: not printed",
          printed(p.stderr) == ["AC201", "AC301"], printed(p.stderr))
    marks = {f["rule"]: f.get("suppressed") for f in report["findings"]}
    check("kept in the JSON report, marked with the line that matched",
          len(report["findings"]) == 5 and marks["AC101"] == {"by": f"{supp}:3", "line": "AC101:main"}
          and marks["AC102"]["by"] == f"{supp}:4" and marks["AC201"] is None, marks)
    check("counted apart in the summary", report["summary"]["errors"] == 2 and
          report["summary"]["suppressed"] == 3, report["summary"])
    check("summary line says so", "2 errors, 0 warnings, 0 notes (2 occurrences; 3 suppressed)" in p.stderr,
          p.stderr[-300:])

    every = write_file(d, "b.supp", "*:*mistakes.c\n")
    p, report = attachcheck(d, "--suppressions", every)
    check("a source file glob silences all: the run passes", p.returncode == 0 and
          printed(p.stderr) == [] and report["summary"]["suppressed"] == 5, p.returncode)

    one, two = write_file(d, "c.supp", "AC201:main\n"), write_file(d, "d.supp", "AC301:main\n")
    p, report = attachcheck(d, "--suppressions", one, "--suppressions", two)
    check("--suppressions repeats: both files apply", printed(p.stderr) == ["AC101", "AC102",
          "AC107"], printed(p.stderr))

    p, report = attachcheck(d, "--suppressions", write_file(d, "e.supp", "AC301:no_such_function\n"))
    check("a pattern that matches nothing suppresses nothing", len(printed(p.stderr)) == 5)

    for name, text, words in [
            ("unknown rule", "AC101:main\nAC999:main\n", ["f.supp:2", "unknown rule 'AC999'"]),
            ("no colon", "# ok\nmain\n", ["f.supp:2", "expected RULE:PATTERN"]),
            ("empty pattern", "AC101:\n", ["f.supp:1", "empty pattern"]),
            ("NUL byte", "AC101:ma\0in\n", ["f.supp:1", "not text"]),
            ("line too long", "AC101:" + "x" * 2000 + "\n", ["f.supp:1", "too long"])]:
        bad = write_file(d, "f.supp", text)
        p, _ = attachcheck(d, "--suppressions", bad)
        check(f"bad file ({name}): refused before the run, with file and line",
              p.returncode == 2 and all(w in p.stderr for w in words) and "AC1" not in
              "".join(re.findall(PREFIX + r"AC\d+", p.stderr)), (p.returncode, p.stderr))
    p, _ = attachcheck(d, "--suppressions", os.path.join(d, "missing.supp"))
    check("missing file: refused", p.returncode == 2 and "missing.supp" in p.stderr, p.stderr)
    p, _ = attachcheck(d, "--suppressions", d)
    check("a folder: refused", p.returncode == 2 and "cannot read" in p.stderr, p.stderr)

    # Under plain LD_PRELOAD a bad file is said once and nothing is suppressed.
    p = subprocess.run([DEMO], env=dict(ENV, LD_PRELOAD=SHIM, ATTACHCHECK_SUPPRESSIONS=bad),
                       capture_output=True, text=True, timeout=60)
    check("LD_PRELOAD with a bad file: one error, every finding still printed",
          p.stderr.count("no finding is suppressed") == 1 and len(printed(p.stderr)) == 5,
          p.stderr[:400])

    # --gen-suppressions on: the printed lines, used as a file, silence all of it.
    p, _ = attachcheck(d, "--gen-suppressions", "on")
    lines = re.findall(PREFIX + r"suppress with: (\S.*)", p.stderr)
    check("--gen-suppressions: one line per finding", len(lines) == 5 and
          all(re.split("[:/]", l)[0] in DEMO_RULES for l in lines), lines)
    p, report = attachcheck(d, "--suppressions", write_file(d, "gen.supp", "\n".join(lines) + "\n"))
    check("the generated lines suppress every finding they were printed for",
          report["summary"]["suppressed"] == 5 and p.returncode == 0, report["summary"])

# Programs with findings the generated lines must tell apart: the demo, a
# first program (two wrong arguments of one launch), and wrong cases of the
# scenarios (several findings of one rule in one function, every kind).
PROGRAMS = [[DEMO], [os.path.join(BUILD, "tests", "golden", "golden_first_program")]] + [
    [os.path.join(BUILD, "tests", "scenarios", words[0])] + words[1:] for words in (
        ["attach_rules", "link", "pinned_memory"], ["attach_rules", "link", "pageable_memory"],
        ["attach_rules", "link", "legacy_single"], ["host_access", "destroy_then_touch"],
        ["host_access", "global_touch_busy"], ["host_access", "reattach_unordered"],
        ["host_access", "read_syscall"], ["device_access", "plain_arg_foreign"],
        ["device_access", "struct_arg_foreign"], ["device_access", "async_copy"],
        ["device_access", "graph_foreign"], ["device_access", "managed_variable"])]


def run_program(folder, program, *options):
    report = os.path.join(folder, "p.json")
    if os.path.exists(report):
        os.unlink(report)
    p = subprocess.run([CLI, "--json", report, *options, "--"] + program, env=ENV,
                       capture_output=True, text=True, timeout=60)
    return p, json.load(open(report))["findings"] if os.path.exists(report) else []


def test_anchors(d):
    """^ anchors at the program's top frame, FILE:LINE names one line."""
    for line, expected in [("AC101:attach_mistakes.c:53", ["AC101"]),
                           ("AC102:attach_mistakes.c:53", []),
                           ("*:^main", DEMO_RULES), ("*:^_start", []),
                           ("AC201:^attach_mistakes.c:71;nothing_else", []),
                           ("AC301/arg0:^main", ["AC301"]), ("AC301/arg1:^main", [])]:
        _, report = attachcheck(d, "--suppressions", write_file(d, "anchor.supp", line + "\n"))
        got = sorted(f["rule"] for f in report["findings"] if f.get("suppressed"))
        check(f"{line}: suppresses {expected or 'nothing'}", got == expected, got)


def expected_start(f):
    """How a finding's generated line begins: its rule, problem and top own frame."""
    arg = f.get("argument") or {}
    problem = (f"arg{arg['index']}" if arg.get("kind") == "parameter" else "variable" if arg else
               next((o["role"] for o in f.get("operands", []) if o.get("at_fault")), ""))
    top = next(fr for fr in f["stack"] if fr.get("code") is not None or fr.get("file", "").endswith(
        (".c", ".h", ".cu")) and "../" not in fr.get("file", ""))
    return f"{f['rule']}{'/' + problem if problem else ''}:^{os.path.basename(top['file'])}:" \
           f"{top['line']}"


def test_generated_lines_are_narrow(d):
    """Each line --gen-suppressions prints silences its finding, and no finding
    of any of the programs is silenced by another's line (every finding is
    suppressed by its own line whichever comes first in the file)."""
    own = {}  # (program index, finding key) -> its line
    for i, program in enumerate(PROGRAMS):
        p, findings = run_program(d, program, "--gen-suppressions", "on")
        lines = re.findall(PREFIX + r"suppress with: (\S.*)", p.stderr)
        check(f"{os.path.basename(program[0])} {' '.join(program[1:])}: a line per finding",
              findings and len(lines) == len(findings), (lines, [f["rule"] for f in findings]))
        # Printed as reported (a CPU access late), listed in the model's order: paired by place.
        own.update({(i, f["key"]): line for f in findings for line in lines
                    if re.match(re.escape(expected_start(f)) + "(;|$)", line)})
    check("no two findings get the same line", len(set(own.values())) == len(own),
          sorted(own.values()))
    every = list(own.values())
    for name, order in [("forward", every), ("reversed", every[::-1])]:
        supp = write_file(d, name + ".supp", "\n".join(order) + "\n")
        wrong = []
        for i, program in enumerate(PROGRAMS):
            _, findings = run_program(d, program, "--suppressions", supp)
            for f in findings:  # a CPU access may be reported before or after the call
                got = (f.get("suppressed") or {}).get("line")
                if got != own.get((i, f["key"])):
                    wrong.append((os.path.basename(program[-1]), f["rule"], got,
                                  own.get((i, f["key"]))))
        check(f"the generated lines ({name}): each finding silenced by its own line only",
              not wrong, wrong)


with tempfile.TemporaryDirectory() as d:
    test_anchors(d)
    test_generated_lines_are_narrow(d)

finish("suppressions")
