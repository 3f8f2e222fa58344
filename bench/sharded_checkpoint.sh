#!/usr/bin/env bash
# Save and load times of ResNet-50 + Adam (or MODEL) checkpoints: plain DDP's consolidated save
# (rank 0 writes everything) against ZeRO's sharded save at 2 and 4 ranks (shm), one table row each
# (build/bin/sharded_checkpoint_bench, bench/sharded_checkpoint.cpp). Files under DIR (/tmp).
#
#   [STAGES="0 2 3"] [DIR=/tmp] bench/sharded_checkpoint.sh [MODEL] [RANKS...]
set -euo pipefail
# shellcheck source=bench/cpu_line.sh
. "$(dirname "$0")/cpu_line.sh"
root=$(cd "$(dirname "$0")/.." && pwd)
bin=$root/build/bin
[ -x "$bin/sharded_checkpoint_bench" ] || { echo "sharded_checkpoint.sh: $bin/sharded_checkpoint_bench not built" >&2; exit 2; }
model=${1:-resnet50}
shift || true
ranks=("$@")
[ ${#ranks[@]} -gt 0 ] || ranks=(2 4)
echo "| model | ranks | checkpoint | MB per rank (largest) | save s | snapshot copy ms | load s | read MB per rank | staged MB per rank | consolidate s |"
echo "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"
for n in "${ranks[@]}"; do
  for stage in ${STAGES:-0 2 3}; do
    COHORT_COMM=shm OMP_NUM_THREADS=1 "$bin/cohortrun" --nproc-per-node "$n" --master-port 0 \
      "$bin/sharded_checkpoint_bench" "$model" "$stage" "${DIR:-/tmp}" 2>&1 |
      sed -n 's/^\(\[rank 0\] \)\?\(| .*\)$/\2/p'
  done
done
