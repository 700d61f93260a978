#!/usr/bin/env bash
# tools/cross-aarch64.sh [BUILD_DIR] - cross-builds attachcheck for 64-bit Arm
# (Jetson, Grace) into build-aarch64/ (the layout of build/: bin/attachcheck,
# lib/libattachcheck.so, tests/fakecuda/libcuda.so.1) and runs the unit tests,
# the scenarios and the CLI tests under qemu-user over the aarch64 stand-in
# driver; then makes the arm64 Debian package (build-aarch64/pkg/) and checks
# it with dpkg-deb (tests/cli/check_deb.py). docs/platforms.md says what it
# covers and what it cannot.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build-aarch64}

packages=(gcc-aarch64-linux-gnu g++-aarch64-linux-gnu qemu-user-static uthash-dev
          libunwind-dev:arm64 libjansson-dev:arm64 libdw-dev:arm64 libstdc++6:arm64)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  if [ "$(id -u)" != 0 ]; then
    echo "cross-aarch64: missing packages; run as root:" >&2
    echo "  dpkg --add-architecture arm64 && apt-get update && apt-get install -y ${missing[*]}" >&2
    exit 1
  fi
  echo "cross-aarch64: installing ${missing[*]}"
  dpkg --add-architecture arm64
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
fi

# The CLI starts the program with execve, and the Python harnesses start the
# CLI: aarch64 executables must run when any process starts them, which is
# binfmt_misc's job (the F flag opens qemu now, so it works in containers).
binfmt=/proc/sys/fs/binfmt_misc
# Mounted first: in a chroot with a /proc of its own, the registration the
# host made is there only once binfmt_misc is mounted.
[ -e "$binfmt/register" ] || mount -t binfmt_misc binfmt_misc "$binfmt" 2>/dev/null || true
if [ ! -e "$binfmt/qemu-aarch64" ]; then
  if [ -w "$binfmt/register" ]; then
    cat /usr/lib/binfmt.d/qemu-aarch64.conf >"$binfmt/register"
  else
    echo "cross-aarch64: cannot register qemu-aarch64 with binfmt_misc (needs root)" >&2
    exit 1
  fi
fi

export PATH="$PATH:/usr/local/cuda/bin"
# The programs link against the aarch64 stand-in driver (soname libcuda.so.1),
# not the toolkit's x86-64 stub; the nvcc examples need a GPU toolchain.
cmake --no-warn-unused-cli -S . -B "$build" -DCMAKE_TOOLCHAIN_FILE=cmake/aarch64-toolchain.cmake \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo -DATTACHCHECK_EXAMPLES=OFF \
  -DCUDA_DRIVER_STUB:STRING=fakecuda >/dev/null
cmake --build "$build" -j "$(nproc)"

# One glibc: the arm64 multiarch one, whose loader is /lib/ld-linux-aarch64.so.1.
# QEMU_LD_PREFIX=/usr/aarch64-linux-gnu (the cross compiler's libc) together
# with the multiarch libraries on LD_LIBRARY_PATH pairs one glibc's loader
# with another's libc.so.6, and the first pthread_create spins forever.
export QEMU_LD_PREFIX=/
export LD_LIBRARY_PATH=/usr/lib/aarch64-linux-gnu

# Not run here: the entry table and the driver API table, against cuda.h and
# a driver's exports too (checked against the toolkit's x86-64 stub and
# cuda.h, the same on every processor), the Python
# clients (x86-64 cuda-bindings, also through the wheel), the package and the
# wheel (built on each machine by cmake --install / cpack / pip; the arm64
# package is checked below), MPI (the host's mpirun cannot load the aarch64
# shim), the CTest example (built with the host's compiler), the robustness
# checks and the hang probe (they compile their programs with the host's
# compiler), the ASan program (no arm64 sanitizer runtime here, and ASan's shadow memory under qemu-user is not the real thing) and valgrind (the
# host's cannot run an aarch64 program); report.sarif and report.files run
# below, apart.
(cd "$build" && ctest --output-on-failure -j "$(nproc)" \
  -E '^(shim\.entry_table|shim\.driver_api(_exports|_new_door)?|python\.clients(_wheel)?|package\.(install_and_deb|wheel)|mpi\.launcher|example\.ctest|report\.robustness|tools\.stuck|transparency\.(asan|valgrind)\..*|report\.sarif|report\.files)$')

# These checks start a host program (python3, /bin/sh) as the application: an
# x86-64 process cannot load the aarch64 shim, so under qemu they cannot pass.
# Every other check of the two files must.
host_launched=("MPI-style: one report, the launcher and four ranks, each finding from all four"
               "--target-processes all: 2 process(es), 5 findings"
               "--target-processes application-only: 1 process(es), 0 findings"
               "a torn record: dropped and counted, the process record kept")
status=0
for t in test_sarif test_files; do
  out=$(python3 "tests/cli/$t.py" "$build" 2>&1) || true
  echo "$out" | tail -n 1
  while IFS= read -r line; do
    known=0
    for h in "${host_launched[@]}"; do
      [[ "$line" == "FAIL $h "* ]] && known=1
    done
    if ((known)); then
      echo "cross-aarch64: expected under qemu (host-architecture launcher): ${line:0:90}"
    else
      echo "$line"
      status=1
    fi
  done < <(echo "$out" | grep '^FAIL' || true)
  echo "$out" | grep -q '^ok' || { echo "cross-aarch64: $t ran no check" >&2; status=1; }
done
# The arm64 package: dpkg cannot install it here, so dpkg-deb checks what it
# says and holds, the machine code inside and its documents' links.
rm -rf "$build/pkg"
(cd "$build" && cpack -G DEB -B pkg >/dev/null) || { echo "cross-aarch64: cpack failed" >&2; exit 1; }
python3 tests/cli/check_deb.py "$build"/pkg/attachcheck_*_arm64.deb arm64 || status=1
((status == 0)) && echo "== aarch64: all tests passed under qemu; the arm64 package checked"
exit $status
