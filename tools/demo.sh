#!/usr/bin/env bash
# tools/demo.sh - builds attachcheck and runs the demo program (three classic
# attach mistakes, examples/attach_mistakes.c) under it: over the real driver
# when this machine has an NVIDIA GPU, otherwise over the stand-in driver.
# Works on a bare Debian/Ubuntu with the CUDA toolkit: see tools/deps.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
# Debian packages only: the demo needs nothing from PyPI.
tools/build.sh build
echo
report=build/demo-report.json
if command -v nvidia-smi >/dev/null && nvidia-smi -L >/dev/null 2>&1; then
  echo "attachcheck demo: running over the real driver ($(nvidia-smi --query-gpu=name --format=csv,noheader | head -1))"
  driver_env=()
else
  echo "attachcheck demo: no GPU here, so the program runs over the stand-in driver"
  echo "(tests/fakecuda: it answers every attach call as the real driver does, docs/driver-facts.md)"
  driver_env=(LD_LIBRARY_PATH="$PWD/build/tests/fakecuda")
fi
echo
# Each run replaces the last run's report.
env "${driver_env[@]}" build/bin/attachcheck --json "$report" build/examples/attach_mistakes
echo
echo "attachcheck demo: the JSON report is $report:"
python3 - "$report" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
for f in r["findings"]:
    # Each kind has its own facts: a call's answer, a launch's kernel, a CPU access.
    what = f.get("api") or f.get("work", {}).get("kernel") or f.get("access", {}).get("via") or f.get("kind", "")
    answer = f.get("driver", {}).get("name")
    print(f"  {f['rule']} {f['name']:28} {what}" + (f" -> {answer}" if answer else ""))
print("  summary:", r["summary"])
PY
