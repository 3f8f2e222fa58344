#!/usr/bin/env bash
# --zero-stage 1, 2 and 3 from the user's side, against plain DDP as the reference: at 2 ranks
# with --deterministic, mnist_cnn (Adadelta) and the zoo's ResNet9 (SGD with momentum, weight-decay
# groups) end with the same weights digest as --zero-stage 0, also with --clip-grad-norm and
# --amp f16 (mnist_cnn), and the first line says what is split; at 4 ranks hybrid sharding
# (--shard-group-size 2) gives the same bits; --model-ema at stage 3 is refused.
# usage: test_zero_cli.sh MNIST_CNN CIFAR_CNN COHORTRUN
set -uo pipefail
mnist=$1 zoo=$2 run=$3
fail() { echo "FAIL: $*" >&2; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# mnist_cnn's data as the launcher tests have it (tests/launch/launch_data.py): the training split
# gunzipped once, a tenth of the test split for the closing evaluation, which no check here reads.
data=$(python3 "$(dirname "$0")/../launch/launch_data.py" /usr/share/datasets/fashion-mnist "$work/data") ||
  data=/usr/share/datasets/fashion-mnist
digest() { echo "$1" | sed -n 's/.*ranks hold identical weights: yes (digest \([0-9a-f]*\)).*/\1/p'; }
for z in 0 1 2 3; do
  out=$(OMP_NUM_THREADS=1 timeout 120 "$run" --nproc-per-node 2 --master-port 0 "$mnist" --comm shm \
    --epochs 1 --max-steps 40 --deterministic --data "$data" --zero-stage $z 2>&1) || fail "mnist_cnn --zero-stage $z exited $?: $out"
  eval "mnist_$z=$(digest "$out")"
  [ "$z" != 1 ] || grep -q "(shm, ZeRO stage 1: optimizer state / 2)" <<<"$out" || fail "no ZeRO in the first line: $out"
  [ "$z" != 2 ] || grep -q "(shm, ZeRO stage 2: optimizer state and gradients / 2)" <<<"$out" || fail "no ZeRO 2 in the first line: $out"
  [ "$z" != 3 ] || grep -q "(shm, ZeRO stage 3: optimizer state, gradients and parameters / 2)" <<<"$out" || fail "no ZeRO 3 in the first line: $out"
  out=$(OMP_NUM_THREADS=1 timeout 120 "$run" --nproc-per-node 2 --master-port 0 "$zoo" --model resnet9 \
    --synthetic --synthetic-size 256 --batch-size 16 --epochs 1 --max-steps 6 --optimizer sgd --lr 0.05 \
    --weight-decay 5e-4 --norm-weight-decay 0 --bias-weight-decay 0 --deterministic --comm shm --zero-stage $z 2>&1) ||
    fail "cifar_cnn --zero-stage $z exited $?: $out"
  eval "zoo_$z=$(digest "$out")"
done
# Clipping and f16 loss scaling (a GradScaler) under ZeRO: the norm over every rank's shard (in
# double on the host, so the pieces' sums agree with the whole tensors' to ~1e-16) and the
# skipped steps agreed over the ranks: the weights are still DDP's with the same flags.
for z in 0 1 2 3; do
  out=$(OMP_NUM_THREADS=1 timeout 120 "$run" --nproc-per-node 2 --master-port 0 "$mnist" --comm shm \
    --epochs 1 --max-steps 40 --deterministic --data "$data" --zero-stage $z --clip-grad-norm 0.5 --amp f16 2>&1) ||
    fail "mnist_cnn --zero-stage $z --clip-grad-norm 0.5 --amp f16 exited $?: $out"
  grep -q "clip grad norm 0.5, amp f16 with a GradScaler" <<<"$out" ||
    fail "--clip-grad-norm/--amp not in the recipe line: $out"
  eval "clip_$z=$(digest "$out")"
done
[ -n "$clip_0" ] && [ "$clip_0" = "$clip_1" ] && [ "$clip_0" = "$clip_2" ] && [ "$clip_0" = "$clip_3" ] ||
  fail "mnist_cnn --clip-grad-norm 0.5 --amp f16: DDP $clip_0, --zero-stage 1 $clip_1, 2 $clip_2, 3 $clip_3"
[ "$clip_0" != "$mnist_0" ] || fail "mnist_cnn: --clip-grad-norm 0.5 --amp f16 changed nothing ($clip_0)"
[ -n "$mnist_0" ] && [ "$mnist_0" = "$mnist_1" ] || fail "mnist_cnn: --zero-stage 1 $mnist_1, DDP $mnist_0"
[ -n "$zoo_0" ] && [ "$zoo_0" = "$zoo_1" ] || fail "cifar_cnn resnet9: --zero-stage 1 $zoo_1, DDP $zoo_0"
[ "$mnist_0" = "$mnist_2" ] || fail "mnist_cnn: --zero-stage 2 $mnist_2, DDP $mnist_0"
[ "$zoo_0" = "$zoo_2" ] || fail "cifar_cnn resnet9: --zero-stage 2 $zoo_2, DDP $zoo_0"
[ "$mnist_0" = "$mnist_3" ] || fail "mnist_cnn: --zero-stage 3 $mnist_3, DDP $mnist_0"
[ "$zoo_0" = "$zoo_3" ] || fail "cifar_cnn resnet9: --zero-stage 3 $zoo_3, DDP $zoo_0"
# Hybrid sharding (--shard-group-size 2 at 4 ranks: 2 replicas of 2-rank shard groups): DDP's
# bits with clipping (the norm over the shard group) and the f16 GradScaler (mnist_cnn), and with
# batch norm and weight-decay groups (resnet9); a size that does not divide the ranks is refused.
for z in "0" "2 --shard-group-size 2" "3 --shard-group-size 2"; do
  out=$(OMP_NUM_THREADS=1 timeout 120 "$run" --nproc-per-node 4 --master-port 0 "$mnist" --comm shm \
    --epochs 1 --max-steps 20 --deterministic --data "$data" --zero-stage $z --clip-grad-norm 0.5 --amp f16 2>&1) ||
    fail "mnist_cnn at 4 ranks --zero-stage $z exited $?: $out"
  d=$(digest "$out")
  [ -n "$d" ] || fail "mnist_cnn at 4 ranks --zero-stage $z: no digest: $out"
  [ "$z" = 0 ] && hybrid_ref=$d
  [ "$d" = "$hybrid_ref" ] || fail "mnist_cnn at 4 ranks: --zero-stage $z $d, DDP $hybrid_ref"
done
grep -q "ZeRO stage 3: optimizer state, gradients and parameters / 2 (hybrid: 2 replicas of 2-rank shard groups)" <<<"$out" ||
  fail "no hybrid sharding in the first line: $out"
for z in "0" "1 --shard-group-size 2"; do
  out=$(OMP_NUM_THREADS=1 timeout 120 "$run" --nproc-per-node 4 --master-port 0 "$zoo" --model resnet9 \
    --synthetic --synthetic-size 256 --batch-size 8 --epochs 1 --max-steps 4 --optimizer sgd --lr 0.05 \
    --weight-decay 5e-4 --norm-weight-decay 0 --deterministic --comm shm --zero-stage $z 2>&1) ||
    fail "cifar_cnn at 4 ranks --zero-stage $z exited $?: $out"
  d=$(digest "$out")
  [ "$z" = 0 ] && zoo_ref=$d
  [ -n "$d" ] && [ "$d" = "$zoo_ref" ] || fail "cifar_cnn resnet9 at 4 ranks: --zero-stage $z $d, DDP $zoo_ref"
done
out=$(OMP_NUM_THREADS=1 timeout 60 "$run" --nproc-per-node 4 --master-port 0 "$mnist" --comm shm --epochs 1 \
  --max-steps 1 --data "$data" --zero-stage 1 --shard-group-size 3 2>&1)
rc=$?
[ $rc != 0 ] && grep -q "shard_group_size 3 does not divide the group of 4 ranks" <<<"$out" ||
  fail "--shard-group-size 3 at 4 ranks: exit $rc, $out"
# What stage 3 cannot do: an EMA of parameters that no rank holds whole.
out=$(OMP_NUM_THREADS=1 timeout 60 "$zoo" --model resnet9 --synthetic --synthetic-size 32 --batch-size 16 \
  --epochs 1 --max-steps 1 --comm self --zero-stage 3 --model-ema 2>&1)
rc=$?
[ $rc = 1 ] && grep -q "\-\-model-ema with --zero-stage 3: the parameters are split over the ranks" <<<"$out" ||
  fail "--model-ema --zero-stage 3: exit $rc, $out"
echo "ok: --zero-stage 1, 2 and 3 = DDP's bits: mnist_cnn $mnist_1, resnet9 (weight-decay groups) $zoo_1"
echo "ok: --clip-grad-norm 0.5 --amp f16 at --zero-stage 1, 2 and 3 = DDP's bits: $clip_2"
echo "ok: --shard-group-size 2 at 4 ranks (stages 2, 3 with clipping and f16; resnet9 at 1) = DDP's bits: $hybrid_ref, $zoo_ref"
echo "zero cli: all checks passed"
