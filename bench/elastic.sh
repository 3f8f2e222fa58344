#!/usr/bin/env bash
# Elastic training's costs (issue 31), mnist_cnn under cohortrun, one thread per rank:
#  1. steady state: the same 2-rank shm job with and without --elastic (cohortrun --elastic serves
#     the store, a watcher polls it every 25 ms, each step marks what a discarded step would put
#     back), ROUNDS alternating rounds, median training images/s; the ratio's target is >= 0.99
#     (the bookkeeping costs at most 1% of step time);
#  2. recovery: a 3-rank job over shm and over ucx with rank 1 SIGKILLed at step 20, ROUNDS times
#     each: the time from the death to the new group's first completed step, as the run prints
#     it (detection + agreement + communicator + state + first step), median; target <= 1 s.
#
#   bench/elastic.sh [ROUNDS] [STEPS]   (default 3 rounds, 200 steps for the steady state)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bin=$root/build/bin
rounds=${1:-3}
steps=${2:-200}
export OMP_NUM_THREADS=1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
med() { printf '%s\n' $1 | sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
ips() { sed -nE 's/.*training throughput: ([0-9.]+) images\/s.*/\1/p' "$1" | tail -n1; }
job=(--epochs 1 --test-batch-size 1000 --deterministic)
echo "elastic: $(date -u +%F), $(nproc --all) cores ($(lscpu | sed -nE 's/^Model name: +//p')), $rounds rounds, medians"

plain="" elastic=""
for r in $(seq "$rounds"); do
  "$bin/cohortrun" --nproc-per-node 2 --master-port 0 "$bin/mnist_cnn" --comm shm "${job[@]}" \
    --max-steps "$steps" --log-interval 50 >"$work/plain.log" 2>&1
  plain="$plain $(ips "$work/plain.log")"
  "$bin/cohortrun" --nproc-per-node 2 --master-port 0 --elastic 1:2 "$bin/mnist_cnn" --comm shm \
    "${job[@]}" --max-steps "$steps" --log-interval 50 --elastic 1:2 >"$work/elastic.log" 2>&1
  elastic="$elastic $(ips "$work/elastic.log")"
done
p=$(med "$plain") e=$(med "$elastic")
printf 'steady state, 2 ranks x shm, %d steps: plain %s images/s, --elastic %s images/s: ratio %.3f (target >= 0.99)  [rounds: plain%s; elastic%s]\n' \
  "$steps" "$p" "$e" "$(echo "$e / $p" | bc -l)" "$plain" "$elastic"

for comm in shm ucx; do
  totals=""
  for r in $(seq "$rounds"); do
    log=$work/kill_$comm.log
    "$bin/cohortrun" --nproc-per-node 3 --master-port 0 --elastic 2:3 "$bin/mnist_cnn" --comm "$comm" \
      "${job[@]}" --max-steps 40 --log-interval 1 --elastic 2:3 >"$log" 2>&1 &
    pid=$!
    for _ in $(seq 1 1200); do grep -q "step 20/40" "$log" 2>/dev/null && break; sleep 0.05; done
    for q in $(pgrep -x mnist_cnn); do
      tr '\0' '\n' <"/proc/$q/environ" 2>/dev/null | grep -qx RANK=1 && kill -9 "$q"
    done
    wait "$pid" || true
    line=$(sed -n 's/.*first completed step \([0-9.]*\) s = \(.*\)/\1 s (\2)/p' "$log" | head -n1)
    echo "  $comm round $r: $line"
    totals="$totals ${line%% *}"
  done
  printf 'recovery, 3 -> 2 ranks x %s: death to the first completed step, median %s s (target <= 1 s)\n' \
    "$comm" "$(med "$totals")"
done
