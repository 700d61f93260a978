#!/usr/bin/env python3
"""Stacks kept per call site: the shim reads a stack back, rather than unwinding again, when a
call comes from the same place with every return address still where it was. Through the same
function at the same depth from different callers, and through a frame that changes size, each
finding must still have its own stack and count, and an attach's stack kept with the memory must
be that attach's (stack_sites.c)."""
import json
import os
import re
import tempfile

from harness import BUILD, CLI, check, finish, run, x86_64

PROG = os.path.join(BUILD, "tests", "cli", "stack_sites")
OWN = {"attach_one", "from_left", "from_right", "with_array", "last_word", "launch_one",
       "launch_left", "launch_right", "main"}


def functions(stack):
    """The program's own frames (the C library's may be unnamed where it has no symbols)."""
    return [f.get("function") for f in stack if f.get("function") in OWN]


with tempfile.TemporaryDirectory() as d:
    p = run([CLI, "--verbose", "1", "--json", f"{d}/r.json", PROG])
    report = json.load(open(f"{d}/r.json"))
    # The second loop's calls are in other lines of main: findings of their own.
    found, counts = {}, {}
    for f in report["findings"]:
        k = tuple(functions(f["stack"]))
        found.setdefault(k, f)
        counts[k] = counts.get(k, 0) + f["count"]
    check("the program ran as without attachcheck", p.returncode == 0 and p.stdout == "done\n",
          (p.returncode, p.stdout, p.stderr[-800:]))
    check("one finding per caller, each counted apart", counts == {
        ("attach_one", "from_left", "main"): 9,
        ("attach_one", "from_right", "main"): 9,
        ("attach_one", "main"): 3,
        ("attach_one", "from_left", "with_array", "main"): 3,
        ("last_word", "main"): 1,
        ("launch_one", "launch_left", "main"): 6,
        ("launch_one", "launch_right", "main"): 6} and len(report["findings"]) == 9, counts)
    before = {("attach_one", "from_right", "main"): ("attach_one", "from_left", "main"),
              ("attach_one", "main"): ("attach_one", "from_right", "main"),
              ("attach_one", "from_left", "with_array", "main"): ("attach_one", "main"),
              ("last_word", "main"): ("attach_one", "from_right", "main")}
    attached = {k: tuple(functions(found[k]["allocation"]["attached"]["stack"]))
                for k in before if k in found}
    check("each finding's memory was last attached where the attach before it was made",
          attached == before, attached)
    kept = re.search(r"stacks: \d+ captured \((\d+) of them kept", p.stderr)
    # x86-64 reads kept stacks back (the second loop's and the launches', from the third time
    # round: a stack is kept when it comes again); elsewhere every stack is unwound.
    want = (lambda n: n >= 14) if x86_64(PROG) else (lambda n: n == 0)
    check("stacks read back from the same call sites", kept and want(int(kept.group(1))),
          kept and kept.group(0))

    steps = re.search(r"attaches: (\d+), wall time each: stack (\d+) ns, judging section (\d+) ns, "
                      r"driver (\d+) ns, recording section (\d+) ns", p.stderr)
    check("--verbose times each of the program's 26 attaches, every step of them",
          steps and steps.group(1) == "26" and all(int(g) > 0 for g in steps.groups()[1:]),
          steps and steps.group(0))

finish("shim.stack_sites")
