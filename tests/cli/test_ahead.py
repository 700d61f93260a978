#!/usr/bin/env python3
"""Closed memory moved to the GPU ahead of its work (shim/guard/ahead.c), counted by the guard
itself (--verbose 1): under mprotect a kernel's (a graph's too) or a set's fresh closed memory
is prefetched once, and nothing is where the memory is open, captured, advised, too large for a
kernel argument, or where the option, the guard or protection keys leave it alone; memory moved
before is moved again only where the CPU took 256 KiB or more of it since, and only those pages;
the kernel is asked that only after the process took a page fault, and a program's own prefetch to
the CPU has the memory moved whole again.
What the program sees of it is tests/scenarios/guard_ahead.c's rows.
ATTACHCHECK_TEST_REAL_DRIVER=1 runs it over the real driver."""
import os
import re

from harness import BUILD, CLI, ENV, check, finish, run

PROG = os.path.join(BUILD, "tests", "scenarios", "guard_ahead")
env = dict(os.environ) if os.environ.get("ATTACHCHECK_TEST_REAL_DRIVER") else ENV
MPROTECT = ["--guard-pages", "mprotect"]


def prefetches(case, options):
    """How many prefetches the guard made, their MiB (a tenth either way) and how many the
    driver refused, in a run of case; the program's status."""
    p = run([CLI, "--verbose", "1"] + options + ["--", PROG, case], env=env)
    m = re.search(r"page guard: (\d+) prefetches of closed memory to the GPU ahead of work "
                  r"\(([\d.]+) MiB\), (\d+) refused", p.stderr)
    return (int(m.group(1)), float(m.group(2)), int(m.group(3))) if m else (0, 0.0, 0), p


# The guard moves memory moved before again from the first page the CPU holds to the last, where
# that is 256 KiB or more; the program prints that span as the kernel tells it (how much a CPU write
# takes back is the driver's choice). Where mincore refuses closed pages (qemu-user does), the
# guard cannot tell what the CPU holds and moves the memory whole again, as it did before it looked
# - unless the process took no page fault since, when it does not ask (the count it prints).
HOLDS = run([PROG, "mincore_answers"], env=env).returncode == 0


def unasked(p):
    """How often the guard left memory moved before as it was without asking the kernel (no page
    fault since) in the run p."""
    m = re.search(r"\((\d+) without asking the kernel", p.stderr)
    return int(m.group(1)) if m else 0


def moved_again(p):
    """What the guard should have done in the run p: its prefetches, their MiB, refusals."""
    m = re.search(r"the CPU holds (\d+) bytes", p.stdout)
    if not HOLDS or not m:
        return (2 - unasked(p), 2.0 - unasked(p), 0)
    held = int(m.group(1))
    return (2, 1.0 + held / (1 << 20), 0) if held >= 256 << 10 else (1, 1.0, 0)


for case, options, want, status in [
        ("fresh_kernel", MPROTECT, (1, 1.0, 0), 0),
        ("fresh_two_kernels", MPROTECT, (1, 1.0, 0), 0),
        ("again_kernel", MPROTECT, moved_again, 0),
        ("touched_kernel", MPROTECT, moved_again, 0),
        ("touched_byte_kernel", MPROTECT, moved_again, 0),
        ("again_many_kernel", MPROTECT,
         (lambda p: (1, 1.0, 0) if HOLDS else (8 - unasked(p), 8.0 - unasked(p), 0)), 0),
        ("placed_kernel", MPROTECT, (2, 2.0, 0), 5),
        ("graph_kernel", MPROTECT, (1, 1.0, 0), 0),
        ("fresh_set", MPROTECT, (1, 1.0, 0), 0),
        ("large_set", MPROTECT, (1, 1.0, 0), 0),
        ("own_cpu_prefetch_kernel", MPROTECT, (1, 1.0, 0), 5),
        ("open_kernel", MPROTECT, (0, 0.0, 0), 0),
        ("captured_kernel", MPROTECT, (0, 0.0, 0), 0),
        ("advised_kernel", MPROTECT, (0, 0.0, 0), 0),
        ("large_kernel", MPROTECT, (0, 0.0, 0), 0),
        ("fresh_kernel", MPROTECT + ["--guard-prefetch", "off"], (0, 0.0, 0), 0),
        ("fresh_kernel", ["--guard-pages", "off"], (0, 0.0, 0), 0)]:
    got, p = prefetches(case, options)
    want = want(p) if callable(want) else want
    check(f"{case} {' '.join(options)}: {want[0]} prefetch(es), exit {status}",
          (got[0], got[2]) == (want[0], want[2]) and abs(got[1] - want[1]) <= 0.1
          and p.returncode == status, (got, p.returncode, p.stderr[-600:]))
# Memory moved before is asked about only after a busy period in which the process took a page
# fault: in eight quiet periods, seven are left as they were, some without asking the kernel.
if HOLDS:
    p = run([CLI, "--verbose", "1"] + MPROTECT + ["--", PROG, "again_many_kernel"], env=env)
    m = re.search(r"(\d+) times memory moved before was left where the GPU held it "
                  r"\((\d+) without asking", p.stderr)
    check("again_many_kernel: 7 left where the GPU held it, some without asking the kernel",
          m and int(m.group(1)) == 7 and int(m.group(2)) >= 1, p.stderr[-600:])
finish("test_ahead")
