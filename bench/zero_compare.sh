#!/usr/bin/env bash
# The cost of --zero-stage S (ZeRO: the optimizer state sharded, at 2 the gradients too, at 3 the
# parameters too): a program on 2 ranks (shm) as plain DDP and with --zero-stage S (STAGE, default
# 1), the same steps and batch, alternating which goes first over ROUNDS rounds; prints each
# side's median images/s (the Trainer's training throughput) and the ratio ZeRO / DDP (the issue's target: at least 0.95 for stages 1 and 2, 0.85 for stage 3).
#
#   [STAGE=2] bench/zero_compare.sh [MODEL] [ROUNDS] [STEPS] [BATCH]   (default: mnist 5 200 64)
#
# MODEL mnist runs mnist_cnn (Fashion-MNIST, Adadelta); any zoo model runs cifar_cnn on synthetic
# data with Adam. EXTRA="--deterministic" adds flags to both sides.
set -euo pipefail
# shellcheck source=bench/cpu_line.sh
. "$(dirname "$0")/cpu_line.sh"
# shellcheck source=bench/ab_rounds.sh
. "$(dirname "$0")/ab_rounds.sh"
root=$(cd "$(dirname "$0")/.." && pwd)
model=${1:-mnist}
rounds=${2:-5}
steps=${3:-200}
batch=${4:-64}
stage=${STAGE:-1}
case $stage in 1 | 2 | 3) ;; *) echo "zero_compare: STAGE=$stage: ZeRO stages are 1, 2 and 3" >&2; exit 2 ;; esac
bin=$root/build/bin
[ -x "$bin/cifar_cnn" ] && [ -x "$bin/mnist_cnn" ] || { echo "zero_compare: $bin not built" >&2; exit 2; }
run() {  # run EXTRA...: prints the run's images/s
  local program=(mnist_cnn)
  [ "$model" = mnist ] || program=(cifar_cnn --model "$model" --synthetic --optimizer adam)
  # shellcheck disable=SC2086
  OMP_NUM_THREADS=1 "$bin/cohortrun" --nproc-per-node 2 --master-port 0 "$bin/${program[0]}" \
    "${program[@]:1}" --epochs 1 --max-steps "$steps" --batch-size "$batch" --comm shm ${EXTRA:-} \
    "$@" 2>&1 | throughput
}
ddp() { run; }
zero() { run --zero-stage "$stage"; }
echo "zero_compare: $model, 2 ranks (shm), batch $batch per rank, $steps steps, $rounds rounds alternating ${EXTRA:-}"
ab_rounds "$rounds" "DDP" "--zero-stage $stage" ddp zero
