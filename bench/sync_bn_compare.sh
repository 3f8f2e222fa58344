#!/usr/bin/env bash
# The cost of --sync-bn: the zoo's program on 2 ranks (shm) with plain BatchNorm2d and with
# synchronised batch norm, the same model, synthetic data, steps and batch, alternating which goes
# first over ROUNDS rounds; prints each side's median images/s (the Trainer's training
# throughput) and the ratio sync / plain (the issue's target: at least 0.9).
#
#   bench/sync_bn_compare.sh [MODEL] [ROUNDS] [STEPS] [BATCH]   (default: resnet9 3 12 16)
set -euo pipefail
# shellcheck source=bench/cpu_line.sh
. "$(dirname "$0")/cpu_line.sh"
root=$(cd "$(dirname "$0")/.." && pwd)
model=${1:-resnet9}
rounds=${2:-3}
steps=${3:-12}
batch=${4:-16}
bin=$root/build/bin
[ -x "$bin/cifar_cnn" ] || { echo "sync_bn_compare: $bin/cifar_cnn not built" >&2; exit 2; }
# shellcheck source=bench/ab_rounds.sh
. "$(dirname "$0")/ab_rounds.sh"
run() {  # run EXTRA...: prints the run's images/s
  OMP_NUM_THREADS=1 "$bin/cohortrun" --nproc-per-node 2 --master-port 0 "$bin/cifar_cnn" \
    --model "$model" --synthetic --epochs 1 --max-steps "$steps" --batch-size "$batch" --comm shm \
    --no-eval "$@" 2>&1 | throughput
}
plain() { run; }
synced() { run --sync-bn; }
echo "sync_bn_compare: $model, 2 ranks (shm), batch $batch per rank, $steps steps, $rounds rounds alternating"
ab_rounds "$rounds" "plain BatchNorm2d" "--sync-bn" plain synced
