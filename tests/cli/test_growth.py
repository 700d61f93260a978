#!/usr/bin/env python3
"""How the shim's work grows with what is alive, counted rather than timed: every mode of
bench/scale.c at N, 2N and 4N operations, run bare and under the shim over the stand-in driver
with valgrind counting the instructions executed (callgrind, every thread's). What the shim adds
is the difference of the two counts; the growth of one doubling over the doubling before it,

    (extra(4N) - extra(2N)) / (extra(2N) - extra(N)),

is 2.0 when each operation costs the same however many are alive (start-up and exit cancel
out) and 4.0 when it costs in proportion to them. A row over GROWTH_MAX fails: an operation
whose cost walks what is alive (a refresh reading every range, a stream operation visiting every
stream) doubles its count again at each doubling, so it cannot hide in a timing's noise. The
counts are of one machine's compiler and C library, so only their ratios are judged; the
instructions each operation adds (the last doubling's increment over its N) are printed, the
measure bench/scale.sh gives in seconds on the GPU machine.

The page guard runs on page protection (`--guard-pages mprotect`), which valgrind carries out
(it does not know the protection-key instructions); the keys backend's growth is
bench/scale.sh's on a CPU with keys.
Arguments: BUILD [MODE ...] (default: every mode; GROWTH_N sets N, default 1000)."""
import os
import re
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

from harness import BUILD, ENV, SHIM, check, finish

SCALE = os.path.join(BUILD, "bench", "bench_scale")
MODES = ["live", "free", "attach", "attach-host", "first-busy", "stream-cycles",
         "streams-alive", "streams-ended", "syscalls"]
GROWTH_MAX = 2.5
N = int(os.environ.get("GROWTH_N", "1000"))


def instructions(mode, n, shim):
    """The instructions one run of bench_scale MODE n executed (valgrind's count)."""
    env = dict(ENV, ATTACHCHECK_PRINT_STDERR="off", ATTACHCHECK_GUARD_PAGES="mprotect")
    if shim:
        env["LD_PRELOAD"] = SHIM
    cmd = ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", SCALE, mode, str(n)]
    p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)
    got = re.search(r"Collected : (\d+)", p.stderr)
    if p.returncode != 0 or not got:
        raise RuntimeError(f"{' '.join(cmd[3:])} (shim {shim}): status {p.returncode}\n"
                           f"{p.stderr[-1500:]}")
    return int(got.group(1))


def main():
    if not shutil.which("valgrind"):
        print("shim.growth_valgrind: valgrind is not installed (tools/deps.sh installs it)")
        sys.exit(77)
    modes = sys.argv[2:] or MODES
    sizes = (N, 2 * N, 4 * N)
    runs = [(m, n, shim) for m in modes for n in sizes for shim in (False, True)]
    with ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
        counts = dict(zip(runs, pool.map(lambda r: instructions(*r), runs)))
    print(f"{'mode':<14} {'shim adds at ' + str(N):>18} {'per operation':>14} {'growth':>7}")
    for m in modes:
        extra = [counts[(m, n, True)] - counts[(m, n, False)] for n in sizes]
        first, second = extra[1] - extra[0], extra[2] - extra[1]
        # A mode whose operations the shim adds nothing to (nothing to grow) has first ~ 0.
        growth = second / first if first > 0 else (0.0 if second <= 0 else float("inf"))
        print(f"{m:<14} {extra[0]:>18,} {second / (2 * N):>14,.0f} {growth:>7.2f}")
        check(f"{m}: what each operation costs the shim does not grow with what is alive "
              f"(growth {growth:.2f} per doubling, at most {GROWTH_MAX})",
              growth <= GROWTH_MAX, f"extra instructions at {sizes}: {extra}")


main()
finish("shim.growth_valgrind")
