#!/usr/bin/env bash
# The recipe flags from the user's side (warm-up, clipping, label smoothing, per-step schedule,
# the total step budget): mnist_cnn on 2 ranks writes the lr sequence the schedule promises into
# its metrics, clips (grad_norm logged), stops at --max-steps across epochs, shows evaluation
# progress and ends with identical weights; cifar_cnn's cosine schedule after a warm-up; --amp
# (bf16, f16's fallback and GradScaler); and the flags' bad values are one-line errors.
# usage: test_recipe_flags.sh MNIST_CNN CIFAR_CNN COHORTRUN
set -uo pipefail
mnist=$1 cifar=$2 run=$3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

# 20 steps per epoch at most, 30 in all: epoch 1 runs 20, epoch 2 the 10 left, epoch 3 never.
# Warm-up over 10 steps from 0.01 x lr 1.0, then StepLR(gamma 0.7) stepped per step every 20.
out=$(OMP_NUM_THREADS=1 timeout 300 "$run" --nproc-per-node 2 --master-port 0 "$mnist" --comm shm \
  --epochs 3 --max-steps 30 --max-steps-per-epoch 20 --warmup-steps 10 --clip-grad-norm 0.5 \
  --label-smoothing 0.1 --log-interval 5 --test-batch-size 1000 --metrics "$work/m.jsonl" 2>&1) ||
  fail "mnist_cnn exited $?: $out"
echo "$out" | tail -25
grep -q "recipe: 10 warm-up steps, then StepLR gamma 0.7 (per step), clip grad norm 0.5" <<<"$out" ||
  fail "no recipe line"
grep -q "ranks hold identical weights: yes" <<<"$out" || fail "ranks differ"
grep -qE "evaluate \(rank 0's shard\) step 5/5 \(100%\) loss [0-9.]+ acc [0-9.]+%" <<<"$out" ||
  fail "no evaluation progress line naming whose figures it shows"
[ "$(echo "$out" | grep -c "Test set (epoch [12]): Average loss")" -eq 2 ] || fail "not 2 evaluated epochs"
python3 - "$work/m.jsonl" <<'EOF' || fail "metrics"
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if '"train"' in l]
steps = [r["step"] for r in rows]
assert steps == [5, 10, 15, 20, 25, 30], steps
want = {5: 0.01 + 0.99 * 5 / 10, 10: 1.0, 15: 1.0, 20: 1.0, 25: 1.0, 30: 0.7}
for r in rows:
    assert abs(r["lr"] - want[r["step"]]) < 1e-9, (r["step"], r["lr"], want[r["step"]])
    assert r["grad_norm"] > 0, r
print("metrics: steps", steps, "lr", [r["lr"] for r in rows], "grad_norm",
      [round(r["grad_norm"], 3) for r in rows])
EOF

out=$(OMP_NUM_THREADS=1 timeout 300 "$cifar" --model cnn_a --synthetic --synthetic-size 64 \
  --batch-size 16 --epochs 2 --optimizer sgd --lr 0.05 --schedule cosine --warmup-steps 2 \
  --clip-grad-norm 1 --label-smoothing 0.1 --metrics "$work/c.jsonl" --log-interval 1 2>&1) ||
  fail "cifar_cnn exited $?: $out"
grep -q "schedule: 2 warm-up steps, then cosine annealing (per step)" <<<"$out" ||
  fail "cifar_cnn: no schedule line: $out"
python3 - "$work/c.jsonl" <<'EOF' || fail "cifar metrics"
import json, math, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if '"train"' in l]
# 4 steps per epoch, 8 in all: warm-up 0.0005, 0.02525 at steps 0, 1; cosine over the 6 left.
lr = {r["step"]: r["lr"] for r in rows}
for s in range(1, 9):
    e = s - 2
    want = 0.05 * (0.01 + 0.99 * s / 2) if s < 2 else 0.05 * (1 + math.cos(math.pi * e / 6)) / 2
    assert abs(lr[s] - want) < 1e-9, (s, lr[s], want)
print("cifar_cnn lr per step:", [round(lr[s], 6) for s in range(1, 9)])
EOF

expect_error() {  # expect_error PATTERN ARGS...: exit 1 or 2 and one line naming the problem
  local pattern=$1
  shift
  local o rc
  o=$("$mnist" "$@" 2>&1); rc=$?
  { [ "$rc" -eq 1 ] || [ "$rc" -eq 2 ]; } || fail "mnist_cnn $* exited $rc: $o"
  grep -q -- "$pattern" <<<"$o" || fail "mnist_cnn $*: no '$pattern' in: $o"
}
expect_error "label-smoothing" --label-smoothing 1.5
expect_error "scheduler-interval" --scheduler-interval often
expect_error "warmup-steps 1000 leaves nothing of the run's 30 optimizer steps" \
  --warmup-steps 1000 --max-steps 30
expect_error "clip-grad-norm" --clip-grad-norm -1
expect_error "amp" --amp fp8

# --amp: the recipe line names it; f16 on the host falls back to f32 with one notice and brings a
# GradScaler; bf16 either runs (a CPU with AVX-512 BF16 or AMX) or gives the host's notice.
out=$(OMP_NUM_THREADS=1 timeout 300 "$mnist" --max-steps 5 --test-batch-size 1000 --amp f16 2>&1) ||
  fail "mnist_cnn --amp f16 exited $?: $out"
grep -q "recipe: StepLR gamma 0.7 (per epoch), amp f16 with a GradScaler" <<<"$out" ||
  fail "--amp f16: no recipe line: $out"
[ "$(echo "$out" | grep -c "cohort: autocast f16 on host: oneDNN 2.6 has no f16 convolution")" -eq 1 ] ||
  fail "--amp f16: not exactly one fallback notice: $out"
grep -q "final test accuracy" <<<"$out" || fail "--amp f16: no accuracy: $out"
out=$(OMP_NUM_THREADS=1 timeout 300 "$mnist" --max-steps 5 --test-batch-size 1000 --amp bf16 2>&1) ||
  fail "mnist_cnn --amp bf16 exited $?: $out"
grep -q "recipe: StepLR gamma 0.7 (per epoch), amp bf16" <<<"$out" || fail "--amp bf16: no recipe line: $out"
if grep -qw -E 'avx512_bf16|amx_bf16' /proc/cpuinfo; then
  grep -q "cohort: autocast" <<<"$out" && fail "--amp bf16 fell back on a CPU with bf16: $out"
else
  grep -q "cohort: autocast bf16 on host: this CPU has neither" <<<"$out" ||
    fail "--amp bf16 without native bf16: no notice: $out"
fi
echo "all recipe flag cases passed"
