#!/usr/bin/env bash
# Elastic training with ZeRO (issue 55): from a rank's death to training again when the lost
# shard is rebuilt from the newest sharded checkpoint (pure sharding, docs/PARALLEL.md "Elastic
# training with ZeRO"), against elastic DDP (--zero-stage 0, which keeps every rank's whole state
# and loses nothing), in the same run, alternating. ResNet-50 (resnet50_tinyimagenet --synthetic,
# batch 4 per rank, Adam: 23.9M parameters, 287 MB of model state under DDP) on 3 ranks over shm,
# one thread each, checkpoints every 5 steps; rank 1 SIGKILLed once step 7 is logged. Prints each
# round's breakdown as the run prints it (detection + agreement + communicator + state + first
# step: "state" is DDP's broadcast of the root's weights, or ZeRO's rebind and sharded load) and
# the steps trained again (ZeRO goes back to the checkpoint of step 5), and the medians.
# A stage written "2h2" is stage 2 with hybrid sharding (--shard-group-size 2): the lost chunk
# rebuilt from a live replica, no step trained again; RANKS=4 gives it replicas (2 x 2).
#
#   [RANKS=3] bench/elastic_zero.sh [ROUNDS] [STAGES]   (default 3 rounds, stages "0 2 3")
set -euo pipefail
# shellcheck source=bench/cpu_line.sh
. "$(dirname "$0")/cpu_line.sh"  # the CPU the figures come from
root=$(cd "$(dirname "$0")/.." && pwd)
bin=$root/build/bin
rounds=${1:-3}
stages=${2:-"0 2 3"}
ranks=${RANKS:-3}
export OMP_NUM_THREADS=1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
med() { printf '%s\n' $1 | sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
echo "elastic with ZeRO: $(date -u +%F), $(nproc --all) cores ($(lscpu | sed -nE 's/^Model name: +//p')), $rounds rounds, medians"
declare -A totals states
for r in $(seq "$rounds"); do
  for z in $stages; do
    log=$work/z$z.log
    rm -rf "$work/ck$z"
    hybrid=()
    [[ $z == *h* ]] && hybrid=(--shard-group-size "${z#*h}")
    "$bin/cohortrun" --nproc-per-node "$ranks" --master-port 0 --elastic "$((ranks - 1)):$ranks" \
      "$bin/resnet50_tinyimagenet" --synthetic --synthetic-size 512 --batch-size 4 --optimizer adam \
      --comm shm --epochs 1 --max-steps 12 --log-interval 1 --no-eval \
      --elastic "$((ranks - 1)):$ranks" --zero-stage "${z%h*}" "${hybrid[@]}" \
      --checkpoint-dir "$work/ck$z" --checkpoint-every 5 >"$log" 2>&1 &
    pid=$!
    for _ in $(seq 1 2400); do grep -q "step 7/12" "$log" 2>/dev/null && break; sleep 0.1; done
    for q in $(pgrep -x resnet50_tinyim); do
      grep -qx RANK=1 < <(tr '\0' '\n' <"/proc/$q/environ" 2>/dev/null) && kill -9 "$q"
    done
    wait "$pid" || true
    line=$(sed -n 's/.*first completed step \([0-9.]*\) s = \(.*\)/\1 s (\2)/p' "$log" | head -n1)
    again=$(grep -oE "ZeRO stage [0-9](: the newest sharded checkpoint|, hybrid sharding: the lost chunks rebuilt from live replicas)[^)]*" "$log" | head -n1 || true)
    st=$(sed -nE 's/.*first completed step [0-9.]+ s = .* \+ state ([0-9.]+) \+ first step.*/\1/p' "$log" | head -n1)
    [ -n "$line" ] || { echo "  stage $z round $r: no recovery reported"; grep -E "rror" "$log" | tail -n 3; continue; }
    echo "  stage $z round $r: $line${again:+; $again}"
    totals[$z]="${totals[$z]:-} ${line%% *}"
    states[$z]="${states[$z]:-} $st"
  done
done
for z in $stages; do
  [ -n "${totals[$z]:-}" ] || continue
  printf 'resnet50 + adam, %d -> %d ranks x shm, zero stage %s: death to the first completed step, median %s s (state %s s)\n' \
    "$ranks" "$((ranks - 1))" "$z" "$(med "${totals[$z]}")" "$(med "${states[$z]}")"
done
