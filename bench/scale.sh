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
# figure is of, STAT (best, the default, or median) which of them it is;
# MODES (default all) which modes run. BASELINE, another build's
# libattachcheck.so, runs in the same rotation (without, baseline, with) and
# gets its own ratio: a change measured against the shim before it on one
# machine.
set -euo pipefail
build=$(cd "${1:?usage: bench/scale.sh BUILD [fake|real] [SIZES]}" && pwd)
driver=${2:-fake}
sizes=${3:-"2500 5000 10000"}
exe=$build/bench/bench_scale
env_driver=()
[ "$driver" = fake ] && env_driver=(LD_LIBRARY_PATH="$build/tests/fakecuda")
shim=(LD_PRELOAD="$build/lib/libattachcheck.so" ATTACHCHECK_PRINT_STDERR=off)

# One figure (seconds, and the peak RSS of that run) per command line in $1,
# $2, ... (its words joined by the unit separator, \x1f): REPEAT rounds, each
# running every one of them once, in turn.
figures() {
  local -a cmds=("$@") all=()
  local i r out
  for ((r = 0; r < ${REPEAT:-3}; r++)); do
    for i in "${!cmds[@]}"; do
      IFS=$'\x1f' read -r -a argv <<<"${cmds[$i]}"
      out=$(env "${env_driver[@]}" "${argv[@]}")
      all+=("$i $out")
    done
  done
  for i in "${!cmds[@]}"; do
    printf '%s\n' "${all[@]}" | awk -v i="$i" '$1 == i {print $2, $3}' | sort -n |
      awk -v stat="${STAT:-best}" '{s[NR] = $1; k[NR] = $2}
        END {m = stat == "median" ? int((NR + 1) / 2) : 1; print s[m], k[m]}'
  done
}

for mode in ${MODES:-live free attach attach-host first-busy stream-cycles streams-alive streams-ended syscalls}; do
  prev="" prev_n="" prev_kb=""
  for n in $sizes; do
    cmds=("$exe"$'\x1f'"$mode"$'\x1f'"$n")
    [ -n "${BASELINE:-}" ] && cmds+=("LD_PRELOAD=$BASELINE"$'\x1f'"ATTACHCHECK_PRINT_STDERR=off"$'\x1f'"$exe"$'\x1f'"$mode"$'\x1f'"$n")
    cmds+=("$(IFS=$'\x1f'; echo "${shim[*]}")"$'\x1f'"$exe"$'\x1f'"$mode"$'\x1f'"$n")
    mapfile -t got < <(figures "${cmds[@]}")
    read -r a akb <<<"${got[0]}"
    read -r b bkb <<<"${got[-1]}"
    base=""
    [ -n "${BASELINE:-}" ] && base=$(awk -v a="$a" -v c="${got[1]% *}" \
      'BEGIN{printf ", baseline %s s, ratio %.2f", c, (a>0)?c/a:0}')
    growth=${prev:+$(awk -v x="$b" -v y="$prev" 'BEGIN{printf "%.2f", x/y}')}
    extra=""
    [ "$mode" = live ] && extra=$(awk -v a="$akb" -v b="$bkb" -v n="$n" \
      'BEGIN{printf ", %.0f B per allocation", (b-a)*1024/n}')
    [ "$mode" = live ] && [ -n "$prev_n" ] && extra+=$(awk -v d="$((bkb - akb))" \
      -v p="$prev_kb" -v n="$n" -v m="$prev_n" 'BEGIN{printf " (%.0f B each beyond %d)", (d-p)*1024/(n-m), m}')
    echo "$mode $n: without ${a} s$base, with ${b} s, ratio $(awk -v a="$a" -v b="$b" \
      'BEGIN{printf "%.2f", (a>0)?b/a:0}')${growth:+, growth ${growth}x}$extra"
    prev=$b prev_n=$n prev_kb=$((bkb - akb))
  done
done
