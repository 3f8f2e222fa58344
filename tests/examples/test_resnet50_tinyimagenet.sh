#!/usr/bin/env bash
# examples/resnet50_tinyimagenet from the user's side: without data it says where to put it (one
# line, exit 1); on a small real TinyImageNet tree (JPEGs written by make_tiny_imagenet_tree) it
# decodes with 2 loader workers and trains ResNet-50 for an epoch on 1 and on 2 ranks, evaluating
# on the val split; --synthetic trains on 64x64 images of 200 classes and says so.
# usage: test_resnet50_tinyimagenet.sh RESNET50_TINYIMAGENET COHORTRUN MAKE_TREE
set -uo pipefail
bin=$1 run=$2 make_tree=$3
fail() { echo "FAIL: $*" >&2; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work" || exit 1

out=$("$bin" 2>&1); rc=$?
[ $rc -eq 1 ] || fail "without data: exit $rc, not 1: $out"
grep -q "no TinyImageNet in 'tiny-imagenet-200': unpack tiny-imagenet-200.zip there" <<<"$out" || fail "message: $out"
echo "ok (1): $out"

"$make_tree" tiny || fail "make_tiny_imagenet_tree failed"
out=$(OMP_NUM_THREADS=1 timeout 300 "$bin" --data tiny --workers 2 --batch-size 3 --epochs 1 --log-interval 1 2>&1)
rc=$?
echo "$out" | grep -E "resnet50_tinyimagenet:|model|Test set|final"
[ $rc -eq 0 ] || fail "1 rank on the tree exited $rc"
grep -q "TinyImageNet train (6 x \[3, 64, 64\], 3 classes)" <<<"$out" || fail "no TinyImageNet description"
grep -q "augmented (crop 4, flip)" <<<"$out" || fail "not augmented"
grep -qE "Accuracy: [0-3]/3 " <<<"$out" || fail "no evaluation on the 3 val images"

out=$(OMP_NUM_THREADS=1 timeout 300 "$run" --nproc-per-node 2 --master-port 0 "$bin" --data tiny --workers 2 \
      --batch-size 2 --epochs 1 --comm shm 2>&1)
rc=$?
[ $rc -eq 0 ] || { echo "$out" | tail; fail "2 ranks on the tree exited $rc"; }
grep -q "ranks hold identical weights: yes" <<<"$out" || fail "2 ranks: weights differ"
echo "$out" | grep -E "identical|Test set"

out=$(OMP_NUM_THREADS=1 timeout 300 "$bin" --synthetic --synthetic-size 8 --batch-size 4 --no-eval 2>&1) \
  || fail "--synthetic failed: $out"
grep -q "SYNTHETIC data (seeded, --synthetic): 8 training and 2 test images of synthetic (10 x \[3, 64, 64\], 200 classes" <<<"$out" \
  || fail "--synthetic first line: $(echo "$out" | head -1)"
echo "PASS"
