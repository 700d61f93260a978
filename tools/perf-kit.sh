#!/usr/bin/env bash
# tools/perf-kit.sh [DIR] - packs this machine's perf and the libraries it
# loads into DIR (default perfkit/, ignored by git) with two wrappers, so a
# profile can be taken on the GPU machine, which has no perf:
#   run with carry ["build/lib", "build/bench", "perfkit"] and a command like
#   perfkit/profile.sh b4 env LD_PRELOAD=build/lib/libattachcheck.so build/bench/bench_args
# profile.sh NAME CMD... writes $OUT/NAME.txt (samples by library and symbol);
# callers.sh NAME SYMBOL CMD... writes who calls SYMBOL (DWARF call graphs).
set -euo pipefail
dir=${1:-perfkit}
perf=$(command -v perf) || { echo "perf-kit: no perf here (apt-get install linux-perf)" >&2; exit 1; }
mkdir -p "$dir"
cp "$perf" "$dir/perf"
# Everything perf links against except the C library itself, which the GPU machine has.
ldd "$perf" | awk '$3 ~ /^\// {print $3}' | while read -r lib; do
  case $(basename "$lib") in libc.so.*|libm.so.*|libpthread.so.*|libdl.so.*|librt.so.*) ;; *) cp -L "$lib" "$dir/" ;; esac
done
cat >"$dir/profile.sh" <<'SH'
#!/bin/bash
name=$1; shift
kit=$(cd "$(dirname "$0")" && pwd)
LD_LIBRARY_PATH=$kit "$kit/perf" record -q -o "/tmp/$name.data" -- "$@" >/dev/null 2>"/tmp/$name.err"
report() { LD_LIBRARY_PATH=$kit "$kit/perf" report -i "/tmp/$name.data" --no-children --stdio "$@" 2>/dev/null | grep -E '^ +[0-9]'; }
{ report --sort dso | head -15; echo; report --sort dso,sym | head -70; tail -3 "/tmp/$name.err"; } >"$OUT/$name.txt"
SH
cat >"$dir/callers.sh" <<'SH'
#!/bin/bash
name=$1 symbol=$2; shift 2
kit=$(cd "$(dirname "$0")" && pwd)
LD_LIBRARY_PATH=$kit "$kit/perf" record -q --call-graph dwarf,16384 -o "/tmp/$name.data" -- "$@" >/dev/null 2>"/tmp/$name.err"
LD_LIBRARY_PATH=$kit "$kit/perf" report -i "/tmp/$name.data" --no-children --stdio -S "$symbol" -G --sort sym 2>/dev/null | head -120 >"$OUT/$name.txt"
SH
chmod +x "$dir/profile.sh" "$dir/callers.sh"
echo "perf-kit: $(du -sh "$dir" | cut -f1) in $dir"
