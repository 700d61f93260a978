#!/usr/bin/env bash
# tools/bare-root.sh [--keep] [SUITE] - checks that the README's two commands work on a
# bare machine, the way a new user meets them: a minimal Debian root
# (mmdebstrap --variant=minbase, default SUITE bookworm) with nothing but the
# CUDA toolkit (the host's /usr/local/cuda, bind-mounted read-only), a copy of
# the sources without .git or build folders, and a clean environment, in which
# tools/demo.sh and then tools/test.sh must succeed, the Debian package the build
# makes must install with dpkg -i and work - and tools/test.sh again
# without PyPI, skipping only the Python client tests; before the toolkit is
# mounted, tools/demo.sh must stop at once, saying it is missing. Run as root; it skips
# (status 0, one line) where this machine cannot make such a root. The root's
# tarball is cached under /var/cache/attachcheck (a week at most). --keep leaves
# the root (unmounted) for a look at what happened in it.
set -euo pipefail
cd "$(dirname "$0")/.."
src=$PWD
keep=
if [ "${1:-}" = --keep ]; then
  keep=1
  shift
fi
suite=${1:-bookworm}
cuda=/usr/local/cuda
cache=/var/cache/attachcheck

say() { echo "bare-root: $*"; }
skip() {
  say "SKIPPED: $*"
  exit 0
}
die() {
  say "FAILED: $*" >&2
  exit 1
}

# What this machine must give: root, mount rights, a CUDA toolkit, mmdebstrap.
check_machine() {
  [ "$(id -u)" = 0 ] || skip "needs root (mmdebstrap, mount, chroot)"
  [ -e "$cuda/include/cuda.h" ] || skip "no CUDA toolkit at $cuda to bind-mount into the root"
  local probe
  probe=$(mktemp -d)
  if ! mount -t tmpfs probe "$probe" 2>/dev/null; then
    rmdir "$probe"
    skip "cannot mount here (a container without CAP_SYS_ADMIN?)"
  fi
  umount "$probe" && rmdir "$probe"
  if ! command -v mmdebstrap >/dev/null; then
    say "installing mmdebstrap"
    { apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q mmdebstrap; } \
      >/dev/null 2>&1 || skip "cannot install mmdebstrap with apt-get"
  fi
}

# The minimal root as a tarball, in $tarball: the cached one while it is less
# than a week old, else a fresh one (written beside it, then moved, so a broken
# run leaves no broken cache; in the work folder where there is no cache).
root_tarball() {
  mkdir -p "$cache" 2>/dev/null || cache=$work
  tarball=$cache/$suite-minbase.tar
  if [ -n "$(find "$tarball" -type f -mtime -7 2>/dev/null)" ]; then
    say "using the cached minimal $suite root ($tarball)"
    return
  fi
  local partial=$cache/$suite-minbase.partial.tar
  say "making a minimal $suite root with mmdebstrap (a minute or two)"
  local start=$SECONDS
  if ! mmdebstrap --quiet --variant=minbase "$suite" "$partial" >"$work/mmdebstrap.log" 2>&1
  then
    rm -f "$partial"
    skip "mmdebstrap could not make a $suite root (is the Debian mirror reachable?" \
      "$(grep -m1 '^E: ' "$work/mmdebstrap.log" || true))"
  fi
  mv "$partial" "$tarball"
  say "made the root in $((SECONDS - start)) s"
}

# The root as a new machine has it: its own /proc, /dev, /dev/shm and /tmp, the
# host's network set-up (DNS, locally added CA certificates, as for a proxy
# that inspects TLS), the CUDA toolkit read-only and the sources in /src.
mounted=()
mount_in_root() { # mount ARGS... TARGET
  mount "$@"
  mounted=("${!#}" ${mounted[@]+"${mounted[@]}"})
}
prepare_root() {
  mkdir "$root"
  tar -C "$root" -xf "$1"
  mount_in_root -t proc proc "$root/proc"
  mount_in_root --bind /dev "$root/dev"
  mount_in_root -t tmpfs -o mode=1777 shm "$root/dev/shm"
  mount_in_root -t tmpfs -o mode=1777 tmp "$root/tmp"
  rm -f "$root/etc/resolv.conf"
  cp -L /etc/resolv.conf "$root/etc/resolv.conf"
  if compgen -G "/usr/local/share/ca-certificates/*.crt" >/dev/null; then
    mkdir -p "$root/usr/local/share/ca-certificates"
    cp /usr/local/share/ca-certificates/*.crt "$root/usr/local/share/ca-certificates/"
  fi
  # The sources as a tarball of them has them: no .git, nothing the build or
  # the tests made.
  mkdir "$root/src"
  tar -C "$src" --exclude=./.git --exclude='./build*' --exclude=./.pydeps --exclude=./.whl \
    --exclude=./perfkit --exclude=__pycache__ -cf - . | tar -C "$root/src" -xf -
}

# The CUDA toolkit, read-only: the one thing the README asks to be there.
mount_cuda() {
  mkdir -p "$root/usr/local/cuda"
  mount_in_root --bind "$(readlink -f "$cuda")" "$root/usr/local/cuda"
  mount -o remount,bind,ro "$root/usr/local/cuda"
}

# Unmounts what prepare_root mounted, then removes the root - only when
# nothing is mounted under it any more (the CUDA toolkit and /dev are the
# host's own).
cleanup() {
  local m
  for m in ${mounted[@]+"${mounted[@]}"}; do
    umount "$m" 2>/dev/null || umount -l "$m" || true
  done
  if grep -q " $work/" /proc/mounts; then
    say "left $work in place: something is still mounted under it" >&2
  elif [ -n "$keep" ]; then
    say "the root is kept in $work/root"
  else
    rm -rf "$work"
  fi
}

# One of the README's commands, as root in the root with a clean environment
# (a proxy set here is passed on, as a new user's shell would have it; extra
# VAR=VALUE arguments are added). Its output is also kept in $work/last.log.
run_in_root() {
  local command=$1 start=$SECONDS status=0 environment=() v
  shift
  for v in http_proxy https_proxy no_proxy HTTP_PROXY HTTPS_PROXY NO_PROXY; do
    [ -n "${!v:-}" ] && environment+=("$v=${!v}")
  done
  environment+=("$@")
  say "running $command in the bare root${*:+ with $*}"
  env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root ${environment[@]+"${environment[@]}"} \
    chroot "$root" bash -c "cd /src && $command" </dev/null 2>&1 | tee "$work/last.log" \
    | sed -u 's/^/  | /' || status=$?
  say "$command: status $status after $((SECONDS - start)) s"
  return "$status"
}

# Without the CUDA toolkit, tools/demo.sh must stop at once with one line that
# says so, before it installs any package.
check_without_cuda() {
  say "first without the CUDA toolkit (it must stop at once, saying so):"
  if run_in_root tools/demo.sh; then
    say "tools/demo.sh passed without the CUDA toolkit"
    return 1
  fi
  if ! grep -q "the CUDA toolkit is needed" "$work/last.log" ||
    [ -e "$root/usr/bin/cmake" ]; then
    say "without the CUDA toolkit tools/demo.sh did not stop first, with one line"
    return 1
  fi
}

# The Debian package tools/test.sh's build makes, installed with dpkg -i as a
# user would: the installed CLI checks the demo over the stand-in driver, and
# the documents keep their layout.
check_package_installs() {
  run_in_root 'cd build && rm -rf pkg && cpack -G DEB -B pkg >/dev/null &&
    dpkg -i pkg/attachcheck_*.deb && cd .. && attachcheck --version &&
    test -e /usr/share/doc/attachcheck/docs/design.md &&
    LD_LIBRARY_PATH=build/tests/fakecuda attachcheck --print-stderr off build/examples/attach_mistakes >/dev/null'
  if ! grep -q "summary: 5 errors" "$work/last.log"; then
    say "the installed package did not check the demo"
    return 1
  fi
}

# Without PyPI (an index nobody answers), tools/test.sh must still pass, with
# the Python client tests skipped and saying so - not passed in silence.
check_without_pypi() {
  rm -rf "$root/src/.pydeps"
  run_in_root tools/test.sh PIP_INDEX_URL=http://127.0.0.1:9/simple || return
  if ! grep -q "^SKIPPED python clients" "$work/last.log" ||
    ! grep -q "python.clients .*Skipped" "$work/last.log"; then
    say "without PyPI the Python client tests were not reported as skipped"
    return 1
  fi
}

check_machine
work=$(mktemp -d /var/tmp/attachcheck-bare.XXXXXX)
root=$work/root
trap cleanup EXIT
root_tarball
prepare_root "$tarball"
failed=()
check_without_cuda || failed+=("tools/demo.sh without CUDA")
mount_cuda
run_in_root tools/demo.sh || failed+=(tools/demo.sh)
run_in_root tools/test.sh || failed+=(tools/test.sh)
check_package_installs || failed+=("dpkg -i of the package")
check_without_pypi || failed+=("tools/test.sh without PyPI")
((${#failed[@]} == 0)) || die "${failed[*]} failed on a bare $suite root"
say "tools/demo.sh and tools/test.sh work on a bare $suite root ($SECONDS s in all)"
