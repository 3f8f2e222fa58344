#!/usr/bin/env bash
# Default host threads against one thread, on an idle machine and with a competing busy loop on
# every core: the MNIST CNN (mnist_cnn, one process, batch 64, 150 steps) training images/s, the
# two settings alternated over ROUNDS rounds, medians and their ratio printed. The goal
# (docs/benchmarks/runtime.md, "Host threads"): the default never more than a few percent slower
# than OMP_NUM_THREADS=1.
#   bench/host_threads.sh [BUILD_DIR] [ROUNDS]
set -euo pipefail
# shellcheck source=bench/cpu_line.sh
. "$(dirname "$0")/cpu_line.sh"  # the CPU the figures come from
build=${1:-build}
rounds=${2:-3}
bin=$build/bin/mnist_cnn
cores=$(nproc)
ips() {  # env... -> training images/s of one short run
  env "$@" "$bin" --epochs 1 --max-steps 150 --log-interval 100000 --test-batch-size 1000 2>&1 |
    sed -nE 's/.*training throughput: ([0-9.]+) images\/s.*/\1/p'
}
median() { sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
hogs=()
start_load() { for _ in $(seq "$cores"); do (while :; do :; done) & hogs+=($!); done; }
stop_load() { kill "${hogs[@]}" 2>/dev/null || true; wait "${hogs[@]}" 2>/dev/null || true; hogs=(); }
trap stop_load EXIT
threads=$("$bin" --epochs 1 --max-steps 1 --log-interval 100000 --test-batch-size 10000 2>&1 | sed -n 's/^host threads: //p')
echo "machine: $cores CPUs; default: $threads"
printf '%-8s %-28s %12s %12s %8s\n' load setting "images/s" "1 thread" ratio
for load in idle busy; do
  [ "$load" = busy ] && start_load
  d=() o=()
  for r in $(seq "$rounds"); do
    d+=("$(ips COHORT_BENCH=1)")
    o+=("$(ips OMP_NUM_THREADS=1)")
  done
  dm=$(printf '%s\n' "${d[@]}" | median)
  om=$(printf '%s\n' "${o[@]}" | median)
  printf '%-8s %-28s %12.1f %12.1f %8.2f\n' "$load" "default (adaptive)" "$dm" "$om" "$(echo "$dm / $om" | bc -l)"
  s=()
  for r in $(seq "$rounds"); do s+=("$(ips COHORT_HOST_THREADS_ADAPT=0)"); done
  sm=$(printf '%s\n' "${s[@]}" | median)
  printf '%-8s %-28s %12.1f %12.1f %8.2f\n' "$load" "fixed count (ADAPT=0)" "$sm" "$om" "$(echo "$sm / $om" | bc -l)"
  [ "$load" = busy ] && stop_load
done
