#!/bin/sh
# small_tmpdir.sh mount|unmount|run DIR [COMMAND...] - the small file system
# of its own that the transparency case lost.full_tmpdir takes as $TMPDIR and
# fills (a shared /tmp must never be filled). mount makes a 1 MiB tmpfs at
# DIR where it can (root), and says why not where it cannot; unmount removes
# it; run runs COMMAND when DIR is one, and otherwise says so and exits 77,
# which ctest reads as "skipped".
set -u
dir=$2
case $1 in
  mount)
    mkdir -p "$dir" || exit 0
    mountpoint -q "$dir" && exit 0
    mount -t tmpfs -o size=1m,mode=1777 attachcheck-tp-small "$dir" 2>/dev/null ||
      echo "small_tmpdir: cannot mount a tmpfs at $dir (not root?): lost.full_tmpdir will be skipped"
    exit 0
    ;;
  unmount)
    mountpoint -q "$dir" && umount "$dir"
    rmdir "$dir" 2>/dev/null
    exit 0
    ;;
  run)
    shift 2
    if ! mountpoint -q "$dir"; then
      echo "skipped: $dir is not a small file system of its own (mounting one needs root)"
      exit 77
    fi
    exec "$@"
    ;;
esac
echo "usage: small_tmpdir.sh mount|unmount|run DIR [COMMAND...]" >&2
exit 2
