#!/usr/bin/env bash
# The zoo's recipes (docs/MODELS.md "Recipes"): each model trained with an SGD recipe (momentum,
# warm-up, cosine, clipping, label smoothing) and an AdamW one, cohort's cifar_cnn and PyTorch
# (bench/zoo_torch.py) side by side on Fashion-MNIST padded to 3x32x32, STEPS steps of batch 64,
# test accuracy on all 10,000 test images; both 2 threads, seed 1, each its own initial weights.
#   bench/zoo_recipes.sh STEPS "MODELS" ["RECIPES"]     e.g. bench/zoo_recipes.sh 200 "cnn_a resnet9"
# Needs tools/setup.sh --peers (.venv-peers with the current torch).
set -euo pipefail
# shellcheck source=bench/cpu_line.sh
. "$(dirname "$0")/cpu_line.sh"  # the CPU the figures come from
steps=$1 models=$2 recipes=${3:-"sgd adamw"}
root=$(cd "$(dirname "$0")/.." && pwd)
py=$root/.venv-peers/bin/python
[ -x "$py" ] || { echo "zoo_recipes: no $py (run tools/setup.sh --peers)" >&2; exit 2; }
warm=$((steps / 10))
declare -A recipe=(
  [sgd]="--optimizer sgd --lr 0.05 --momentum 0.9 --weight-decay 0.0005 --warmup-steps $warm --schedule cosine --clip-grad-norm 1 --label-smoothing 0.1"
  [adamw]="--optimizer adamw --lr 0.001 --weight-decay 0.05 --warmup-steps $warm --schedule cosine --clip-grad-norm 1"
)
cpu=$(sed -n 's/^model name\s*: //p' /proc/cpuinfo | head -1)
echo "zoo_recipes: $steps steps of batch 64, seed 1; $(date -u +%F) on $(nproc) cores ($cpu)"
printf '%-9s %-6s %10s %10s %8s\n' model recipe cohort torch diff
for m in $models; do
  for r in $recipes; do
    read -r -a flags <<<"${recipe[$r]}"
    c=$(OMP_NUM_THREADS=2 "$root/build/bin/cifar_cnn" --model "$m" --dataset fashion-mnist --augment 0 \
        --max-steps "$steps" --log-interval 100000 --seed 1 "${flags[@]}" 2>&1 |
        sed -nE 's/^final test accuracy: ([0-9.]+)%.*/\1/p')
    t=$("$py" "$root/bench/zoo_torch.py" --model "$m" --steps "$steps" --threads 2 --seed 1 --eval \
        "${flags[@]}" | sed -nE 's/torch test accuracy: ([0-9.]+)%/\1/p')
    printf '%-9s %-6s %9s%% %9s%% %+8.2f\n' "$m" "$r" "${c:-?}" "${t:-?}" \
      "$(awk -v a="${c:-0}" -v b="${t:-0}" 'BEGIN { print a - b }')"
  done
done
echo "recipes: sgd = ${recipe[sgd]}"
echo "         adamw = ${recipe[adamw]}"
