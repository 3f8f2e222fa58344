#!/usr/bin/env bash
# Adadelta's subnormal flush (AdadeltaArgs::flush_subnormal_state) on a whole epoch of mnist_cnn
# (one process, one thread, 938 steps): with the flush (the default) and without it
# (COHORT_ADADELTA_NO_FLUSH=1), alternating over ROUNDS rounds. Prints each run's optimizer
# ms/step and images/s, and checks that both end with byte-identical model files.
#   bench/adadelta_flush.sh [ROUNDS]     (default 2)
set -euo pipefail
# shellcheck source=bench/cpu_line.sh
. "$(dirname "$0")/cpu_line.sh"  # the CPU the figures come from
root=$(cd "$(dirname "$0")/.." && pwd)
rounds=${1:-2}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export OMP_NUM_THREADS=1
echo "adadelta_flush: mnist_cnn, 1 epoch (938 steps of 64), 1 thread, $(date -u '+%F %H:%M') UTC"
printf '%-22s %16s %10s  %s\n' run "optimizer ms/step" images/s "model file sha256"
for r in $(seq "$rounds"); do
  for mode in flush no-flush; do
    env=()
    [ $mode = no-flush ] && env=(COHORT_ADADELTA_NO_FLUSH=1)
    out=$(env "${env[@]}" "$root/build/bin/mnist_cnn" --epochs 1 --log-interval 100000 \
          --save-model "$work/$mode.safetensors")
    opt=$(echo "$out" | awk '$1 == "optimizer" { print $3 }')
    ips=$(echo "$out" | sed -nE 's/.*training throughput: ([0-9.]+) images\/s.*/\1/p')
    printf '%-22s %16s %10s  %s\n' "round $r, $mode" "$opt" "$ips" "$(sha256sum "$work/$mode.safetensors" | cut -c1-16)"
  done
done
cmp -s "$work/flush.safetensors" "$work/no-flush.safetensors" && echo "models byte-identical: yes" \
  || { echo "models byte-identical: NO"; exit 1; }
