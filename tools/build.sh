#!/usr/bin/env bash
# tools/build.sh [BUILD_DIR] - configures and builds attachcheck (default: build/).
set -euo pipefail
cd "$(dirname "$0")/.."
tools/deps.sh
build=${1:-build}
export PATH="$PATH:/usr/local/cuda/bin"
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$build" -j "$(nproc)"
