#!/usr/bin/env bash
# bench/scale.sh BUILD [fake|real] [SIZES] - how the shim's cost grows with
# what is alive: each mode of bench/scale.c at each size, without and with
# the shim (alternating, best of 3), over the stand-in driver (fake, the
# default: a CPU-side measure) or the real one. Prints the CPU seconds, the ratio,
# the growth from one size to the next (2.0 when sizes double and the cost is
# linear, 4.0 when it is quadratic) and, for live allocations, the bytes the
# shim adds per tracked allocation: over all of them (its fixed cost - code,
# libraries, tables - included), and for each allocation beyond the previous
# size (the cost of one more). REPEAT (default 3) sets how many runs each
# figure is the best of; MODES (default all) which modes run.
set -euo pipefail
build=$(cd "${1:?usage: bench/scale.sh BUILD [fake|real] [SIZES]}" && pwd)
driver=${2:-fake}
sizes=${3:-"2500 5000 10000"}
exe=$build/bench/bench_scale
env_driver=()
[ "$driver" = fake ] && env_driver=(LD_LIBRARY_PATH="$build/tests/fakecuda")
shim=(LD_PRELOAD="$build/lib/libattachcheck.so" ATTACHCHECK_PRINT_STDERR=off)

best() { # best (lowest) seconds of REPEAT runs, and the peak RSS of that run
  local out best_s="" best_kb=""
  for _ in $(seq "${REPEAT:-3}"); do
    out=$(env "${env_driver[@]}" "$@")
    read -r s kb <<<"$out"
    if [ -z "$best_s" ] || awk -v a="$s" -v b="$best_s" 'BEGIN{exit !(a<b)}'; then
      best_s=$s best_kb=$kb
    fi
  done
  echo "$best_s $best_kb"
}

for mode in ${MODES:-live free attach first-busy stream-cycles streams-alive}; do
  prev="" prev_n="" prev_kb=""
  for n in $sizes; do
    read -r a akb <<<"$(best "$exe" "$mode" "$n")"
    read -r b bkb <<<"$(best "${shim[@]}" "$exe" "$mode" "$n")"
    growth=${prev:+$(awk -v x="$b" -v y="$prev" 'BEGIN{printf "%.2f", x/y}')}
    extra=""
    [ "$mode" = live ] && extra=$(awk -v a="$akb" -v b="$bkb" -v n="$n" \
      'BEGIN{printf ", %.0f B per allocation", (b-a)*1024/n}')
    [ "$mode" = live ] && [ -n "$prev_n" ] && extra+=$(awk -v d="$((bkb - akb))" \
      -v p="$prev_kb" -v n="$n" -v m="$prev_n" 'BEGIN{printf " (%.0f B each beyond %d)", (d-p)*1024/(n-m), m}')
    echo "$mode $n: without ${a} s, with ${b} s, ratio $(awk -v a="$a" -v b="$b" \
      'BEGIN{printf "%.1f", (a>0)?b/a:0}')${growth:+, growth ${growth}x}$extra"
    prev=$b prev_n=$n prev_kb=$((bkb - akb))
  done
done
