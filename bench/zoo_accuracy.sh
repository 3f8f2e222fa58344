#!/usr/bin/env bash
# Test accuracy of a zoo model after the same steps with the same recipe, cohort's cifar_cnn and
# PyTorch (bench/zoo_torch.py, models/torch_models.py) side by side on Fashion-MNIST padded to
# 32x32 (3 channels), for each seed; prints each run and the mean difference.
#   bench/zoo_accuracy.sh MODEL STEPS "SEEDS" [extra flags for both, e.g. --weight-decay 0.001]
# MATCHED=1: both start from the same weights (cohort's, saved with --save-init and loaded into
# PyTorch with strict=True) and take the batches in data-set order (no shuffling), so what remains
# between them is float rounding and dropout's random masks.
# Needs tools/setup.sh --peers (.venv-peers with the current torch). Both sides run 2 threads.
set -euo pipefail
# shellcheck source=bench/cpu_line.sh
. "$(dirname "$0")/cpu_line.sh"  # the CPU the figures come from
model=$1 steps=$2 seeds=$3
shift 3
root=$(cd "$(dirname "$0")/.." && pwd)
py=$root/.venv-peers/bin/python
[ -x "$py" ] || { echo "zoo_accuracy: no $py (run tools/setup.sh --peers)" >&2; exit 2; }
echo "zoo_accuracy: $model, $steps steps of batch 64, Adam lr 0.001 $*, seeds $seeds; $(date -u +%F) on $(nproc) cores"
[ "${MATCHED:-0}" = 1 ] && echo "matched: the same initial weights, batches in data-set order"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
sum=0 n=0
for seed in $seeds; do
  cflags=() tflags=()
  if [ "${MATCHED:-0}" = 1 ]; then
    cflags=(--save-init "$work/init.safetensors" --shuffle 0)
    tflags=(--init "$work/init.safetensors" --no-shuffle)
  fi
  c=$(OMP_NUM_THREADS=2 "$root/build/bin/cifar_cnn" --model "$model" --dataset fashion-mnist --augment 0 \
      --max-steps "$steps" --log-interval 100000 --seed "$seed" "${cflags[@]}" "$@" | sed -nE 's/final test accuracy: ([0-9.]+)%.*/\1/p')
  t=$("$py" "$root/bench/zoo_torch.py" --model "$model" --steps "$steps" --threads 2 --seed "$seed" --eval "${tflags[@]}" "$@" \
      | sed -nE 's/torch test accuracy: ([0-9.]+)%/\1/p')
  echo "seed $seed: cohort $c%  torch $t%  difference $(awk -v a="$c" -v b="$t" 'BEGIN { printf "%+.2f", a - b }') points"
  sum=$(awk -v s="$sum" -v a="$c" -v b="$t" 'BEGIN { print s + a - b }'); n=$((n + 1))
done
echo "mean difference (cohort - torch): $(awk -v s="$sum" -v n="$n" 'BEGIN { printf "%+.2f", s / n }') points over $n seeds"
