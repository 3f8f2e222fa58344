#!/usr/bin/env bash
# Model-state memory per rank of MODEL (default resnet50) + Adam, DDP and ZeRO stages 1, 2, 3 at
# 1, 2 and 4 ranks (shm) next to the formula (build/bin/zero_memory, bench/zero_memory.cpp): one
# table row per rank.
#
#   [STAGES="0 3"] bench/zero_memory.sh [MODEL] [RANKS...]   (default: resnet50 1 2 4, stages 0-3)
set -euo pipefail
# shellcheck source=bench/cpu_line.sh
. "$(dirname "$0")/cpu_line.sh"
root=$(cd "$(dirname "$0")/.." && pwd)
bin=$root/build/bin
[ -x "$bin/zero_memory" ] || { echo "zero_memory.sh: $bin/zero_memory not built" >&2; exit 2; }
model=${1:-resnet50}
shift || true
ranks=("$@")
[ ${#ranks[@]} -gt 0 ] || ranks=(1 2 4)
echo "| model | ranks | mode | rank | parameters MiB | gradients MiB | optimizer state MiB | model state MiB | formula MiB | vs formula | step peak MiB | peak RSS MiB |"
echo "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"
for n in "${ranks[@]}"; do
  for stage in ${STAGES:-0 1 2 3}; do
    COHORT_COMM=shm OMP_NUM_THREADS=1 "$bin/cohortrun" --nproc-per-node "$n" --master-port 0 \
      "$bin/zero_memory" "$model" "$stage" 2>&1 | sed -n 's/^\(\[rank 0\] \)\?\(| .*\)$/\2/p'
  done
done
