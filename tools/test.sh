#!/usr/bin/env bash
# tools/test.sh - builds attachcheck and runs every test: unit tests, the
# scenarios over the stand-in driver, the CLI contract, the entry table; then
# the unit tests again under AddressSanitizer and UndefinedBehaviorSanitizer,
# with a short run of each libFuzzer target and the scenarios and transparency
# cases over a sanitized shim; then the clang-format check. No GPU needed.
set -euo pipefail
cd "$(dirname "$0")/.."
tools/build.sh build
(cd build && ctest --output-on-failure -j "$(nproc)")

echo "== unit tests, fuzz targets (docs/fuzzing.md), shim scenarios under ASan+UBSan"
cmake -S . -B build-asan -DATTACHCHECK_SANITIZE=ON -DCMAKE_C_COMPILER=clang >/dev/null
cmake --build build-asan -j "$(nproc)"
(cd build-asan && ASAN_OPTIONS=detect_leaks=1 ctest --output-on-failure -j "$(nproc)")

echo "== clang-format"
git ls-files '*.c' '*.h' '*.cu' '*.cpp' | xargs clang-format --dry-run -Werror
echo "== all tests passed"
