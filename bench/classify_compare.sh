#!/usr/bin/env bash
# classify against torchvision's own references/classification/train.py, side by side: the same
# image folder, the same command line, 2 ranks, one intra-op thread and the same data-loading
# workers per rank, ROUNDS rounds alternating which goes first. Prints per run the final Acc@1,
# the EMA's Acc@1 and the training images per second over the whole recipe (train.py's
# "Training time": every epoch's steps, evaluations and checkpoints), then the medians, the
# spread of Acc@1 over the runs, and the ratio cohort / train.py (above 1: cohort faster).
#
#   bench/classify_compare.sh [ROOT] [ROUNDS] [EPOCHS]   (default: made, 3, 4)
#
# ROOT defaults to a Fashion-MNIST folder (tools/make_image_folder.py, 200 + 50 per class, as
# docs/TRAINING.md's my_images). train.py is not in the torchvision wheel: VISION_REFS names the
# fetched pytorch/vision repository's references/classification folder (bench/torchvision_train.py
# runs it on CPU under Gloo). torch cannot run --sync-bn on CPU (bench/torchvision_train.py says
# why), so both sides run the recipe without it, and a third column runs cohort with it.
# train.py seeds nothing: its runs differ by its own randomness; cohort's use --seed ROUND.
set -euo pipefail
# shellcheck source=bench/cpu_line.sh
. "$(dirname "$0")/cpu_line.sh"
root=$(cd "$(dirname "$0")/.." && pwd)
py=$root/.venv-peers/bin/python
[ -x "$py" ] || { echo "classify_compare: no $py (run tools/setup.sh --peers)" >&2; exit 2; }
bin=$root/build/bin
[ -x "$bin/classify" ] || { echo "classify_compare: $bin/classify not built" >&2; exit 2; }
refs=${VISION_REFS:-/work/vision-refs/references/classification}
[ -f "$refs/train.py" ] || { echo "classify_compare: no train.py in $refs (set VISION_REFS)" >&2; exit 2; }
data=${1:-}
rounds=${2:-3}
epochs=${3:-4}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
if [ -z "$data" ]; then
  data=$work/images
  /usr/bin/python3 "$root/tools/make_image_folder.py" fashion-mnist "$data" --per-class 200 \
    --val-per-class 50 >/dev/null
fi
recipe=(--data-path "$data" --model resnet18 -b 32 --epochs "$epochs" -j 2 --opt sgd --lr 0.02
        --momentum 0.9 --wd 1e-4 --norm-weight-decay 0 --lr-scheduler cosineannealinglr
        --lr-warmup-epochs 1 --lr-warmup-method linear --model-ema --model-ema-steps 4
        --auto-augment ta_wide --mixup-alpha 0.2 --label-smoothing 0.1 --train-crop-size 32
        --val-resize-size 36 --val-crop-size 32 --print-freq 10 --output-dir "")
echo "recipe: ${recipe[*]} (2 ranks, OMP_NUM_THREADS=1)"
echo "train.py: $refs/train.py, torch $("$py" -c 'import torch; print(torch.__version__)')"
torchvision() {
  (cd "$work" && OMP_NUM_THREADS=1 VISION_REFS=$refs "$root/.venv-peers/bin/torchrun" \
     --nproc_per_node 2 --master_port "$((29500 + RANDOM % 1000))" \
     "$root/bench/torchvision_train.py" --device cpu "${recipe[@]}")
}
cohort() {  # cohort SEED [EXTRA...]
  local seed=$1; shift
  (cd "$work" && OMP_NUM_THREADS=1 "$bin/cohortrun" --nproc-per-node 2 --master-port 0 \
     "$bin/classify" "${recipe[@]}" --comm shm --seed "$seed" "$@")
}
for r in $(seq 1 "$rounds"); do
  if [ $((r % 2)) = 1 ]; then
    torchvision >"$work/torchvision.$r.log" 2>"$work/torchvision.$r.err" || { cat "$work/torchvision.$r.err" >&2; exit 1; }
    cohort "$r" >"$work/cohort.$r.log" 2>&1 || { cat "$work/cohort.$r.log" >&2; exit 1; }
  else
    cohort "$r" >"$work/cohort.$r.log" 2>&1 || { cat "$work/cohort.$r.log" >&2; exit 1; }
    torchvision >"$work/torchvision.$r.log" 2>"$work/torchvision.$r.err" || { cat "$work/torchvision.$r.err" >&2; exit 1; }
  fi
  cohort "$r" --sync-bn >"$work/cohort_syncbn.$r.log" 2>&1 || { cat "$work/cohort_syncbn.$r.log" >&2; exit 1; }
  echo "round $r of $rounds done"
done
train_images=$(find "$data/train" -type f | wc -l)
/usr/bin/python3 - "$work" "$rounds" "$epochs" "$train_images" <<'PY'
import re, statistics, sys
work, rounds, epochs, n = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
def read(path):
    text = re.sub(r"^\[rank 0\] ", "", open(path).read(), flags=re.M)
    acc = re.findall(r"^Test:  Acc@1 ([0-9.]+) Acc@5 ([0-9.]+)$", text, re.M)
    ema = re.findall(r"^Test: EMA Acc@1 ([0-9.]+) Acc@5 ([0-9.]+)$", text, re.M)
    h, m, s = map(int, re.search(r"^Training time (\d+):(\d\d):(\d\d)$", text, re.M).groups())
    seconds = 3600 * h + 60 * m + s
    return float(acc[-1][0]), float(acc[-1][1]), float(ema[-1][0]), epochs * n / seconds, seconds
sides = [("train.py", "torchvision"), ("classify", "cohort"), ("classify --sync-bn", "cohort_syncbn")]
res = {name: [read(f"{work}/{stem}.{r}.log") for r in range(1, rounds + 1)] for name, stem in sides}
print("| run | " + " | ".join(name for name, _ in sides) + " |")
print("| --- |" + " --- |" * len(sides))
for r in range(rounds):
    cells = [f"Acc@1 {v[0]:.1f}, Acc@5 {v[1]:.1f}, EMA {v[2]:.1f}, {v[3]:.0f} img/s ({v[4]} s)"
             for v in (res[name][r] for name, _ in sides)]
    print(f"| {r + 1} | " + " | ".join(cells) + " |")
med = {name: [statistics.median(x[i] for x in res[name]) for i in range(4)] for name, _ in sides}
spread = {name: (min(x[0] for x in res[name]), max(x[0] for x in res[name])) for name, _ in sides}
print("| median | " + " | ".join(
    f"Acc@1 {med[n][0]:.1f} ({spread[n][0]:.1f}-{spread[n][1]:.1f}), Acc@5 {med[n][1]:.1f}, "
    f"EMA {med[n][2]:.1f}, {med[n][3]:.0f} img/s" for n, _ in sides) + " |")
t = med["train.py"][3]
print(f"images/s ratio (median): classify / train.py = {med['classify'][3] / t:.2f}x, "
      f"classify --sync-bn / train.py = {med['classify --sync-bn'][3] / t:.2f}x")
PY
