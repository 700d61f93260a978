#!/usr/bin/env bash
# tools/build.sh [BUILD_DIR] [--python-clients] [CMAKE_OPTION...] - installs
# what the build needs (tools/deps.sh), then configures and builds attachcheck
# (default: build/), printing a line per quarter of the build instead of every
# compiler command; the whole output is in BUILD_DIR/build.log. With
# --python-clients it also installs cuda-bindings for the Python client tests.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
shift || true
python_clients=
cmake_options=()
for arg in "$@"; do
  case $arg in
    --python-clients) python_clients=1 ;;
    *) cmake_options+=("$arg") ;;
  esac
done
# One interpreter for everything: the Debian python3 that tools/deps.sh installs.
# .pydeps/ (compiled modules) is filled for it and ctest runs it, whatever
# python3 comes first on PATH.
python=/usr/bin/python3
tools/deps.sh ${python_clients:+--python-clients "$python"}
export PATH="$PATH:/usr/local/cuda/bin"

mkdir -p "$build"
log=$build/build.log
fail() {
  tail -n 40 "$log" >&2
  echo "attachcheck: $1 failed; the whole output is in $log" >&2
  exit 1
}

# The make progress ("[ 42%] Building C object ...") as one line per quarter.
summarise_progress() {
  awk -v build="$build" '
    match($0, /^\[ *[0-9]+%\]/) {
      pct = substr($0, RSTART + 1, RLENGTH - 3) + 0
      if (int(pct / 25) > shown && pct < 100) {
        shown = int(pct / 25)
        printf "attachcheck:   %s: %d%% built\n", build, pct
        fflush()
      }
    }'
}

echo "attachcheck: configuring $build"
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DPython3_EXECUTABLE="$python" \
  ${cmake_options[@]+"${cmake_options[@]}"} >"$log" 2>&1 || fail "configuring $build"
echo "attachcheck: building $build (a minute or two)..."
start=$SECONDS
cmake --build "$build" -j "$(nproc)" 2>&1 | tee -a "$log" | summarise_progress \
  || fail "building $build"
echo "attachcheck: built $build in $((SECONDS - start)) s"
