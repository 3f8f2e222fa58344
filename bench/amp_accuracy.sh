#!/usr/bin/env bash
# Mixed precision's accuracy (issue 33): the MNIST CNN (Fashion-MNIST) trained one epoch with
# --amp bf16 and in f32 on the same seeds, and with --amp bf16 at 1, 2 and 4 ranks (shm DDP, the
# same global batch of 64 split between the ranks' --batch-size), printing test accuracies, the
# bf16 - f32 difference per seed (target: within 0.3 points) and, per rank count, f32 and bf16 on
# the first seed: the trend over ranks, and whether bf16 has one f32 does not.
#
#   bench/amp_accuracy.sh [SEEDS...]        (default 1 2 3)
set -euo pipefail
# shellcheck source=bench/cpu_line.sh
. "$(dirname "$0")/cpu_line.sh"  # the CPU the figures come from
root=$(cd "$(dirname "$0")/.." && pwd)
bin=$root/build/bin
data=/usr/share/datasets/fashion-mnist
seeds=("$@")
[ ${#seeds[@]} -eq 0 ] && seeds=(1 2 3)
acc() { sed -nE 's/.*final test accuracy: ([0-9.]+)%.*/\1/p' | tail -n1; }
flags=$(grep -o -w -E 'avx512_bf16|amx_bf16' /proc/cpuinfo | sort -u | paste -sd' ')
echo "amp_accuracy: $(date -u +%F), $(nproc) cores ($(lscpu | sed -nE 's/^Model name: +//p')), bf16 flags: ${flags:-none}; mnist_cnn 1 epoch, batch 64"
printf '%-6s %9s %9s %8s\n' seed f32 bf16 "bf16-f32"
for s in "${seeds[@]}"; do
  a=$(OMP_NUM_THREADS=2 "$bin/mnist_cnn" --epochs 1 --seed "$s" --data "$data" --log-interval 100000 | acc)
  b=$(OMP_NUM_THREADS=2 "$bin/mnist_cnn" --epochs 1 --seed "$s" --data "$data" --log-interval 100000 --amp bf16 | acc)
  printf '%-6s %8s%% %8s%% %8s\n' "$s" "$a" "$b" "$(awk -v x="$b" -v y="$a" 'BEGIN { printf "%+.2f", x - y }')"
done
printf '\n%-6s %12s %9s %9s %8s\n' ranks "batch/rank" f32 bf16 "bf16-f32"
for n in 1 2 4; do
  per=$((64 / n))
  a="" b=""
  for amp in off bf16; do
    if [ "$n" = 1 ]; then
      v=$(OMP_NUM_THREADS=2 "$bin/mnist_cnn" --epochs 1 --seed "${seeds[0]}" --data "$data" --log-interval 100000 --amp "$amp" | acc)
    else
      v=$(OMP_NUM_THREADS=1 "$bin/cohortrun" --nproc-per-node "$n" --master-port 0 "$bin/mnist_cnn" --comm shm \
          --epochs 1 --seed "${seeds[0]}" --batch-size "$per" --data "$data" --log-interval 100000 --amp "$amp" | acc)
    fi
    if [ "$amp" = off ]; then a=$v; else b=$v; fi
  done
  printf '%-6s %12s %8s%% %8s%% %8s\n' "$n" "$per" "$a" "$b" "$(awk -v x="$b" -v y="$a" 'BEGIN { printf "%+.2f", x - y }')"
done
