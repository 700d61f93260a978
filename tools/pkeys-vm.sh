#!/usr/bin/env bash
# tools/pkeys-vm.sh COMMAND... - runs COMMAND (through bash, from the
# checkout's root) on a CPU with protection keys, on a machine without them:
# Debian's kernel under qemu's emulator (TCG; -cpu max has pku and ospke),
# with this machine's / shared over 9p, so the build and the tests are the
# ones here. The page guard's keys backend (--guard-pages pkeys, the default
# on such CPUs) can then be tested without a GPU machine: the stand-in driver
# runs as in CI, ten to twenty times slower. Prints what COMMAND prints and
# exits with its status, or 125 when the emulated machine could not be made,
# started or finished. Needs root (apt-get, 9p passthrough) on x86_64.
#
#   tools/pkeys-vm.sh 'cd build && ctest -R "ac20|robustness"'
#
# The kernel, its modules and the initramfs are kept in build-vm/ (or
# $AC_PKEYS_VM_DIR); AC_PKEYS_VM_TIMEOUT (seconds, default 3600) bounds a run.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
vm=${AC_PKEYS_VM_DIR:-$root/build-vm}
[ $# -ge 1 ] || {
  echo "usage: tools/pkeys-vm.sh COMMAND..." >&2
  exit 2
}
[ "$(uname -m)" = x86_64 ] || {
  echo "pkeys-vm: protection keys are an x86_64 feature; this is $(uname -m)" >&2
  exit 2
}
say() { echo "pkeys-vm: $*" >&2; }
cannot() {
  say "$*"
  exit 125
}

# qemu and a static busybox for the initramfs, from Debian.
static_busybox() { [ -x /bin/busybox ] && ! ldd /bin/busybox >/dev/null 2>&1; }
if ! command -v qemu-system-x86_64 >/dev/null || ! static_busybox; then
  say "installing qemu-system-x86 and busybox-static"
  install() { DEBIAN_FRONTEND=noninteractive apt-get install -y -q qemu-system-x86 busybox-static; }
  install >/dev/null 2>&1 || { apt-get update -q >/dev/null 2>&1 && install >/dev/null 2>&1; } ||
    cannot "apt-get could not install qemu-system-x86 and busybox-static"
fi

# Debian's kernel (protection keys built in) and the modules 9p needs.
mkdir -p "$vm"
if ! ls "$vm"/root/boot/vmlinuz-* >/dev/null 2>&1; then
  kernel_package() {
    apt-cache depends linux-image-amd64 2>/dev/null | awk '/Depends: linux-image-[0-9]/ {print $2; exit}'
  }
  package=$(kernel_package)
  [ -n "$package" ] || package=$(apt-get update -q >/dev/null 2>&1 && kernel_package)
  [ -n "$package" ] || cannot "apt-cache knows no linux-image-amd64"
  say "fetching $package"
  (cd "$vm" && apt-get download "$package" >/dev/null 2>&1 && dpkg -x "$package"_*.deb root &&
    rm -f "$package"_*.deb) || cannot "could not fetch and unpack $package"
fi
kernel=$(ls "$vm"/root/boot/vmlinuz-* | head -n 1)
release=${kernel##*/vmlinuz-}
modules=(virtio_ring virtio virtio_pci_modern_dev virtio_pci_legacy_dev virtio_pci
  netfs fscache 9pnet 9pnet_virtio 9p)
# The initramfs's name changes with what its init does, so an older one kept
# in build-vm/ is not used.
initrd=$vm/initrd-5.gz
if [ ! -f "$initrd" ]; then
  rm -rf "$vm/initrd" && mkdir -p "$vm"/initrd/{bin,mods,proc,sys,dev,mnt}
  cp /bin/busybox "$vm/initrd/bin/"
  for m in "${modules[@]}"; do
    find "$vm/root/lib/modules/$release" -name "$m.ko" -exec cp {} "$vm/initrd/mods/" \;
  done
  # The guest mounts / from the host, then runs /job in it and powers off.
  cat >"$vm/initrd/init" <<EOF
#!/bin/busybox sh
/bin/busybox --install -s /bin
export PATH=/bin
mount -t proc proc /proc; mount -t sysfs sys /sys; mount -t devtmpfs dev /dev
for m in ${modules[*]}; do insmod /mods/\$m.ko || echo "pkeys-vm: insmod \$m failed"; done
mount -t 9p -o trans=virtio,version=9p2000.L,msize=512000,cache=loose host /mnt
mount -t proc proc /mnt/proc; mount -t sysfs sys /mnt/sys; mount -t devtmpfs dev /mnt/dev
# A /tmp of its own; folders of the host's /tmp the job needs (the checkout,
# the VM folder: pkeys_vm_keep=) are bound back into it.
keep=\$(sed -n 's/.*pkeys_vm_keep=\([^ ]*\).*/\1/p' /proc/cmdline | tr , ' ')
n=0
for d in \$keep; do n=\$((n + 1)); mkdir -p /keep\$n; mount --bind /mnt\$d /keep\$n; done
mount -t tmpfs tmp /mnt/tmp
n=0
for d in \$keep; do n=\$((n + 1)); mkdir -p /mnt\$d; mount --bind /keep\$n /mnt\$d; done
mkdir -p /mnt/dev/pts /mnt/dev/shm
ln -sf /proc/self/fd /mnt/dev/fd # bash's <(...) needs it; devtmpfs has none
mount -t devpts pts /mnt/dev/pts; mount -t tmpfs shm /mnt/dev/shm
ip link set lo up 2>/dev/null || ifconfig lo 127.0.0.1 up # for programs that look for an interface
chroot /mnt /bin/bash "$vm/job" >/dev/console 2>&1
poweroff -f
EOF
  chmod +x "$vm/initrd/init"
  (cd "$vm/initrd" && find . | busybox cpio -o -H newc 2>/dev/null | gzip >"$initrd")
fi

# The job: COMMAND from the checkout, its status left in a file for this side.
status=$vm/status
rm -f "$status"
{
  echo "export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
  echo "cd '$root' || exit 1"
  echo "grep -qw pku /proc/cpuinfo || echo 'pkeys-vm: the guest CPU has no pku' >&2"
  printf '%s\n' "bash -c $(printf '%q' "$*")"
  echo "echo \$? >'$status'"
} >"$vm/job"
append="console=ttyS0 quiet panic=-1"
# The folders under the host's /tmp the guest must see through its own /tmp.
keep=()
for d in "$root" "$vm"; do
  case "$d/" in /tmp/?*/*) rest=${d#/tmp/} && keep+=("/tmp/${rest%%/*}") ;; esac
done
if ((${#keep[@]})); then
  append+=" pkeys_vm_keep=$(printf '%s\n' "${keep[@]}" | sort -u | paste -sd,)"
fi
timeout "${AC_PKEYS_VM_TIMEOUT:-3600}" qemu-system-x86_64 -machine q35 \
  -accel tcg,thread=multi -cpu max -smp "$(nproc)" -m 6G -nographic -no-reboot \
  -kernel "$kernel" -initrd "$initrd" -append "$append" \
  -fsdev local,id=host,path=/,security_model=passthrough,multidevs=remap \
  -device virtio-9p-pci,fsdev=host,mount_tag=host </dev/null |
  tr -d '\r' | sed -e '1,/^Booting from ROM/d' -e 's/\x1b\[[0-9;?]*[a-zA-Z]//g' -e 's/\x1bc//g' |
  grep -v 'reboot: Power down' || true
[ -f "$status" ] || {
  say "the guest never finished the command (timed out, or failed to start)"
  exit 125
}
exit "$(cat "$status")"
