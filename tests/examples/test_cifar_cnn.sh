#!/usr/bin/env bash
# examples/cifar_cnn (the zoo models' training program) from the user's side:
#   1. bad input: an unknown model or data set (exit 2), CIFAR-10 absent (exit 1, saying where to
#      put it and what else to use), each in one line;
#   2. every zoo model trains on 2 ranks over shm on 16 synthetic images (one batch of 8 per rank
#      and epoch, 10 epochs, so the loss measures learning rather than batch-to-batch noise): the
#      first line says SYNTHETIC, the mean loss of the last 3 steps is below that of the first 3,
#      and the ranks end with identical weights (batch-norm statistics included). The deeper and
#      wider ResNets (34, 101, 152, wide_resnet50_2: resnet18's and resnet50's blocks, more of
#      them or wider) train 2 epochs with identical weights and finite losses (2026-12-03: their
#      10 epochs were 30 s of the test's 51 s on a Zen 4);
#   3. ResNet9 over ucx ends with the weights it ends with over shm;
#   4. --model-folder writes one safetensors file per epoch; where PyTorch and safetensors are
#      importable (tools/setup.sh --peers) the file loads into the PyTorch definition with
#      strict=True (models/torch_models.py), otherwise that step says it was skipped.
# usage: test_cifar_cnn.sh CIFAR_CNN COHORTRUN SOURCE_DIR
set -uo pipefail
bin=$1 run=$2 src=$3
fail() { echo "FAIL: $*" >&2; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work" || exit 1

expect_error() {  # expect_error STATUS PATTERN ARGS...
  local want=$1 pattern=$2; shift 2
  local out rc
  out=$("$bin" "$@" 2>&1); rc=$?
  [ "$rc" -eq "$want" ] || fail "cifar_cnn $* exited $rc, not $want: $out"
  grep -q -- "$pattern" <<<"$out" || fail "cifar_cnn $*: no '$pattern' in: $out"
  [ "$(echo "$out" | wc -l)" -eq 1 ] || fail "cifar_cnn $*: more than one line: $out"
  echo "ok ($rc): $out"
}
expect_error 2 "--model: resnet200 not in {cnn_a,cnn_b,resnet9,vit,resnet50,resnet18,resnet34,resnet101,resnet152,wide_resnet50_2}" --model resnet200
expect_error 2 "--dataset: imagenet not in" --dataset imagenet
expect_error 1 "no CIFAR-10 data in 'cifar-10-batches-bin': put the binary version's data_batch_1.bin" --model cnn_a
expect_error 2 "--batch-size: must be a positive integer, got '0'" --batch-size 0

models=$("$bin" --help | sed -nE 's/.*model: ([a-z0-9_|]+).*/\1/p' | tr '|' ' ')
[ -n "$models" ] || fail "--help lists no models"
declare -A digest
for m in $models; do
  case $m in resnet34 | resnet101 | resnet152 | wide_resnet50_2) epochs=2 ;; *) epochs=10 ;; esac
  out=$(OMP_NUM_THREADS=1 timeout 300 "$run" --nproc-per-node 2 --master-port 0 "$bin" --model "$m" \
        --comm shm --synthetic --synthetic-size 16 --batch-size 8 --epochs $epochs --log-interval 1 \
        --test-batch-size 4 2>&1)
  rc=$?
  [ $rc -eq 0 ] || { echo "$out" | tail -20; fail "$m on 2 ranks exited $rc"; }
  grep -q "cifar_cnn: SYNTHETIC data" <<<"$out" || fail "$m: the first line does not say SYNTHETIC"
  grep -q "ranks hold identical weights: yes" <<<"$out" || fail "$m: ranks differ"
  digest[$m]=$(echo "$out" | sed -nE 's/.*identical weights: yes \(digest ([0-9a-f]+)\).*/\1/p')
  losses=$(echo "$out" | sed -nE "s/.*\[rank 0\] epoch [0-9]+\/$epochs step 1\/1 .* loss ([0-9.]+) .*/\1/p")
  echo "$m losses: $(echo $losses)"
  echo "$losses" | awk -v n=$epochs '{ l[NR] = $1 } END {
      if (NR != n) { print "expected " n " losses, got " NR; exit 1 }
      if (n < 10) exit 0
      a = (l[1] + l[2] + l[3]) / 3; b = (l[8] + l[9] + l[10]) / 3
      if (!(b < a)) { print "loss did not fall: first 3 " a ", last 3 " b; exit 1 } }' \
    || fail "$m: loss did not fall on 2 ranks"
done

# The same job over ucx ends with the same weights as over shm (a 2-rank sum is exact either way).
out=$(OMP_NUM_THREADS=1 timeout 300 "$run" --nproc-per-node 2 --master-port 0 "$bin" --model resnet9 \
      --comm ucx --synthetic --synthetic-size 16 --batch-size 8 --epochs 10 --log-interval 1 \
      --test-batch-size 4 2>&1)
rc=$?
if [ $rc -ne 0 ] && grep -q "not in this build" <<<"$out"; then
  echo "ucx not in this build: shm only"
else
  [ $rc -eq 0 ] || { echo "$out" | tail; fail "resnet9 over ucx exited $rc"; }
  d=$(echo "$out" | sed -nE 's/.*identical weights: yes \(digest ([0-9a-f]+)\).*/\1/p')
  [ "$d" = "${digest[resnet9]}" ] || fail "resnet9: ucx digest '$d', shm '${digest[resnet9]}'"
  echo "resnet9 over ucx: the same weights as over shm ($d)"
fi

out=$(OMP_NUM_THREADS=1 "$bin" --model cnn_b --synthetic --synthetic-size 64 --batch-size 16 --epochs 2 \
      --model-folder ckpt 2>&1) || fail "--model-folder run failed: $out"
for e in 1 2; do [ -s "ckpt/cnn_b_epoch$e.safetensors" ] || fail "no ckpt/cnn_b_epoch$e.safetensors"; done
py=""
for cand in "$src/.venv-peers/bin/python" python3; do
  if "$cand" -c "import torch, safetensors" 2>/dev/null; then py=$cand; break; fi
done
if [ -n "$py" ]; then
  "$py" - "$src/models" ckpt/cnn_b_epoch2.safetensors <<'PY' || fail "PyTorch could not load the checkpoint"
import sys
sys.path.insert(0, sys.argv[1])
import torch_models
from safetensors.torch import load_file
m = torch_models.make("cnn_b")
m.load_state_dict(load_file(sys.argv[2]), strict=True)
print("PyTorch loaded", sys.argv[2], "into CnnB with strict=True")
PY
else
  echo "skipped: loading into PyTorch (no python with torch and safetensors; tools/setup.sh --peers)"
fi
echo "PASS"
