#!/usr/bin/env bash
# Elastic training's costs (issue 31), mnist_cnn under cohortrun, one thread per rank:
#  1. steady state: the same 2-rank shm job with and without --elastic (cohortrun --elastic serves
#     the store, a watcher polls it every 25 ms, each step marks what a discarded step would put
#     back), ROUNDS alternating rounds, median training images/s; the ratio's target is >= 0.99
#     (the bookkeeping costs at most 1% of step time);
#  2. recovery: a 3-rank job over shm and over ucx with rank 1 SIGKILLed at step 20, ROUNDS times
#     each: the time from the death to the new group's first completed step, as the run prints
#     it (detection + agreement + communicator + state + first step), median; target <= 1 s;
#  3. healing (HEAL=0 skips it): ResNet-50 (resnet50_tinyimagenet --synthetic, batch 4 per rank,
#     Adam's state: 287 MB) on 3 ranks, rank 1 SIGKILLed at step 3 and started again
#     (--elastic-respawn 1): the joiner's payload broadcast of the state (its "moved in" time),
#     against cohort-bench --op broadcast of the same bytes over 3 ranks, the same backend, in the
#     same run: warm (2 untimed ops, then the mean of 5 blocking ones) and cold (one op on a fresh
#     communicator, as the state's is); target: within 2x of the link (ratio >= 0.5). Also prints
#     the whole growth as rank 0 sees it (model built, state packed, sent and loaded).
#
#   bench/elastic.sh [ROUNDS] [STEPS]   (default 3 rounds, 200 steps for the steady state;
#                                        HEAL_ONLY=1: part 3 alone)
set -euo pipefail
# shellcheck source=bench/cpu_line.sh
. "$(dirname "$0")/cpu_line.sh"  # the CPU the figures come from
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
  [ "${HEAL_ONLY:-0}" = 1 ] && break
  "$bin/cohortrun" --nproc-per-node 2 --master-port 0 "$bin/mnist_cnn" --comm shm "${job[@]}" \
    --max-steps "$steps" --log-interval 50 >"$work/plain.log" 2>&1
  plain="$plain $(ips "$work/plain.log")"
  "$bin/cohortrun" --nproc-per-node 2 --master-port 0 --elastic 1:2 "$bin/mnist_cnn" --comm shm \
    "${job[@]}" --max-steps "$steps" --log-interval 50 --elastic 1:2 >"$work/elastic.log" 2>&1
  elastic="$elastic $(ips "$work/elastic.log")"
done
p=$(med "$plain") e=$(med "$elastic")
[ "${HEAL_ONLY:-0}" = 1 ] || printf 'steady state, 2 ranks x shm, %d steps: plain %s images/s, --elastic %s images/s: ratio %.3f (target >= 0.99)  [rounds: plain%s; elastic%s]\n' \
  "$steps" "$p" "$e" "$(echo "$e / $p" | bc -l)" "$plain" "$elastic"

for comm in shm ucx; do
  [ "${HEAL_ONLY:-0}" = 1 ] && break
  totals=""
  for r in $(seq "$rounds"); do
    log=$work/kill_$comm.log
    "$bin/cohortrun" --nproc-per-node 3 --master-port 0 --elastic 2:3 "$bin/mnist_cnn" --comm "$comm" \
      "${job[@]}" --max-steps 40 --log-interval 1 --elastic 2:3 >"$log" 2>&1 &
    pid=$!
    for _ in $(seq 1 1200); do grep -q "step 20/40" "$log" 2>/dev/null && break; sleep 0.05; done
    for q in $(pgrep -x mnist_cnn); do
      grep -qx RANK=1 < <(tr '\0' '\n' <"/proc/$q/environ" 2>/dev/null) && kill -9 "$q"
    done
    wait "$pid" || true
    line=$(sed -n 's/.*first completed step \([0-9.]*\) s = \(.*\)/\1 s (\2)/p' "$log" | head -n1)
    echo "  $comm round $r: $line"
    totals="$totals ${line%% *}"
  done
  printf 'recovery, 3 -> 2 ranks x %s: death to the first completed step, median %s s (target <= 1 s)\n' \
    "$comm" "$(med "$totals")"
done

[ "${HEAL:-1}" = 0 ] && exit 0
export UCX_TLS=${UCX_TLS:-^cma}  # as elastic jobs run (parallel/elastic.cpp)
bench_bcast() {  # COMM BYTES WARMUP ITERS: cohort-bench's broadcast time in us
  "$bin/cohortrun" --nproc-per-node 3 --master-port 0 "$bin/cohort-bench" --comm "$1" --op broadcast \
    -b "$2" -e "$2" -d u8 -z 1 -w "$3" -n "$4" 2>&1 | awk '/^\[rank 0\] +[0-9]/ { print $7 }'
}
for comm in shm ucx; do
  moved="" warm="" cold="" whole="" mb=""
  for r in $(seq "$rounds"); do
    log=$work/heal_$comm.log
    "$bin/cohortrun" --nproc-per-node 3 --master-port 0 --elastic 2:3 --elastic-respawn 1 \
      "$bin/resnet50_tinyimagenet" --synthetic --synthetic-size 512 --batch-size 4 --comm "$comm" \
      --epochs 1 --max-steps 12 --log-interval 1 --no-eval --elastic 2:3 >"$log" 2>&1 &
    pid=$!
    for _ in $(seq 1 2400); do grep -q "step 3/12" "$log" 2>/dev/null && break; sleep 0.1; done
    for q in $(pgrep -x resnet50_tinyim); do
      grep -qx RANK=1 < <(tr '\0' '\n' <"/proc/$q/environ" 2>/dev/null) && kill -9 "$q"
    done
    wait "$pid" || true
    line=$(grep -o "joined membership [0-9]* at step [0-9]*: [0-9.]* MB of state.*" "$log" | head -n1)
    mb=$(echo "$line" | sed -nE 's/.*: ([0-9.]+) MB of state.*/\1/p')
    m=$(echo "$line" | sed -nE 's/.*moved in ([0-9.]+) s.*/\1/p')
    g=$(sed -nE 's/.*then ([0-9.]+) s until the joiners had built their model and taken the state.*/\1/p' "$log" | head -n1)
    [ -n "$m" ] || { echo "  $comm round $r: no join reported"; continue; }
    bytes=$(echo "$mb * 1000000 / 1" | bc)
    w=$(bench_bcast "$comm" "$bytes" 2 5) c=$(bench_bcast "$comm" "$bytes" 0 1)
    echo "  $comm round $r: $mb MB moved in $m s; cohort-bench: warm $w us, cold $c us; whole growth $g s"
    moved="$moved $m" warm="$warm $w" cold="$cold $c" whole="$whole $g"
  done
  [ -n "$moved" ] || continue
  M=$(med "$moved") W=$(med "$warm") C=$(med "$cold")
  printf 'healing, resnet50 x %s: %s MB moved in %s s (%.0f MB/s); cohort-bench broadcast: warm %.0f MB/s, cold %.0f MB/s; ratio %.2f vs warm, %.2f vs cold (target >= 0.5); whole growth median %s s\n' \
    "$comm" "$mb" "$M" "$(echo "$mb / $M" | bc -l)" "$(echo "$mb / ($W / 1000000)" | bc -l)" \
    "$(echo "$mb / ($C / 1000000)" | bc -l)" "$(echo "($W / 1000000) / $M" | bc -l)" \
    "$(echo "($C / 1000000) / $M" | bc -l)" "$(med "$whole")"
done
