#!/usr/bin/env bash
# Training on one's own image folder from the user's side:
#   1. tools/make_image_folder.py makes ROOT/train and ROOT/val from Fashion-MNIST (PNG) and a
#      synthetic photo-like JPEG set of 300-500 px images; its bad arguments are one-line errors;
#   2. cifar_cnn --data-path ROOT trains on the PNG folder with the reference recipe's transforms
#      (RandomResizedCrop, flip; Resize + CenterCrop for evaluation) on 2 ranks with 2 worker
#      threads each: the first line names the folder and the transforms, the test accuracy after
#      3 epochs is well above chance (10 classes), the ranks hold identical weights;
#   3. with --mixup-alpha, --cutmix-alpha (soft targets, label smoothing) and --random-erase it
#      still learns; the
#      JPEG folder (images of different sizes) trains a step at 224 px;
#   4. the checkpoint holds the class names (run.data.classes), and resuming on a folder whose
#      classes differ is refused;
#   5. bad folders: a root without val/, a class folder with no image, a corrupt image (the
#      error names the file, from the loader's worker thread), each one error and a non-zero exit;
#      with --skip-bad-images the corrupt image is replaced and named at the epoch's end (that
#      run also takes --auto-augment ta_wide, --interpolation nearest and --color-jitter).
# usage: test_image_folder.sh CIFAR_CNN COHORTRUN SOURCE_DIR
set -uo pipefail
bin=$1 run=$2 src=$3
fail() { echo "FAIL: $*" >&2; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
make=(/usr/bin/python3 "$src/tools/make_image_folder.py")

"${make[@]}" fashion-mnist "$work/fm" --per-class 60 --val-per-class 20 || fail "make fashion-mnist"
"${make[@]}" synthetic "$work/jpg" --classes 3 --train-per-class 4 --val-per-class 2 --seed 3 ||
  fail "make synthetic"
out=$("${make[@]}" fashion-mnist "$work/fm" 2>&1) && fail "a non-empty OUT was accepted: $out"
grep -q -- "--force" <<<"$out" || fail "non-empty OUT: no hint at --force: $out"
out=$("${make[@]}" synthetic "$work/x" --classes 0 --train-per-class 1 --val-per-class 1 2>&1) &&
  fail "--classes 0 was accepted"
echo "ok: make_image_folder.py refuses: $out"

out=$(OMP_NUM_THREADS=1 timeout 300 "$run" --nproc-per-node 2 --master-port 0 "$bin" --model cnn_a \
  --data-path "$work/fm" --train-crop-size 28 --val-resize-size 32 --val-crop-size 28 \
  --epochs 3 --batch-size 32 --lr 0.003 --workers 2 --comm shm 2>&1) || fail "training exited $?: $out"
echo "$out" | grep -v " step " | tail -8
grep -q "image folder $work/fm/train (600 images of their own sizes, 10 classes) | train: RandomResizedCrop(28, bilinear), flip | val: Resize(32), CenterCrop(28) | 200 val images" <<<"$out" ||
  fail "no first line naming the folder and the transforms"
acc=$(echo "$out" | sed -n 's/.*final test accuracy: \([0-9.]*\)%.*/\1/p')
[ -n "$acc" ] || fail "no final accuracy"
python3 -c "import sys; sys.exit(0 if float('$acc') > 35 else 1)" || fail "accuracy $acc% is not well above chance (10%)"
grep -q "ranks hold identical weights: yes" <<<"$out" || fail "ranks differ"

out=$(OMP_NUM_THREADS=2 timeout 300 "$bin" --model cnn_a --data-path "$work/fm" --train-crop-size 28 \
  --val-resize-size 32 --val-crop-size 28 --epochs 2 --batch-size 32 --lr 0.003 --workers 2 \
  --mixup-alpha 0.2 --cutmix-alpha 1.0 --label-smoothing 0.1 --random-erase 0.25 2>&1) ||
  fail "MixUp/CutMix run exited $?: $out"
grep -q "| RandomErasing(p=0.25) | batches: RandomChoice(MixUp(alpha=0.2), CutMix(alpha=1))" <<<"$out" ||
  fail "no MixUp/CutMix in the first line: $(echo "$out" | head -2)"
acc=$(echo "$out" | sed -n 's/.*final test accuracy: \([0-9.]*\)%.*/\1/p')
python3 -c "import sys; sys.exit(0 if float('$acc') > 25 else 1)" || fail "MixUp/CutMix: accuracy $acc%"
echo "ok: MixUp/CutMix trains (accuracy $acc%)"

out=$(OMP_NUM_THREADS=2 timeout 300 "$bin" --model resnet50 --data-path "$work/jpg" --epochs 1 \
  --max-steps 1 --batch-size 4 --test-batch-size 6 --workers 2 2>&1) || fail "224-px JPEG run exited $?: $out"
grep -q "model resnet50 ([0-9]* parameters, input \[3, 224, 224\])" <<<"$out" || fail "not 224 px: $out"
echo "ok: the JPEG folder trains at 224 px"

# The class names go into the checkpoint (run.data.classes); a resume on other classes is refused.
out=$(OMP_NUM_THREADS=2 timeout 300 "$bin" --model cnn_a --data-path "$work/fm" --train-crop-size 28 \
  --val-resize-size 32 --val-crop-size 28 --epochs 1 --max-steps 3 --batch-size 32 \
  --checkpoint-dir "$work/ckpt" 2>&1) || fail "checkpointed run exited $?: $out"
python3 - "$work/ckpt/checkpoint.state.safetensors" <<'PY' || fail "no class names in the checkpoint"
import json, struct, sys
with open(sys.argv[1], "rb") as f:
    n = struct.unpack("<Q", f.read(8))[0]
    meta = json.loads(f.read(n))["__metadata__"]
names = json.loads(meta["run.data.classes"])
assert names == sorted(names) and len(names) == 10 and names[0] == "Ankle_boot", names
print("checkpoint classes:", names)
PY
# --test-only evaluates the checkpoint's weights and stops; without weights it is refused.
out=$(OMP_NUM_THREADS=2 timeout 120 "$bin" --model cnn_a --data-path "$work/fm" --train-crop-size 28 \
  --val-resize-size 32 --val-crop-size 28 --test-only --resume "$work/ckpt/checkpoint.safetensors" 2>&1) ||
  fail "--test-only exited $?: $out"
grep -qE "^Test: Acc@1 [0-9.]+ Acc@5 [0-9.]+ \(loss [0-9.]+, 200 images\)" <<<"$out" ||
  fail "--test-only printed no Acc@1/Acc@5 line: $out"
grep -q "Test set (epoch" <<<"$out" && fail "--test-only trained: $out"
echo "ok: $(echo "$out" | grep "^Test: Acc@1")"
mv "$work/fm/train/Bag" "$work/fm/train/Bag2" && mv "$work/fm/val/Bag" "$work/fm/val/Bag2"
expect_error_any() {
  local pattern=$1; shift
  local o
  o=$(OMP_NUM_THREADS=1 timeout 120 "$bin" --model cnn_a "$@" 2>&1) && fail "cifar_cnn $* succeeded: $o"
  grep -qF -- "$pattern" <<<"$o" || fail "cifar_cnn $*: no '$pattern' in: $o"
  echo "ok: $(echo "$o" | grep -F -- "$pattern" | head -1)"
}
expect_error_any 'cannot resume from' --data-path "$work/fm" --train-crop-size 28 --epochs 2 \
  --checkpoint-dir "$work/ckpt"
mv "$work/fm/train/Bag2" "$work/fm/train/Bag" && mv "$work/fm/val/Bag2" "$work/fm/val/Bag"

expect_error() {  # expect_error PATTERN ARGS...: cifar_cnn ARGS fails with one line holding PATTERN
  local pattern=$1; shift
  local o rc
  o=$(OMP_NUM_THREADS=1 timeout 120 "$bin" --model cnn_a "$@" 2>&1); rc=$?
  [ "$rc" -ne 0 ] || fail "cifar_cnn $* succeeded: $o"
  grep -qF -- "$pattern" <<<"$o" || fail "cifar_cnn $*: no '$pattern' in: $o"
  echo "ok ($rc): $(echo "$o" | tail -1)"
}
expect_error "--test-only needs weights to evaluate" --data-path "$work/fm" --test-only
mkdir -p "$work/noval/train/a"
expect_error "needs train/ and val/" --data-path "$work/noval"
mkdir -p "$work/fm/train/zz_empty" "$work/fm/val/zz_empty"
expect_error "no image file in the class folder(s) 'zz_empty'" --data-path "$work/fm"
rmdir "$work/fm/train/zz_empty" "$work/fm/val/zz_empty"
head -c 100 "$src/tests/golden/images/rgb.png" > "$work/fm/train/Bag/00000_bad.png"
expect_error "00000_bad.png' (100 bytes) cannot be decoded" --data-path "$work/fm" \
  --train-crop-size 28 --epochs 1 --workers 2 --batch-size 600
# --skip-bad-images: the epoch runs, and its end names the file skipped; with the automatic
# augmentations of the reference script (--auto-augment, nearest sampling) and ColorJitter.
out=$(OMP_NUM_THREADS=2 timeout 300 "$bin" --model cnn_a --data-path "$work/fm" --train-crop-size 28 \
  --val-resize-size 32 --val-crop-size 28 --epochs 1 --batch-size 601 --workers 2 \
  --skip-bad-images --auto-augment ta_wide --interpolation nearest --color-jitter 0.3 2>&1) ||
  fail "--skip-bad-images run exited $?: $out"
grep -q "train: RandomResizedCrop(28, nearest), flip .* | ColorJitter(0.30) | auto-augment ta_wide" <<<"$out" ||
  fail "no augmentation in the first line: $(echo "$out" | head -1)"
grep -q "skipped 1 unreadable sample in epoch 1" <<<"$out" || fail "no report of the skipped image: $out"
grep -q "00000_bad.png' (100 bytes) cannot be decoded" <<<"$out" || fail "the report does not name the file: $out"
grep -q "final test accuracy" <<<"$out" || fail "the run did not finish: $out"
echo "ok: $(echo "$out" | grep -A1 "skipped 1 unreadable" | tr '\n' ' ')"
echo "image folders: all checks passed"
