#!/usr/bin/env bash
# Training throughput of the MNIST CNN, batch 64 per rank, side by side in one run:
#   1. PyTorch 1.13 CPU, one process, one thread          (bench/mnist_torch.py)
#   2. cohort mnist_cnn, one process, one thread           (OMP_NUM_THREADS=1)
#   3. cohort mnist_cnn, 2 ranks x one thread, shm, DDP    (global batch 128)
# and prints the ratios the issues ask for (cohort/torch >= 1.0; 2 ranks / 1 rank >= 1.8).
#
#   bench/mnist_throughput.sh [BUILD_DIR] [STEPS]
set -euo pipefail
build="${1:-build}"
steps="${2:-200}"
here="$(cd "$(dirname "$0")" && pwd)"
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1

torch_ips=$(/usr/bin/python3 "$here/mnist_torch.py" --steps "$steps" | sed -n 's/^torch images\/s: \([0-9.]*\).*/\1/p')
one=$("$build/bin/mnist_cnn" --epochs 1 --max-steps "$steps" --log-interval 1000000 --test-batch-size 1000 \
      | sed -n 's/.*training throughput: \([0-9.]*\) images\/s.*/\1/p')
two=$("$build/bin/cohortrun" --nproc-per-node 2 "$build/bin/mnist_cnn" --comm shm --epochs 1 \
      --max-steps "$steps" --log-interval 1000000 --test-batch-size 1000 \
      | sed -n 's/.*training throughput: \([0-9.]*\) images\/s.*/\1/p')
printf '%-44s %10s\n' "run (batch 64 per rank, $steps steps)" "images/s"
printf '%-44s %10.1f\n' "PyTorch 1.13, 1 process x 1 thread" "$torch_ips"
printf '%-44s %10.1f\n' "cohort, 1 process x 1 thread" "$one"
printf '%-44s %10.1f\n' "cohort, 2 ranks x 1 thread (shm, DDP)" "$two"
awk -v t="$torch_ips" -v o="$one" -v w="$two" 'BEGIN {
  printf "cohort 1 rank / PyTorch:     %.2fx (target >= 1.0, goal 1.5)\n", o / t;
  printf "cohort 2 ranks / 1 rank:     %.2fx (target >= 1.8)\n", w / o }'
