#!/usr/bin/env bash
# bench/run.sh BUILD [ROUNDS [IDS]] - runs each benchmark (B1 launch, B2 the guide's
# pattern with the page guard, B3 10,000 GLOBAL allocations, strict and with
# --semantics device, B4 kernels with 8 pointer arguments, B5 B3's loop on 8
# threads, B6 B3's loop with a managed temporary made and freed at each step
# (memory changing class at every step), A1 20,000 allocations attached to an idle stream one by
# one, GLOBAL ones and (A1-host) HOST ones; the -mprotect rows force that page-guard backend where
# the default would take protection keys) with and without the shim,
# alternating (so drift in the machine hits both alike), and prints the median
# time of each and their ratio, the best of each, and the median of each
# alternating pair's ratio, and at the end each row's pairs' median against its
# target. B3-floor-fault and B3-floor-oracle are B3's loop
# without the shim, protecting pages by hand (bench/guard_floor.cu): the least
# any page guard can cost there. F1-F3 are real frameworks (bench/frameworks):
# F1 PyTorch training with every tensor in managed memory (a pluggable
# allocator, one cudaMallocManaged / cudaFree per tensor), F2 CuPy with a fresh
# managed allocation per array, F3 CuPy over a managed memory pool, F4 a Numba
# pipeline on managed arrays with host logic between steps; each with
# the default page guard and with mprotect. They need python3 with torch and
# cupy (numba), and are left out (with a line) where it cannot import them. BASELINE, another
# build's libattachcheck.so, runs in each round too (compare, below). Run it on the GPU
# machine; timings from a machine without one mean nothing.
set -euo pipefail
build=$(cd "${1:?usage: bench/run.sh BUILD [ROUNDS [IDS]]}" && pwd)
rounds=${2:-7}
only=${3:-}   # run only the benchmarks whose id matches this pattern (e.g. 'B1|B4')
# Pin the single-threaded benchmarks to one core when possible: the launch path is one thread and
# migrations between cores are a large part of its run-to-run noise.
pin=()
if command -v taskset >/dev/null && [ "$(nproc)" -gt 2 ]; then pin=(taskset -c 2); fi
shim="$build/lib/libattachcheck.so"
median() { sort -n | awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN{printf "%.3f", b/a}'; }

# Each row's target ratio; rows without one have none (B5: a finding at every touch; B3- and
# B6-mprotect: below what protecting pages costs there at all, the B3-floor rows).
declare -A target=([B1]=1.05 [B2]=1.05 [B2-mprotect]=1.05 [B3]=1.05 [B3-device]=1.05 [B4]=1.05
  [B6]=1.10 [A1]=1.2 [A1-host]=1.2 [A1-mprotect]=1.2)
for f in F1 F2 F3 F4; do target[$f]=1.25 target[$f-mprotect]=1.25; done
summary=()

# compare ID "BARE COMMAND" "MEASURED COMMAND": alternates the two, prints medians and ratios.
# With BASELINE (another build's libattachcheck.so) a third command - the measured one with that
# library preloaded instead - runs between the two in each round: the row then also prints the
# baseline's ratio and the median of each round's ratio of this build to it, a change measured
# against the shim before it on the same machine at the same moment.
compare() {
  local id=$1 bare=$2 measured=$3 without=() with=() before=() i previous=""
  if [ -n "${BASELINE:-}" ]; then
    previous=${measured//LD_PRELOAD=$shim/LD_PRELOAD=$BASELINE}
    [ "$previous" = "$measured" ] && previous="" # a row without the shim
  fi
  for ((i = 0; i < rounds; i++)); do
    without+=("$(eval "$bare")")
    [ -n "$previous" ] && before+=("$(eval "$previous")")
    with+=("$(eval "$measured")")
  done
  local a b amin bmin
  a=$(printf '%s\n' "${without[@]}" | median)
  b=$(printf '%s\n' "${with[@]}" | median)
  amin=$(printf '%s\n' "${without[@]}" | sort -n | head -1)
  bmin=$(printf '%s\n' "${with[@]}" | sort -n | head -1)
  # Each run with the shim against the run without it just before: the machine's
  # state drifts between invocations (a B6 bare run is 21 or 27 us a step, in
  # turns), and a ratio of neighbours cancels what the two share.
  local pairs=()
  for ((i = 0; i < rounds; i++)); do pairs+=("$(ratio "${without[i]}" "${with[i]}")"); done
  local paired row=${id%% *}
  paired=$(printf '%s\n' "${pairs[@]}" | median)
  echo "$id: median without ${a} ns, with ${b} ns per unit: ratio $(ratio "$a" "$b");" \
       "best without ${amin} ns, with ${bmin} ns: ratio $(ratio "$amin" "$bmin");" \
       "median of the pairs' ratios $paired ($rounds alternating runs)"
  if [ -n "${target[$row]:-}" ]; then
    summary+=("$(awk -v r="$row" -v p="$paired" -v t="${target[$row]}" \
      'BEGIN{printf "%-14s %s  target %s  %s", r, p, t, p <= t ? "within" : "OVER"}')")
  fi
  echo "  without: ${without[*]}"
  echo "  with:    ${with[*]}"
  [ -n "$previous" ] || return 0
  local c against=() theirs=()
  c=$(printf '%s\n' "${before[@]}" | median)
  for ((i = 0; i < rounds; i++)); do
    theirs+=("$(ratio "${without[i]}" "${before[i]}")")
    against+=("$(ratio "${before[i]}" "${with[i]}")")
  done
  echo "  baseline: median ${c} ns: ratio $(ratio "$a" "$c"), pairs' median" \
       "$(printf '%s\n' "${theirs[@]}" | median); this build against it: median of the rounds'" \
       "ratios $(printf '%s\n' "${against[@]}" | median)"
  echo "  baseline: ${before[*]}"
}

selected() { [ -z "$only" ] || [[ $1 =~ ^($only)$ ]]; }

for spec in "B1 launch" "B2 guide" "B2-mprotect guide ATTACHCHECK_GUARD_PAGES=mprotect" \
  "B3 global_touch" "B3-mprotect global_touch ATTACHCHECK_GUARD_PAGES=mprotect" \
  "B3-device global_touch ATTACHCHECK_SEMANTICS=device" "B4 args" "B5 threads_touch" \
  "B5-mprotect threads_touch ATTACHCHECK_GUARD_PAGES=mprotect" \
  "B5-device threads_touch ATTACHCHECK_SEMANTICS=device" "B6 temp_touch" \
  "B6-mprotect temp_touch ATTACHCHECK_GUARD_PAGES=mprotect" "A1 attach:20000:global:6" \
  "A1-host attach:20000:host:6" "A1-mprotect attach:20000:global:6 ATTACHCHECK_GUARD_PAGES=mprotect"; do
  set -- $spec
  id=$1 bench=${2%%:*} options=${3:-}
  args=$([[ $2 == *:* ]] && tr : ' ' <<<"${2#*:}" || true)
  selected "$id" || continue
  run_pin="${pin[*]}"
  [[ $id == B2* || $id == B5* ]] && run_pin="" # eight host threads: not on one core
  exe="$build/bench/bench_$bench${args:+ $args}"
  compare "$id $bench" "$run_pin $exe" \
    "env LD_PRELOAD=$shim ATTACHCHECK_PRINT_STDERR=off $options $run_pin $exe"
done
here=$(cd "$(dirname "$0")" && pwd)
frameworks=(
  "F1 torch_train bench/frameworks/torch_train.py $build/bench/libbench_managed_alloc.so 200"
  "F1-mprotect torch_train bench/frameworks/torch_train.py $build/bench/libbench_managed_alloc.so 200"
  "F2 cupy_fresh bench/frameworks/cupy_loop.py fresh 200"
  "F2-mprotect cupy_fresh bench/frameworks/cupy_loop.py fresh 200"
  "F3 cupy_pool bench/frameworks/cupy_loop.py pool 200"
  "F3-mprotect cupy_pool bench/frameworks/cupy_loop.py pool 200"
  "F4 numba_pipeline bench/frameworks/numba_pipeline.py 300"
  "F4-mprotect numba_pipeline bench/frameworks/numba_pipeline.py 300")
declare -A unfit=() # a framework's reason not to run here, checked once per framework
for spec in "${frameworks[@]}"; do
  set -- $spec
  id=$1 name=$2 script=$here/${3#bench/}
  shift 3
  selected "$id" || continue
  case $name in torch_train) module=torch ;; numba_pipeline) module=numba.cuda ;; *) module=cupy ;; esac
  if [ -z "${unfit[$name]+checked}" ]; then
    unfit[$name]=""
    if ! python3 -c "import $module" 2>/dev/null; then
      unfit[$name]="python3 has no $module"
    # A framework that imports but cannot run here (a version clash in the
    # machine's Python) is left out with its last error line, not timed.
    elif ! why=$(python3 "$script" "${@:1:$#-1}" 1 2>&1 >/dev/null); then
      unfit[$name]="it fails without the shim: $(tail -1 <<<"$why")"
    fi
  fi
  if [ -n "${unfit[$name]}" ]; then
    echo "$id $name: skipped: ${unfit[$name]}"
    continue
  fi
  options=$([[ $id == *-mprotect ]] && echo ATTACHCHECK_GUARD_PAGES=mprotect || true)
  compare "$id $name" "python3 $script $*" \
    "env LD_PRELOAD=$shim ATTACHCHECK_PRINT_STDERR=off $options python3 $script $*"
done
for mode in fault oracle; do
  selected "B3-floor-$mode" || continue
  exe="$build/bench/bench_guard_floor"
  compare "B3-floor-$mode guard_floor (no shim)" "${pin[*]} $exe plain" "${pin[*]} $exe $mode"
done
if [ ${#summary[@]} -gt 0 ]; then
  echo "== each row's median of pairs' ratios against its target"
  printf '%s\n' "${summary[@]}"
fi
