#!/usr/bin/env bash
# tools/deps.sh - installs what the build needs from Debian's packages (as
# root), or prints the command to run. The CUDA toolkit (cuda.h, nvcc) is
# expected at /usr/local/cuda or on PATH; it is not a Debian package here.
set -euo pipefail
cd "$(dirname "$0")/.."
packages=(cmake make pkg-config gcc g++ libc6-dev python3 python3-jsonschema clang clang-format
          libunwind-dev uthash-dev libjansson-dev libdw-dev groff-base)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  if [ "$(id -u)" = 0 ]; then
    echo "attachcheck: installing ${missing[*]}"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
  else
    echo "attachcheck: missing packages; run as root:" >&2
    echo "  apt-get install -y ${missing[*]}" >&2
    exit 1
  fi
fi
# cuda-python's driver bindings, for the Python clients' tests over the stand-in driver
# (tests/python): into .pydeps/ beside the sources, for the Python that runs the tests.
if ! PYTHONPATH=.pydeps python3 -c 'import cuda.bindings.driver' 2>/dev/null; then
  echo "attachcheck: installing cuda-bindings (PyPI) into .pydeps/"
  PIP_ROOT_USER_ACTION=ignore python3 -m pip install -q --disable-pip-version-check \
    --target .pydeps "cuda-bindings==13.*" \
    || { echo "attachcheck: cannot install cuda-bindings from PyPI" >&2; exit 1; }
fi
if ! command -v nvcc >/dev/null && [ ! -e /usr/local/cuda/include/cuda.h ]; then
  echo "attachcheck: the CUDA toolkit (cuda.h) is needed: none at /usr/local/cuda or on PATH" >&2
  exit 1
fi
