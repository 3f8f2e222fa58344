#!/usr/bin/env bash
# Bad input to mnist_cnn: each case must exit with the expected status, print exactly one line on
# stderr containing the expected text, and finish within 30 s (never hang or crash).
set -u
bin="$1"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failures=0 passes=0

expect() {  # expect NAME STATUS TEXT -- ARGS...
  local name="$1" want="$2" text="$3"; shift 4
  timeout 30 "$bin" "$@" >"$tmp/out" 2>"$tmp/err"
  local got=$? lines
  lines=$(wc -l <"$tmp/err")
  if [ "$got" -ne "$want" ] || [ "$lines" -ne 1 ] || ! grep -qF -- "$text" "$tmp/err"; then
    echo "FAIL $name: exit $got (want $want), $lines stderr line(s), want text: $text"
    sed 's/^/  stderr: /' "$tmp/err"
    failures=$((failures + 1))
  else
    echo "ok   $name: $(cat "$tmp/err")"
    passes=$((passes + 1))
  fi
}

expect "missing data directory" 1 "data directory '$tmp/none' does not exist" -- --data "$tmp/none"
mkdir -p "$tmp/corrupt"
# A header that promises 60000 28x28 images, followed by 100 bytes.
printf '\x00\x00\x08\x03\x00\x00\xea\x60\x00\x00\x00\x1c\x00\x00\x00\x1c' >"$tmp/corrupt/train-images-idx3-ubyte"
head -c 100 /dev/zero >>"$tmp/corrupt/train-images-idx3-ubyte"
printf '\x00\x00\x08\x01\x00\x00\xea\x60' >"$tmp/corrupt/train-labels-idx1-ubyte"
expect "truncated image file" 1 "train-images-idx3-ubyte' is truncated: expected 47040016 bytes (header 16 + 60000x28x28), found 116" -- --data "$tmp/corrupt"
expect "unknown flag" 2 "mnist_cnn: The following argument was not expected: --bogus" -- --bogus
expect "batch size 0" 2 "mnist_cnn: --batch-size: must be a positive integer, got '0'" -- --batch-size 0
expect "non-numeric epochs" 2 "mnist_cnn: --epochs: must be a positive integer, got 'many'" -- --epochs many
expect "unknown gradient compression" 2 "mnist_cnn: --grad-compression: f8 not in {none,bf16,f16}" -- --grad-compression f8
expect "unknown device" 1 "unknown device 'tpu'" -- --device tpu --data "$tmp/none"
expect "checkpoint every N without a directory" 1 "checkpoint_every_steps = 10 needs checkpoint_dir" -- --checkpoint-every 10 --max-steps 1
expect "a checkpoint directory and --save-model" 1 "set checkpoint_path or checkpoint_dir, not both" -- --checkpoint-dir "$tmp/ck" --save-model "$tmp/m.safetensors" --max-steps 1
expect "negative checkpoint interval" 2 "mnist_cnn: --checkpoint-every" -- --checkpoint-every -3
# A checkpoint directory holding a model file without its training state: refused, untouched.
mkdir -p "$tmp/partial"
echo "not a checkpoint" >"$tmp/partial/checkpoint.safetensors"
expect "a partial checkpoint pair" 1 "cannot resume from checkpoint_dir '$tmp/partial' (nothing in it was changed" -- --checkpoint-dir "$tmp/partial" --max-steps 1
grep -qx "not a checkpoint" "$tmp/partial/checkpoint.safetensors" ||
  { echo "FAIL a partial checkpoint pair: the file was changed"; failures=$((failures + 1)); }
# ZeRO (--zero-stage): a stage out of range, and a one-file checkpoint of state split over the
# ranks (its checkpoints are sharded: --checkpoint-dir, tests/launch/test_sharded_checkpoint.sh).
expect "zero stage out of range" 2 "mnist_cnn: --zero-stage: Value 4 not in range 0 to 3" -- --comm self --zero-stage 4
expect "zero with a one-file checkpoint" 1 "its checkpoints are sharded, one file per rank in a directory; give checkpoint_dir (--checkpoint-dir) instead of checkpoint_path" -- --comm self --zero-stage 1 --save-model "$tmp/zm.safetensors" --max-steps 1
echo "$passes passed, $failures failed"
[ "$failures" -eq 0 ]
