#!/usr/bin/env bash
# classify (train.py's recipe) at --zero-stage 3 on 2 ranks with --output-dir, from the user's
# side: model_<epoch>.safetensors every epoch (the sharded values gathered on every rank) and the
# sharded checkpoint in DIR/sharded; cohort-checkpoint consolidate gives one model file whose
# every tensor equals the last epoch's model file (numpy reads both); --resume DIR/sharded
# --test-only evaluates it to the run's last Acc@1/Acc@5. Where torchvision is importable
# (Debian's python3-torchvision from tools/setup.sh --peers, or .venv-peers), its own ResNet-18
# loads the consolidated file with strict=True and evaluates it to the same Acc@1 and Acc@5
# (tools/torchvision_eval.py); without it that part says so.
#
#   test_classify_zero.sh CLASSIFY COHORTRUN COHORT_CHECKPOINT SOURCE_DIR
set -uo pipefail
bin=$1 run=$2 ckpt=$3 src=$4
fail() { echo "FAIL: $*" >&2; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
/usr/bin/python3 "$src/tools/make_image_folder.py" fashion-mnist imgs --per-class 40 --val-per-class 20 \
  >/dev/null || fail "make_image_folder"
flags=(--model resnet18 --data-path imgs --train-crop-size 32 --val-resize-size 36 --val-crop-size 32
       --batch-size 16 --lr 0.05 --workers 1 --comm shm --zero-stage 3 --use-deterministic-algorithms
       --output-dir out)
out=$(OMP_NUM_THREADS=1 timeout 300 "$run" --nproc-per-node 2 --master-port 0 "$bin" "${flags[@]}" \
  --epochs 2 2>&1) || fail "training exited $?: $(echo "$out" | tail -n 5)"
grep -q "checkpoints: sharded (--zero-stage 3) in out/sharded" <<<"$out" || fail "no line naming the sharded checkpoints"
acc=$(grep -o "Test:  Acc@1 [0-9.]* Acc@5 [0-9.]*" <<<"$out" | tail -n1)
[ -n "$acc" ] || fail "no Test: line"
for f in out/model_0.safetensors out/model_1.safetensors out/sharded/index.json \
         out/sharded/shard-0-of-2.safetensors out/sharded/shard-1-of-2.safetensors; do
  [ -f "$f" ] || fail "$f was not written"
done
"$ckpt" consolidate out/sharded whole.safetensors >/dev/null || fail "consolidate"
cmp_out=$(/usr/bin/python3 - out/model_1.safetensors whole.safetensors <<'EOF'
import json, struct, sys
import numpy as np
def load(p):
    with open(p, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        h = json.loads(f.read(n)); d = f.read()
    return {k: (v["dtype"], v["shape"], d[v["data_offsets"][0]:v["data_offsets"][1]])
            for k, v in h.items() if k != "__metadata__"}
a, b = load(sys.argv[1]), load(sys.argv[2])
if a.keys() != b.keys(): sys.exit(f"names differ: {sorted(a.keys() ^ b.keys())[:5]}")
bad = [k for k in a if a[k] != b[k]]
if bad: sys.exit(f"{len(bad)} tensors differ, e.g. {bad[0]}")
print(f"{len(a)} tensors equal")
EOF
) || fail "the consolidated file differs from model_1.safetensors: $cmp_out"
echo "ok: classify --zero-stage 3 --output-dir: model files and a sharded checkpoint; consolidated: $cmp_out"
t=$(OMP_NUM_THREADS=1 timeout 300 "$run" --nproc-per-node 2 --master-port 0 "$bin" "${flags[@]}" \
  --resume out/sharded --test-only 2>&1) || fail "--resume out/sharded --test-only exited $?: $(echo "$t" | tail -n 3)"
got=$(grep -o "Test:  Acc@1 [0-9.]* Acc@5 [0-9.]*" <<<"$t" | tail -n1)
[ "$got" = "$acc" ] || fail "--resume out/sharded --test-only: '$got', the run's last epoch '$acc'"
echo "ok: --resume out/sharded --test-only: $got, as the run's last epoch"
py=""
for p in "$src/.venv-peers/bin/python" /usr/bin/python3; do
  [ -x "$p" ] && "$p" -c "import torchvision" 2>/dev/null && { py=$p; break; }
done
if [ -z "$py" ]; then
  echo "torchvision: not importable here (tools/setup.sh --peers installs it): its strict load of whole.safetensors not run"
  exit 0
fi
tv=$("$py" "$src/tools/torchvision_eval.py" whole.safetensors resnet18 imgs --resize 36 --crop 32 2>&1) ||
  fail "torchvision_eval: $tv"
grep -q "with strict=True" <<<"$tv" || fail "no strict load: $tv"
grep -q "^$acc\$" <<<"$tv" || fail "torchvision's evaluation '$(tail -n1 <<<"$tv")', cohort's '$acc'"
echo "ok: torchvision ($("$py" -c 'import torch, torchvision; print("torch", torch.__version__, "torchvision", torchvision.__version__)')): $(tail -n1 <<<"$tv") = cohort's"
