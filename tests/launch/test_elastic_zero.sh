#!/usr/bin/env bash
# Elastic training with ZeRO (docs/PARALLEL.md, "Elastic training with ZeRO"): mnist_cnn at
# --zero-stage 1-3 under cohortrun --elastic loses a rank, whose shard of the state is gone with
# it; the survivors reshard the newest sharded checkpoint (--checkpoint-every 5) onto the smaller
# group and go on from its step. Each case checks:
#  - exit 0, one membership change logged, at the step of the checkpoint it went back to;
#  - the run's digest is its replay's (--replay-membership: the same change at the same step,
#    no failure) and, independently, the digest of plain DDP (--zero-stage 0) replaying the same
#    log, which keeps its state across the change instead of loading a checkpoint;
# for 3 ranks over shm at stage 2 (a seeded rank and step), over ucx at stage 3 losing rank 0
# (the lead), and at stage 1 before the first periodic checkpoint (the starting state, step 0).
# Hybrid sharding (--shard-group-size 2, 4 ranks): a lost rank's chunk rebuilt from its live
# replica with no step lost (the change at the step the survivors had done, no checkpoint read),
# its digest its replay's and plain DDP's replay's; both replicas of a shard lost together: back
# to the newest checkpoint.
# Growing back (--elastic-respawn 1, stage 3): the rank started again joins through the group's
# sharded checkpoint of the boundary; the job ends with 3 ranks holding identical weights.
# Bad input: no --checkpoint-dir, --elastic-batch per-rank, and a replay whose checkpoints are
# not at the logged step, each refused by name.
#
#   test_elastic_zero.sh BIN_DIR [SEED]
set -uo pipefail
bin=$(cd "$1" && pwd)
seed=${2:-1}
here=$(cd "$(dirname "$0")" && pwd)
. "$here/kill_rank.sh"  # COHORT_TEST_JOB, own_mnist_pids and signal_at
work=$(mktemp -d)
trap 'own_mnist_pids | xargs -r kill -9 2>/dev/null; rm -rf "$work"' EXIT
export OMP_NUM_THREADS=1
data=$(python3 "$here/launch_data.py" /usr/share/datasets/fashion-mnist "$work/data") ||
  data=/usr/share/datasets/fashion-mnist
steps=30
fail=0
digest_of() { sed -n 's/.*identical weights: yes (digest \([0-9a-f]*\)).*/\1/p' "$1" | tail -n1; }

# job NAME COMM STAGE ARGS...: 3 ranks, --elastic 2:3, checkpoints every 5 steps in NAME.ck.
job() {
  local name=$1 comm=$2 stage=$3
  shift 3
  timeout 300 "$bin/cohortrun" --nproc-per-node 3 --master-port 0 --elastic 2:3 \
    ${respawn:+--elastic-respawn $respawn} "$bin/mnist_cnn" --comm "$comm" --epochs 1 \
    --max-steps $steps --log-interval 1 --test-batch-size 1000 --deterministic --data "$data" \
    --elastic 2:3 --zero-stage "$stage" --checkpoint-dir "$work/$name.ck" "$@" \
    >"$work/$name.log" 2>&1
}
verdict() {  # LABEL WHY LOG
  if [ -z "$2" ]; then
    echo "ok    $1"
  else
    echo "FAIL  $1$2"
    grep -E "cohortrun|elastic|rror" "$3" | grep -v '^\[rank [0-9]*\]  *[0-9]' | tail -n 12
    fail=1
  fi
}

# lose LABEL NAME COMM STAGE STEP RANK [DDP]: the run with rank RANK killed at STEP, then its
# replay, then (DDP=ddp) plain DDP's replay of the same log.
lose() {
  local label=$1 name=$2 comm=$3 stage=$4 step=$5 rank=$6 ddp=${7:-} why="" rc got at want
  job "$name" "$comm" "$stage" --checkpoint-every 5 --membership-log "$work/$name.jsonl" &
  local pid=$!
  signal_at "$work/$name.log" "$step" "$rank" KILL >/dev/null
  wait "$pid"
  rc=$?
  got=$(digest_of "$work/$name.log")
  at=$(sed -n 's/.*"step":\([0-9]*\),"old".*/\1/p' "$work/$name.jsonl" 2>/dev/null)
  [ "$rc" -eq 0 ] || why="$why; exit $rc"
  [ "$(wc -l <"$work/$name.jsonl" 2>/dev/null || echo 0)" -eq 1 ] || why="$why; not one change logged"
  [ -n "$at" ] && [ $((at % 5)) -eq 0 ] || why="$why; the change at step '$at', not a checkpoint's"
  grep -q "resharded onto 2 ranks" "$work/$name.log" || why="$why; no resharding reported"
  [ -n "$got" ] || why="$why; no final digest"
  local replays=""
  if [ -z "$why" ]; then
    job "$name.replay" "$comm" "$stage" --checkpoint-every 5 --replay-membership "$work/$name.jsonl"
    want=$(digest_of "$work/$name.replay.log")
    [ "$got" = "$want" ] || why="$why; digest $got, its replay's '$want'"
    replays="= its replay's"
    if [ -n "$ddp" ]; then
      job "$name.ddp" "$comm" 0 --replay-membership "$work/$name.jsonl"
      want=$(digest_of "$work/$name.ddp.log")
      [ "$got" = "$want" ] || why="$why; digest $got, plain DDP's replay '$want'"
      replays="$replays = plain DDP's replay"
    fi
  fi
  verdict "$label: back to the checkpoint of step $at, digest $got $replays; $(grep -o 'training again: from the death[^=]*' "$work/$name.log" | head -n1)" "$why" "$work/$name.log"
}

# 1. shm, stage 2, a seeded rank killed at a seeded step (7-19).
kill_step=$((7 + (seed * 11) % 13)) victim=$((seed % 3))
lose "shm 3 ranks, stage 2, rank $victim killed at step $kill_step" z2 shm 2 "$kill_step" "$victim" ddp
# 2. ucx, stage 3, the lead (rank 0) killed.
lose "ucx 3 ranks, stage 3, rank 0 killed at step 12" z3 ucx 3 12 0
# 3. stage 1, killed before the first periodic checkpoint: back to the starting state.
lose "shm 3 ranks, stage 1, rank 2 killed at step 2" z1 shm 1 2 2 ddp

# Hybrid sharding (--shard-group-size 2 at 4 ranks: 2 replicas of 2-rank shard groups). hjob NAME
# STAGE ARGS...: 4 ranks over shm, --elastic 2:4, checkpoints every 5 steps in NAME.ck.
hjob() {
  local name=$1 stage=$2
  shift 2
  timeout 300 "$bin/cohortrun" --nproc-per-node 4 --master-port 0 --elastic 2:4 "$bin/mnist_cnn" \
    --comm shm --epochs 1 --max-steps $steps --log-interval 1 --test-batch-size 1000 --deterministic \
    --data "$data" --elastic 2:4 --zero-stage "$stage" --checkpoint-dir "$work/$name.ck" \
    --checkpoint-every 5 "$@" >"$work/$name.log" 2>&1
}
# H1. A seeded rank killed at step 12 (no checkpoint's): its chunk rebuilt from its replica, the
# change at the step the survivors had done (no step lost), digest = replay = plain DDP's replay.
why=""
hvictim=$((1 + seed % 3))
hjob h2 2 --shard-group-size 2 --membership-log "$work/h2.jsonl" &
pid=$!
signal_at "$work/h2.log" 12 "$hvictim" KILL >/dev/null
wait "$pid"
rc=$?
got=$(digest_of "$work/h2.log")
at=$(sed -n 's/.*"step":\([0-9]*\),"old".*/\1/p' "$work/h2.jsonl" 2>/dev/null)
[ "$rc" -eq 0 ] || why="$why; exit $rc"
grep -q "hybrid sharding: the lost chunks rebuilt from live replicas at step $at, resharded onto 3 ranks; no step lost" "$work/h2.log" ||
  why="$why; no rebuild from replicas reported"
[ -n "$at" ] && [ "$at" -ge 12 ] || why="$why; the change at step '$at', before the death (a step lost)"
if [ -z "$why" ]; then
  hjob h2.replay 2 --shard-group-size 2 --replay-membership "$work/h2.jsonl"
  want=$(digest_of "$work/h2.replay.log")
  [ -n "$got" ] && [ "$got" = "$want" ] || why="$why; digest '$got', its replay's '$want'"
  hjob h2.ddp 0 --replay-membership "$work/h2.jsonl"
  want=$(digest_of "$work/h2.ddp.log")
  [ "$got" = "$want" ] || why="$why; digest $got, plain DDP's replay '$want'"
fi
verdict "shm 4 ranks, stage 2, hybrid (--shard-group-size 2), rank $hvictim killed at step 12: rebuilt from its replica at step $at, digest $got = its replay's = plain DDP's replay" "$why" "$work/h2.log"
# H2. Both replicas of shard 1 (ranks 1 and 3) killed at once: no live replica, so the newest
# sharded checkpoint, as pure sharding; the job goes on with 2 ranks.
why=""
hjob hboth 3 --shard-group-size 2 &
pid=$!
signal_at "$work/hboth.log" 12 1 KILL >/dev/null
signal_at "$work/hboth.log" 12 3 KILL >/dev/null
wait "$pid"
rc=$?
[ "$rc" -eq 0 ] || why="$why; exit $rc"
grep -q "hybrid sharding: no live replica to rebuild from (every replica of shard 1 is gone); the newest sharded checkpoint instead" "$work/hboth.log" ||
  why="$why; no fallback to the checkpoint reported"
grep -q "resharded onto 2 ranks" "$work/hboth.log" || why="$why; no resharding onto 2 ranks"
grep -q "ranks hold identical weights: yes" "$work/hboth.log" || why="$why; the ranks' weights differ"
verdict "shm 4 ranks, stage 3, hybrid, ranks 1 and 3 (shard 1's replicas) killed together: back to the checkpoint" "$why" "$work/hboth.log"

# 4. Growing back at stage 3: rank 1 killed at step 10 and started again.
steps=40
why=""
respawn=1 job grow shm 3 --checkpoint-every 5 --membership-log "$work/grow.jsonl" &
pid=$!
signal_at "$work/grow.log" 10 1 KILL >/dev/null
wait "$pid"
rc=$?
[ "$rc" -eq 0 ] || why="$why; exit $rc"
grep -q '"reason":"rank 1 joined"' "$work/grow.jsonl" 2>/dev/null || why="$why; no join logged"
joined=$(grep -o "rank 1 joined membership [0-9]* at step [0-9]*: the group's sharded checkpoint[^,]*" "$work/grow.log" | head -n1)
[ -n "$joined" ] || why="$why; the respawned rank did not report loading the sharded checkpoint"
grep -q "ranks hold identical weights: yes" "$work/grow.log" || why="$why; the ranks' weights differ at the end"
verdict "shm 3 ranks, stage 3, rank 1 killed at step 10 and started again: $joined; identical weights" "$why" "$work/grow.log"
steps=30

# 5. Bad input, each refused by name before training.
timeout 120 "$bin/cohortrun" --nproc-per-node 2 --master-port 0 --elastic 1:2 "$bin/mnist_cnn" \
  --comm shm --epochs 1 --max-steps 2 --data "$data" --elastic 1:2 --zero-stage 2 \
  >"$work/nodir.log" 2>&1
rc=$?
if [ "$rc" -ne 0 ] && grep -q "give checkpoint_dir (--checkpoint-dir)" "$work/nodir.log"; then
  echo "ok    --zero-stage 2 --elastic without --checkpoint-dir: refused by name"
else
  verdict "--zero-stage 2 --elastic without --checkpoint-dir (exit $rc)" "; not refused by name" "$work/nodir.log"
fi
timeout 120 "$bin/cohortrun" --nproc-per-node 2 --master-port 0 --elastic 1:2 "$bin/mnist_cnn" \
  --comm shm --epochs 1 --max-steps 2 --data "$data" --elastic 1:2 --elastic-batch per-rank \
  --zero-stage 1 --checkpoint-dir "$work/perrank.ck" >"$work/perrank.log" 2>&1
rc=$?
if [ "$rc" -ne 0 ] && grep -q "elastic with each rank's batch kept (--elastic-batch per-rank)" "$work/perrank.log"; then
  echo "ok    --zero-stage 1 --elastic-batch per-rank: refused by name"
else
  verdict "--zero-stage 1 --elastic-batch per-rank (exit $rc)" "; not refused by name" "$work/perrank.log"
fi
# The replay of case 1's or 2's log with checkpoints every 7 steps: none at the logged step
# (5, 10 or 15; the starting state's step 0 is everyone's).
log=""
for l in "$work/z2.jsonl" "$work/z3.jsonl"; do
  at=$(sed -n 's/.*"step":\([0-9]*\),"old".*/\1/p' "$l" 2>/dev/null)
  [ -n "$at" ] && [ "$at" -gt 0 ] && [ $((at % 7)) -ne 0 ] && { log=$l; break; }
done
if [ -z "$log" ]; then
  echo "FAIL  no membership log with a change after step 0 to replay"
  fail=1
else
  job other shm 2 --checkpoint-every 7 --replay-membership "$log"
  rc=$?
  if [ "$rc" -ne 0 ] && grep -q "needs the sharded checkpoint of that step" "$work/other.log"; then
    echo "ok    a replay without a checkpoint at the logged step: refused ($(grep -o "the replayed change at global step [0-9]*[^(]*" "$work/other.log" | head -n1))"
  else
    verdict "a replay without a checkpoint at the logged step (exit $rc)" "; not refused by name" "$work/other.log"
  fi
fi
exit $fail
