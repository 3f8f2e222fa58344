#!/usr/bin/env bash
# classify, torchvision's train.py's command line, from the user's side:
#   1. every flag of train.py (tests/golden/trainpy_flags.json, read from train.py's own
#      get_args_parser by tests/golden/make_trainpy_flags.py) is in `classify --help` by the same
#      names with the same default, but for the differences the docs name (--device, --backend)
#      and the ones refused by name (run: each refusal names its flag);
#   2. a 2-rank ResNet-18 run with the recipe of the issue (--sync-bn --model-ema --auto-augment
#      ta_wide --mixup-alpha 0.2 --label-smoothing 0.1, cosine after a linear warm-up) prints
#      train.py's lines (Epoch: [e]  [i/n] ..., Total time, "Test:  Acc@1 .. Acc@5 ..", the EMA's,
#      Training time), writes --output-dir's model_<epoch> and checkpoint files, learns;
#   3. the translation is exact: classify's short train.py flags train the same bits as the zoo
#      program (cifar_cnn) given the same recipe by its long names (deterministic, 2 ranks;
#      classify with cohort's --zero-stage 3, which is DDP's bits);
#   4. --resume continues at the checkpoint's epoch, --test-only evaluates it;
#   5. bad input: unknown flags, the refused ones, contradictions (--start-epoch without --resume,
#      --test-only without weights, --model-ema-steps 0, a warm-up as long as the run,
#      --world-size against the launcher, a weight name), a checkpoint of another model: each a
#      clear error and a non-zero exit, the output directory's checkpoint untouched.
# usage: test_classify.sh CLASSIFY CIFAR_CNN COHORTRUN SOURCE_DIR
set -uo pipefail
bin=$1 zoo=$2 run=$3 src=$4
fail() { echo "FAIL: $*" >&2; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
/usr/bin/python3 "$src/tools/make_image_folder.py" fashion-mnist "$work/fm" --per-class 200 \
  --val-per-class 50 >/dev/null || fail "make_image_folder"

# 1. train.py's flags and defaults.
"$bin" --help > "$work/help.txt" || fail "--help exited $?"
/usr/bin/python3 - "$work/help.txt" "$src/tests/golden/trainpy_flags.json" <<'PY' || fail "--help against train.py's flags"
import json, re, sys
help_text = open(sys.argv[1]).read()
golden = json.load(open(sys.argv[2]))
# CLI11's lines: "  -b,--batch-size INT:N>=1=32  text"; the type and its "=default" sit between the
# names and the two spaces before the text (or the end of the line).
shown = {}
for line in help_text.splitlines():
    m = re.match(r"^  (-\S+)(.*)$", line)
    if not m:
        continue
    names = m.group(1).split(",")
    rest = re.sub(r"N>=1|X>=0|\{[^}]*\}|(INT|FLOAT) in \[[^\]]*\]", "", m.group(2)).lstrip()
    kind = re.match(r"^((TEXT|INT|UINT|FLOAT)\S*)?", rest).group(0)
    default = kind.split("=", 1)[1] if "=" in kind else None
    for n in names:
        shown[n] = default
differs = {"--device": "cohort's default is the best device (COHORT_DEVICE), train.py's cuda",
           "--backend": "cohort has the tensor path only (default tensor), train.py's default PIL"}
checked = 0
for f in golden["flags"]:
    for name in f["options"]:
        assert name in shown, f"train.py's {name} is not a classify flag"
    name = f["options"][-1]
    if name in differs or f["kind"] == "flag" or f["default"] is None:
        continue
    got, want = shown[name], f["default"]
    if isinstance(want, (int, float)) and not isinstance(want, bool):
        assert got is not None and float(got) == float(want), f"{name}: default {got}, train.py {want}"
    else:
        assert (got or "") == str(want), f"{name}: default {got!r}, train.py {want!r}"
    checked += 1
print(f"ok: all {len(golden['flags'])} train.py flags are classify's; {checked} defaults equal; "
      f"differ by design: {', '.join(differs)}")
PY

# 2. The recipe on 2 ranks, in train.py's words.
recipe=(--data-path "$work/fm" --model resnet18 -b 32 --epochs 3 -j 2 --opt sgd --lr 0.02
        --momentum 0.9 --wd 1e-4 --norm-weight-decay 0 --lr-scheduler cosineannealinglr
        --lr-warmup-epochs 1 --lr-warmup-method linear --model-ema --model-ema-steps 4
        --auto-augment ta_wide --mixup-alpha 0.2 --label-smoothing 0.1 --train-crop-size 32
        --val-resize-size 36 --val-crop-size 32 --print-freq 10)
out=$(cd "$work" && OMP_NUM_THREADS=1 timeout 300 "$run" --nproc-per-node 2 --master-port 0 "$bin" \
  "${recipe[@]}" --comm shm --sync-bn --output-dir "$work/out" 2>&1) || fail "recipe run exited $?: $out"
echo "$out" | grep -E "Epoch: \[2\]|Test:|Training time" | sed 's/^\[rank 0\] //'
steps=$(echo "$out" | grep -cE '^\[rank 0\] Epoch: \[[0-2]\]  \[ ?[0-9]+/32\]  eta: [0-9]+:[0-9]{2}:[0-9]{2}  lr: [0-9.e-]+  img/s: [0-9.]+  loss: [0-9.]+ \([0-9.]+\)  time: [0-9.]+$')
[ "$steps" = 15 ] || fail "expected 5 progress lines per epoch (steps 0, 10, 20, 30 and the last, 31), got $steps: $out"
for e in 0 1 2; do
  grep -q "^\[rank 0\] Epoch: \[$e\]  \[31/32\]" <<<"$out" || fail "epoch $e: no line for its last step"
  grep -qE "^\[rank 0\] Epoch: \[$e\] Total time: 0:00:[0-9]{2}$" <<<"$out" || fail "epoch $e: no Total time"
done
[ "$(echo "$out" | grep -cE '^\[rank 0\] Test:  Acc@1 [0-9]+\.[0-9]{3} Acc@5 [0-9]+\.[0-9]{3}$')" = 3 ] ||
  fail "no 'Test:  Acc@1 .. Acc@5 ..' line per epoch: $out"
[ "$(echo "$out" | grep -cE '^\[rank 0\] Test: EMA Acc@1 [0-9]+\.[0-9]{3} Acc@5 [0-9]+\.[0-9]{3}$')" = 3 ] ||
  fail "no EMA line per epoch"
grep -qE '^\[rank 0\] Training time 0:0[0-9]:[0-9]{2}$' <<<"$out" || fail "no Training time"
grep -q "SyncBatchNorm: 20 layers over 2 ranks" <<<"$out" || fail "--sync-bn not converted: $(echo "$out" | head -3)"
grep -q "ranks hold identical weights: yes" <<<"$out" || fail "ranks differ"
grep -q "Train Epoch:" <<<"$out" && fail "the Trainer's own progress lines are printed too"
acc=$(echo "$out" | sed -n 's/^\[rank 0\] Test:  Acc@1 \([0-9.]*\) .*/\1/p' | tail -1)
python3 -c "import sys; sys.exit(0 if float('$acc') > 20 else 1)" || fail "Acc@1 $acc is not above chance (10)"
for f in model_0 model_1 model_2 checkpoint; do
  [ -s "$work/out/$f.safetensors" ] || fail "--output-dir has no $f.safetensors: $(ls "$work/out")"
done
echo "ok: train.py's lines, --output-dir files, final Acc@1 $acc"

# 3. The same recipe by the zoo program's long names trains the same bits (classify sharded by
#    --zero-stage 3, cifar_cnn as plain DDP: stage 3 gives DDP's bits).
digest() { echo "$1" | sed -n 's/.*ranks hold identical weights: yes (digest \([0-9a-f]*\)).*/\1/p'; }
a=$(OMP_NUM_THREADS=1 timeout 300 "$run" --nproc-per-node 2 --master-port 0 "$bin" --data-path "$work/fm" \
  --model resnet18 -b 16 --epochs 1 -j 1 --opt sgd_nesterov --lr 0.01 --wd 5e-4 --train-crop-size 32 \
  --val-resize-size 36 --val-crop-size 32 --lr-step-size 1 --lr-gamma 0.5 --label-smoothing 0.1 \
  --use-deterministic-algorithms --output-dir "" --comm shm --zero-stage 3 2>&1) || fail "classify exited $?: $a"
b=$(OMP_NUM_THREADS=1 timeout 300 "$run" --nproc-per-node 2 --master-port 0 "$zoo" --data-path "$work/fm" \
  --model resnet18 --batch-size 16 --test-batch-size 16 --epochs 1 --workers 1 --optimizer sgd_nesterov \
  --lr 0.01 --momentum 0.9 --weight-decay 5e-4 --train-crop-size 32 --val-resize-size 36 \
  --val-crop-size 32 --lr-scheduler steplr --lr-step-size 1 --lr-gamma 0.5 --label-smoothing 0.1 \
  --deterministic --comm shm 2>&1) || fail "cifar_cnn exited $?: $b"
[ -n "$(digest "$a")" ] && [ "$(digest "$a")" = "$(digest "$b")" ] ||
  fail "classify and cifar_cnn differ: $(digest "$a") vs $(digest "$b")"
grep -q "ZeRO stage 3: optimizer state, gradients and parameters / 2" <<<"$a" || fail "classify --zero-stage 3: not said: $a"
echo "ok: classify's flags (at --zero-stage 3) = cifar_cnn's long names (DDP; digest $(digest "$a"))"

# 4. --resume continues at the checkpoint's epoch; --test-only evaluates it.
sum_before=$(sha256sum "$work/out/checkpoint.safetensors")
out=$(cd "$work" && OMP_NUM_THREADS=1 timeout 300 "$run" --nproc-per-node 2 --master-port 0 "$bin" \
  "${recipe[@]}" --comm shm --sync-bn --output-dir "$work/out2" --epochs 4 \
  --resume "$work/out/checkpoint.safetensors" 2>&1) || fail "resume exited $?: $out"
grep -q "resumed from .* after epoch 3" <<<"$out" || fail "no resume line: $out"
grep -q "Epoch: \[[0-2]\]" <<<"$out" && fail "the resumed run trained epochs 0-2 again: $out"
grep -q "^\[rank 0\] Epoch: \[3\]  \[31/32\]" <<<"$out" || fail "the resumed run did not train epoch 3"
[ -s "$work/out2/model_3.safetensors" ] || fail "no model_3 after the resume"
out=$(cd "$work" && OMP_NUM_THREADS=1 timeout 120 "$bin" "${recipe[@]}" --output-dir "" --test-only \
  --resume "$work/out2/checkpoint.safetensors" 2>&1) || fail "--test-only exited $?: $out"
grep -qE "^Test:  Acc@1 [0-9.]+ Acc@5 [0-9.]+$" <<<"$out" || fail "--test-only: no Acc line: $out"
grep -qE "^Test: EMA Acc@1 [0-9.]+ Acc@5 [0-9.]+$" <<<"$out" || fail "--test-only: no EMA line: $out"
grep -q "Epoch: \[" <<<"$out" && fail "--test-only trained"
echo "ok: --resume (epoch 3 only), --test-only ($(echo "$out" | grep "^Test:  Acc@1"))"
grep -q -- "--sync-bn" <<<"$out" && fail "one rank without --sync-bn mentions it"
out=$(cd "$work" && OMP_NUM_THREADS=1 timeout 120 "$bin" "${recipe[@]}" --sync-bn --output-dir "" \
  --test-only --resume "$work/out2/checkpoint.safetensors" 2>&1) || fail "one-rank --sync-bn exited $?"
grep -q -- "--sync-bn with one rank: plain batch norm" <<<"$out" || fail "one rank --sync-bn says nothing: $out"

# 5. Bad input: one line naming the flag or file, a non-zero exit, nothing overwritten.
expect_error() {  # expect_error STATUS PATTERN ARGS...
  local want=$1 pattern=$2; shift 2
  local o rc
  o=$(cd "$work" && OMP_NUM_THREADS=1 timeout 120 "$bin" --data-path "$work/fm" --train-crop-size 32 \
    --val-resize-size 36 --val-crop-size 32 --epochs 2 -b 32 -j 1 --output-dir "$work/out" "$@" 2>&1); rc=$?
  [ "$rc" = "$want" ] || fail "classify $*: exit $rc, not $want: $o"
  grep -qF -- "$pattern" <<<"$o" || fail "classify $*: no '$pattern' in: $o"
  echo "ok ($rc): $(echo "$o" | grep -F -- "$pattern" | head -1 | cut -c1-150)"
}
expect_error 2 "--foo" --foo
expect_error 2 "--opt" --opt lamb
expect_error 1 "--cache-dataset is not implemented" --cache-dataset
expect_error 1 "--ra-sampler and --ra-reps" --ra-sampler
expect_error 1 "--ra-sampler and --ra-reps" --ra-reps 4
expect_error 1 "--auto-augment augmix and --augmix-severity" --auto-augment augmix
expect_error 1 "--auto-augment augmix and --augmix-severity" --augmix-severity 2
expect_error 1 "--backend PIL: cohort's transforms are torchvision's tensor path" --backend PIL
expect_error 1 "--dist-url tcp://h:1: only env://" --dist-url tcp://h:1
expect_error 1 "--weights ResNet18_Weights.IMAGENET1K_V1: not a file" --test-only \
  --weights ResNet18_Weights.IMAGENET1K_V1
expect_error 1 "--start-epoch 1 without --resume" --start-epoch 1
expect_error 1 "--test-only needs weights to evaluate" --test-only
expect_error 2 "--model-ema-steps" --model-ema --model-ema-steps 0
expect_error 1 "--lr-warmup-epochs" --lr-warmup-epochs 2
expect_error 1 "--world-size 3 but the launcher started 1 rank" --world-size 3
expect_error 1 "checkpoint.safetensors' does not match the model" --model resnet34 --epochs 4 \
  --lr-scheduler cosineannealinglr --lr-warmup-epochs 1 --resume "$work/out/checkpoint.safetensors"
expect_error 1 "does not match this run: SGD.load_state: the state has 2 parameter groups" \
  --model resnet18 --resume "$work/out/checkpoint.safetensors"
[ "$(sha256sum "$work/out/checkpoint.safetensors")" = "$sum_before" ] ||
  fail "a refused run changed --output-dir's checkpoint"
echo "classify: all checks passed"
