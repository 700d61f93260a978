#!/usr/bin/env bash
# tests/gpu/run.sh BUILD - the GPU suite: the scenarios, the transparency cases
# (and their long runs - a million-operation soak... - unless SKIP_LONG=1) and
# the examples under attachcheck over the real driver (the two-device
# scenarios of multi_gpu.txt where there are two GPUs), then the benchmarks.
# With PROGRAMS naming a folder tests/programs/run.py build filled, NVIDIA's
# CUDA samples are run and checked under each backend too.
# Writes its logs to $OUT (or ./gpu-results). Build here with tools/build.sh;
# the build folder carries the libunwind copy the shim needs.
set -uo pipefail
build=$(cd "${1:?usage: tests/gpu/run.sh BUILD}" && pwd)
here=$(cd "$(dirname "$0")/../.." && pwd)
out=${OUT:-$here/gpu-results}
mkdir -p "$out"
status=0
{
  echo "== machine"
  nvidia-smi --query-gpu=name,driver_version --format=csv,noheader || true
  echo "== the driver API table against the real driver's exports"
  # The driver the dynamic linker loads, and the toolkit's stub and headers.
  driver_lib=$(python3 -c 'import ctypes; ctypes.CDLL("libcuda.so.1"); print(next(
    l.split()[-1] for l in open("/proc/self/maps") if "libcuda.so" in l))')
  cuda=${CUDA_HOME:-/usr/local/cuda}
  stub=$(ls "$cuda"/lib64/stubs/libcuda.so "$cuda"/lib/stubs/libcuda.so \
    "$cuda"/targets/*/lib/stubs/libcuda.so 2>/dev/null | head -1)
  python3 "$here/tests/cli/check_driver_api.py" "$here/shim/driver_api.inc" "${CC:-cc}" \
    "$cuda/include" "${stub:?no driver stub}" "$here/docs/driver-api.md" \
    "${driver_lib:?no libcuda.so.1}" >"$out/driver-api.txt" || status=1
  fold -w 200 "$out/driver-api.txt" | tail -8
  echo "== driver conformance (real driver, then through the shim)"
  "$build/tests/fakecuda/driver_conformance" || status=1
  LD_PRELOAD="$build/lib/libattachcheck.so" "$build/tests/fakecuda/driver_conformance" || status=1
  # The suite under each page-guard backend: protection keys where the CPU
  # has them (the run says so, or fails when it was asked for and is absent),
  # then mprotect.
  # Every run under it checks the guard's kept pages against those computed
  # from scratch at every transition (--guard-verify); the benchmarks do not.
  for backend in ${GUARD_BACKENDS:-pkeys mprotect}; do
    export ATTACHCHECK_GUARD_PAGES=$backend ATTACHCHECK_GUARD_VERIFY=on
    echo "== page guard: $backend"
    "$build/bin/attachcheck" --verbose 1 "$build/examples/attach_mistakes" 2>&1 \
      | grep 'page guard:' | head -2
    if [ "$backend" = pkeys ] && ! grep -qw pku /proc/cpuinfo; then
      echo "no protection keys on this CPU: the pkeys backend is not run"
      continue
    fi
    echo "== scenarios (real driver, $backend)"
    python3 "$here/tests/scenarios/run.py" --build "$build" --driver real || status=1
    echo "== golden reports: each rule's finding in every format (real driver, $backend)"
    python3 "$here/tests/golden/run.py" "$build" --driver real || status=1
    echo "== transparency: each case bare and under attachcheck (real driver, $backend)"
    small=/tmp/attachcheck-tp-small-tmpdir  # lost.full_tmpdir fills it (cases.txt)
    sh "$here/tests/transparency/small_tmpdir.sh" mount "$small"
    python3 "$here/tests/transparency/run.py" --build "$build" --driver real || status=1
    sh "$here/tests/transparency/small_tmpdir.sh" unmount "$small"
    if [ "${SKIP_LONG:-0}" != 1 ]; then
      echo "== transparency, long runs: a million-operation soak, signal threads... ($backend)"
      python3 "$here/tests/transparency/run.py" --build "$build" --driver real \
        --cases "$here/tests/transparency/cases_long.txt" || status=1
    fi
    echo "== two devices (real driver, $backend)"
    gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ')
    if [ "${gpus:-0}" -ge 2 ]; then
      python3 "$here/tests/scenarios/run.py" --build "$build" --driver real \
        --expectations "$here/tests/gpu/multi_gpu.txt" || status=1
    else
      echo "skip tests/gpu/multi_gpu.txt: nvidia-smi lists ${gpus:-0} GPU(s), it needs 2"
    fi
    echo "== examples (real driver, $backend)"
    python3 "$here/tests/scenarios/run.py" --build "$build" --driver real \
      --expectations "$here/tests/gpu/examples.txt" || status=1
    echo "== Python clients: cuda.bindings and CuPy (real driver, $backend)"
    python3 "$here/tests/python/run.py" "$build" --driver real --cupy || status=1
    if [ -n "${PROGRAMS:-}" ]; then
      echo "== third-party programs: NVIDIA's CUDA samples (real driver, $backend)"
      python3 "$here/tests/programs/run.py" run "$PROGRAMS" "$build" --backends "$backend" \
        --results "$out/programs" || status=1
    fi
  done
  unset ATTACHCHECK_GUARD_PAGES ATTACHCHECK_GUARD_VERIFY
  echo "== demo output"
  "$build/bin/attachcheck" "$build/examples/attach_mistakes" 2>&1 | head -60
  if [ "${SKIP_BENCH:-0}" != 1 ]; then
    echo "== benchmarks"
    "$here/bench/run.sh" "$build" "${BENCH_ROUNDS:-7}" || status=1
  fi
  exit "$status"
} 2>&1 | tee "$out/gpu-suite.log"
exit "${PIPESTATUS[0]}"
