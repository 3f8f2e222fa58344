#!/usr/bin/env bash
# Image-folder loading side by side: cohort's DataLoader (bench/imagefolder_bench) against
# torchvision's (bench/imagefolder_torch.py, .venv-peers), the same folder, the same transforms
# (decode, RandomResizedCrop(224) bilinear antialias, flip, to float, normalize), the same number
# of worker threads, alternating over ROUNDS rounds; prints each side's median images/s and the
# ratio cohort / torchvision (above 1: cohort faster). Without ROOT it makes a photo-like set
# (tools/make_image_folder.py synthetic: 400 training JPEGs of 300-500 px, seed 1).
#
#   bench/imagefolder_compare.sh [ROOT] [ROUNDS] [WORKERS] [BATCH]   (default: made, 3, 2, 32)
#
# AUTO_AUGMENT=ta_wide|ra|imagenet adds that augmentation after the flip on both sides (bilinear
# sampling, the reference script's default --interpolation).
set -euo pipefail
# shellcheck source=bench/cpu_line.sh
. "$(dirname "$0")/cpu_line.sh"
root=$(cd "$(dirname "$0")/.." && pwd)
py=$root/.venv-peers/bin/python
[ -x "$py" ] || { echo "imagefolder_compare: no $py (run tools/setup.sh --peers)" >&2; exit 2; }
bench=$root/build/bin/imagefolder_bench
[ -x "$bench" ] || { echo "imagefolder_compare: $bench not built" >&2; exit 2; }
data=${1:-}
rounds=${2:-3}
workers=${3:-2}
batch=${4:-32}
aug=()
[ -n "${AUTO_AUGMENT:-}" ] && aug=(--auto-augment "$AUTO_AUGMENT")
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
if [ -z "$data" ]; then
  data=$out/images
  /usr/bin/python3 "$root/tools/make_image_folder.py" synthetic "$data" --classes 10 \
    --train-per-class 40 --val-per-class 10 --seed 1 >&2
fi
for r in $(seq 1 "$rounds"); do
  # Alternate who goes first, so neither always meets a cold page cache or a warm CPU.
  if [ $((r % 2)) = 1 ]; then order="cohort torch"; else order="torch cohort"; fi
  for side in $order; do
    if [ "$side" = cohort ]; then
      OMP_NUM_THREADS=1 "$bench" "$data" --workers "$workers" --batch-size "$batch" "${aug[@]}" >"$out/cohort.$r"
    else
      OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 "$py" "$root/bench/imagefolder_torch.py" "$data" \
        --workers "$workers" --batch-size "$batch" "${aug[@]}" >"$out/torch.$r"
    fi
  done
done
python3 - "$out" "$rounds" "$workers" "$batch" "${AUTO_AUGMENT:-}" <<'PY'
import re, statistics, sys
out, rounds, workers, batch = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
def result(path):
    for line in open(path):
        if line.startswith("RESULT"):
            return dict(kv.split("=", 1) for kv in line.split()[1:])
    sys.exit(f"imagefolder_compare: no RESULT line in {path}")
c = [float(result(f"{out}/cohort.{r}")["images_per_s"]) for r in range(1, rounds + 1)]
t = [result(f"{out}/torch.{r}") for r in range(1, rounds + 1)]
tv = [float(x["images_per_s"]) for x in t]
aug = sys.argv[5] if len(sys.argv) > 5 and sys.argv[5] else "none"
print(f"imagefolder_compare: {rounds} rounds alternating, {workers} worker threads each, batch "
      f"{batch}, auto-augment {aug}; torch {t[0]['torch']}, torchvision {t[0]['torchvision']}")
print(f"cohort      images/s: {' '.join(f'{x:.1f}' for x in c)}  median {statistics.median(c):.1f}")
print(f"torchvision images/s: {' '.join(f'{x:.1f}' for x in tv)}  median {statistics.median(tv):.1f}")
print(f"cohort / torchvision: {statistics.median(c) / statistics.median(tv):.2f}x")
PY
