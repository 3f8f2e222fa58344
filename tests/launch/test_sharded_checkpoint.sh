#!/usr/bin/env bash
# Sharded checkpoints (train/sharded_checkpoint.hpp) end to end, against plain DDP as the
# independent reference (ZeRO training is bitwise DDP's, tests/parallel/test_zero*.cpp):
#  1. N -> M: mnist_cnn trains one epoch at N ranks with --checkpoint-dir, then a second at M
#     ranks resuming from it, for (N, M) = (2, 3), (3, 2), (4, 1), (1, 4) and ZeRO stages mixed
#     across the two runs (2 -> 3, 3 -> 1, 1 -> 2, 2 -> 2). Each ZeRO pair must end with the
#     digest of the DDP pair with the same N and M: the reshard onto M ranks is exact.
#  2. cohort-checkpoint consolidate: the model file equals, tensor for tensor and byte for byte,
#     the DDP run's checkpoint.safetensors, and the optimizer's buffers its state file's.
#  3. Bad input, each refused before anything changes, naming the file or the tensor: a
#     truncated shard, a missing shard, an index whose shape does not match its pieces, and
#     shards of two saves mixed; the directory is left as it was.
#  4. Every rank SIGKILLed at once, at a random instant of a run that saves after every step:
#     a whole checkpoint is always left (cohort-checkpoint describe checks every file against
#     the index), and the run resumes from it.
#  5. A mid-epoch checkpoint of 2 ranks resumed by 3: refused by name, the directory unchanged.
#
#   [PAIRS="N M S1 S2;..."] [ONLY_PAIRS=1] test_sharded_checkpoint.sh BIN_DIR
#   (ONLY_PAIRS=1: part 1 alone, for a wider sweep of world sizes by hand)
set -uo pipefail
bin=$(cd "$1" && pwd)
. "$(dirname "$0")/kill_rank.sh"  # COHORT_TEST_JOB and own_mnist_pids
work=$(mktemp -d)
trap 'own_mnist_pids | xargs -r kill -9 2>/dev/null; rm -rf "$work"' EXIT
export OMP_NUM_THREADS=1
data=$(python3 "$(dirname "$0")/launch_data.py" /usr/share/datasets/fashion-mnist "$work/data") ||
  data=/usr/share/datasets/fashion-mnist
digest_of() { sed -n 's/.*identical weights: yes (digest \([0-9a-f]*\)).*/\1/p' "$1" | tail -n1; }
fail=0
# run N EPOCHS DIR LOG [flags...]
run() {
  local n=$1 epochs=$2 dir=$3 log=$4
  shift 4
  timeout 300 "$bin/cohortrun" --nproc-per-node "$n" --master-port 0 "$bin/mnist_cnn" --comm shm \
    --epochs "$epochs" --max-steps-per-epoch "${PER_EPOCH:-12}" --log-interval 100 --test-batch-size 1000 \
    --deterministic --data "$data" --checkpoint-dir "$dir" "$@" >"$log" 2>&1
}

# 1. N -> M, DDP and ZeRO side by side.
# PAIRS="N M S1 S2;..." replaces the four cases (a wider sweep by hand, docs/PARALLEL.md).
IFS=';' read -r -a cases <<<"${PAIRS:-2 3 2 3;3 2 3 1;4 1 1 2;1 4 2 2}"
for case in "${cases[@]}"; do
  set -- $case
  n=$1 m=$2 s1=$3 s2=$4
  tag="${n}to${m}"
  run "$n" 1 "$work/ddp_$tag" "$work/ddp_$tag.1.log"
  run "$m" 2 "$work/ddp_$tag" "$work/ddp_$tag.2.log"
  run "$n" 1 "$work/z_$tag" "$work/z_$tag.1.log" --zero-stage "$s1"
  cp -r "$work/z_$tag" "$work/z_${tag}_epoch1"  # for part 3
  run "$m" 2 "$work/z_$tag" "$work/z_$tag.2.log" --zero-stage "$s2"
  want=$(digest_of "$work/ddp_$tag.2.log") got=$(digest_of "$work/z_$tag.2.log")
  label="$n ranks (stage $s1) -> $m ranks (stage $s2)"
  if [ -n "$want" ] && [ "$want" = "$got" ] &&
     grep -q "resumed from $work/z_$tag/sharded: 1 epoch" "$work/z_$tag.2.log"; then
    echo "ok    $label: digest $got, as DDP's $n -> $m"
  else
    echo "FAIL  $label: digest '${got}', DDP's $n -> $m '${want}'"
    tail -n 5 "$work/z_$tag.2.log" "$work/ddp_$tag.2.log"
    fail=1
  fi
done

[ "${ONLY_PAIRS:-0}" = 1 ] && exit $fail

# 2. Consolidation against DDP's own files (same weights and optimizer state at 3 -> 2).
if "$bin/cohort-checkpoint" consolidate "$work/z_3to2/sharded" "$work/full.safetensors" \
     --optimizer >"$work/consolidate.log" 2>&1 &&
   python3 - "$work/full.safetensors" "$work/ddp_3to2/checkpoint.safetensors" <<'PY'
import json, struct, sys

def read(path):
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        h = json.loads(f.read(n))
        base = 8 + n
        out = {}
        for k, v in h.items():
            if k == "__metadata__":
                continue
            a, b = v["data_offsets"]
            f.seek(base + a)
            out[k] = (v["dtype"], v["shape"], f.read(b - a))
        order = sorted((v["data_offsets"][0], k) for k, v in h.items() if k != "__metadata__")
        return out, [k for _, k in order]

full, _ = read(sys.argv[1])
ddp, names = read(sys.argv[2])
assert full == ddp, "consolidated model differs from DDP's: %s" % sorted(
    k for k in set(full) | set(ddp) if full.get(k) != ddp.get(k))
opt, _ = read(sys.argv[1].replace(".safetensors", ".state.safetensors"))
ddp_opt, _ = read(sys.argv[2].replace(".safetensors", ".state.safetensors"))
# DDP numbers the parameters (all of mnist_cnn's tensors) in state_dict order.
mapped = {}
for k, v in ddp_opt.items():
    _, _, i, buf = k.split(".", 3)
    mapped["optimizer.%s.%s" % (names[int(i)], buf)] = (v[0], full[names[int(i)]][1], v[2])
assert opt == mapped, "consolidated optimizer state differs: %s" % sorted(
    k for k in set(opt) | set(mapped) if opt.get(k) != mapped.get(k))
print("%d model tensors and %d optimizer buffers equal DDP's" % (len(full), len(opt)))
PY
then
  echo "ok    consolidate: $(cat "$work/consolidate.log")"
else
  echo "FAIL  consolidate"
  cat "$work/consolidate.log"
  fail=1
fi

# 3. Bad input on a copy of the 2-rank stage-2 checkpoint (from case 2 -> 3): the load refuses,
#    names the culprit, and the directory is as it was.
expect_refused() {  # LABEL PATTERN SETUP
  local label=$1 pattern=$2 setup=$3 dir="$work/bad"
  rm -rf "$dir" && cp -r "$work/z_2to3_epoch1" "$dir"
  (cd "$dir/sharded" && eval "$setup")
  local before
  before=$(cd "$dir" && find . -type f -exec md5sum {} + | sort)
  run 2 2 "$dir" "$work/bad.log" --zero-stage 2
  local rc=$?
  local after
  after=$(cd "$dir" && find . -type f -exec md5sum {} + | sort)
  if [ $rc -ne 0 ] && grep -q -- "$pattern" "$work/bad.log" && [ "$before" = "$after" ]; then
    echo "ok    $label: refused (exit $rc), directory unchanged"
  else
    echo "FAIL  $label: exit $rc, wanted '$pattern'; unchanged: $([ "$before" = "$after" ] && echo yes || echo no)"
    grep -i "error\|cannot\|fail" "$work/bad.log" | head -n 5
    fail=1
  fi
}
expect_refused "a truncated shard" "shard-1-of-2.safetensors' is truncated" \
  'truncate -s 1000000 shard-1-of-2.safetensors'
expect_refused "a missing shard" "shard-0-of-2.safetensors' (rank 0's shard) is missing" \
  'rm shard-0-of-2.safetensors'
expect_refused "an index that does not match its files" \
  "the pieces of 'model.fc1.weight' cover 1179648 of its 1179776 elements" \
  "sed -i '0,/9216/s//9217/' index.json"
expect_refused "shards of two saves mixed" "is not rank 1's shard of this save" \
  "cp '$work/z_3to2_epoch1/sharded/shard-1-of-3.safetensors' shard-1-of-2.safetensors"

# 4. Killed at random instants while saving every step (the writes run in the background).
for round in 1 2 3; do
  dir="$work/crash$round" log="$work/crash$round.log"
  PER_EPOCH=400 run 2 1 "$dir" "$log" --zero-stage 2 --checkpoint-every 1 --max-steps 60 &
  job=$!
  for _ in $(seq 1 600); do [ -e "$dir/sharded/index.json" ] && break; sleep 0.05; done
  sleep "0.$((RANDOM % 10))$((RANDOM % 10))"
  own_mnist_pids | xargs -r kill -9
  wait "$job" 2>/dev/null
  [ "$round" = 1 ] && cp -r "$dir" "$work/midepoch"  # for part 5
  if "$bin/cohort-checkpoint" describe "$dir/sharded" >"$work/describe.log" 2>&1 &&
     PER_EPOCH=400 run 2 1 "$dir" "$log.2" --zero-stage 2 --max-steps 60 &&
     grep -q "resumed from $dir/sharded" "$log.2"; then
    echo "ok    killed while saving (round $round): $(head -n1 "$work/describe.log" | sed 's/.*: //'), resumed"
  else
    echo "FAIL  killed while saving (round $round): no whole checkpoint left, or no resume"
    cat "$work/describe.log"
    tail -n 3 "$log.2"
    fail=1
  fi
done

# 5. A mid-epoch sharded checkpoint of 2 ranks resumed by 3: refused by name (the position is one
#    in each rank's shard of the data), the directory unchanged.
before=$(cd "$work/midepoch" && find . -type f -exec md5sum {} + | sort)
PER_EPOCH=400 run 3 1 "$work/midepoch" "$work/midepoch.log" --zero-stage 2 --max-steps 60
rc=$?
after=$(cd "$work/midepoch" && find . -type f -exec md5sum {} + | sort)
if [ $rc -ne 0 ] && grep -q "world_size = '2', this run has '3'" "$work/midepoch.log" &&
   [ "$before" = "$after" ]; then
  echo "ok    a 2-rank mid-epoch sharded checkpoint resumed by 3 ranks: refused (exit $rc), directory unchanged"
else
  echo "FAIL  a 2-rank mid-epoch sharded checkpoint resumed by 3 ranks: exit $rc"
  grep -E "world_size|rror" "$work/midepoch.log" | tail -n 3
  fail=1
fi
exit $fail
