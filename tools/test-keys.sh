#!/usr/bin/env bash
# tools/test-keys.sh - the tests of build/ (tools/test.sh builds it) once more
# with the page guard on protection keys, the default where the CPU has them:
# on an emulated CPU that has keys (tools/pkeys-vm.sh) when this one has none.
# Where this CPU has keys the tests already ran on them, and where no
# emulated CPU can be started (not x86_64, no root, no qemu) it says so in a
# line and skips. The browser and valgrind tests, the packages and the wheel
# (cpack, a venv), the MPI launcher and the CTest example are left out: they
# take minutes under the emulator - past their own time limits when the
# machine is busy - and do not touch the guard; the main leg runs them.
set -euo pipefail
cd "$(dirname "$0")/.."
if grep -qw pku /proc/cpuinfo; then
  echo "test-keys: this CPU has protection keys: the tests above ran on them"
  exit 0
fi
if [ "$(uname -m)" != x86_64 ] || [ "$(id -u)" != 0 ]; then
  echo "test-keys: skipped: an emulated CPU with keys needs root on x86_64"
  exit 0
fi
# A test that fails is run once more, alone: under the emulator a test with a
# time limit (a hang check) can run out of time while another test runs
# beside it. What passed only the second time is named. The failed tests are
# run again by name: ctest's --rerun-failed, after a run with -E, once ran
# another test under the failed one's number, and a hang passed.
set +e
tools/pkeys-vm.sh 'cd build && ctest --output-on-failure -j "$(nproc)" --timeout 600 \
  -E "report\.html|valgrind|package\.|python\.clients_wheel|mpi\.launcher|example\.ctest" ||
  { echo "test-keys: running the failed tests again, one at a time:" &&
    names=$(sed -n "s/^[0-9]*://p" Testing/Temporary/LastTestsFailed.log | paste -sd "|") &&
    [ -n "$names" ] && echo "$names" &&
    ctest --output-on-failure --timeout 600 -R "^($names)\$"; }'
status=$?
set -e
if [ "$status" = 125 ]; then
  echo "test-keys: skipped: the emulated CPU did not start or finish (see above)"
  exit 0
fi
exit "$status"
