#!/usr/bin/env bash
# tools/stuck.sh PID - where each thread of a hung process is, and who holds
# attachcheck's locks, on a machine without a debugger (docs/debugging.md).
# Builds tools/stuck.c with the machine's cc, stops each thread of PID for a
# moment, and prints its instruction and the return addresses found on its
# stack as module+offset (function and line where addr2line is installed);
# then each of the shim's locks (base/locks.inc) and the thread holding it.
# Needs permission to trace PID (its owner, or root; ptrace_scope 0 or 1 for
# a descendant's, else root).
set -euo pipefail
pid=${1:?usage: tools/stuck.sh PID}
here=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cc -O1 -o "$work/stuck" "$here/tools/stuck.c"

# The shim's lock table: its address in the process, its rows' names.
shim=$(awk '$6 ~ /libattachcheck\.so$/ {print $6; exit}' "/proc/$pid/maps")
args=()
names=()
if [ -n "$shim" ] && command -v nm >/dev/null; then
  base=$(awk -v f="$shim" '$6 == f {split($1, r, "-"); print r[1]; exit}' "/proc/$pid/maps")
  offset=$(nm "$shim" | awk '$3 == "ac_locks" {print $1}')
  mapfile -t names <<<"$(sed -n 's/^AC_LOCK(\([a-z_]*\),.*/\1/p' "$here/base/locks.inc")"
  if [ -n "$offset" ]; then
    args=("$(printf '%x' $((0x$base + 0x$offset)))" "${#names[@]}")
  fi
fi

# A frame line of stuck.c (ADDRESS FILE OFFSET) as module+offset, and the
# function and line where addr2line is installed.
name_frame() {
  local fn=""
  if [ "$2" = - ]; then
    echo "0x$1"
    return
  fi
  if [ -f "$2" ] && command -v addr2line >/dev/null; then
    fn=$(addr2line -f -C -e "$2" "0x$3" 2>/dev/null | paste -sd' ' || true)
  fi
  echo "${2##*/}+0x$3 $fn"
}

for t in /proc/"$pid"/task/*; do
  echo "thread ${t##*/} ($(cat "$t/comm")): $(awk '{print "state " $3}' "$t/stat"), kernel: $(cat "$t/wchan" 2>/dev/null || echo '?')"
done
"$work/stuck" "$pid" "${args[@]}" | while read -r first second rest; do
  case "$first" in
  thread)
    echo "thread $second: system call ${rest#syscall }, at:"
    ;;
  frame)
    read -r file offset <<<"$rest"
    echo "    $(name_frame "$second" "$file" "$offset")"
    ;;
  lock)
    i=${second%:}
    echo "lock ${names[$i]:-$i}: $rest"
    ;;
  *) echo "$first $second $rest" ;;
  esac
done
