#!/usr/bin/env bash
# mnist_cnn trains data-parallel unchanged under cohortrun and under Open MPI's mpirun (Open MPI's
# variables only, no MASTER_ADDR/MASTER_PORT), and both launches end with identical weights on
# every rank and the same digest (the same 10 steps on the same shards). Exits 77 (skipped)
# without mpirun (tools/setup.sh --peers installs Open MPI).
set -u
mnist="$1" cohortrun="$2"
args=(--comm shm --epochs 1 --max-steps 10 --log-interval 1000 --test-batch-size 1000)
trace=$(mktemp -u /tmp/cohort_trace_XXXXXX.json)
out1=$(timeout 120 "$cohortrun" --nproc-per-node 2 "$mnist" "${args[@]}" --trace "$trace" 2>&1) || { echo "$out1"; echo "FAIL: cohortrun launch"; exit 1; }
# One trace file holding both ranks, each with compute and comm tracks.
python3 - "$trace" <<'PY' || { echo "FAIL: merged trace"; exit 1; }
import json, sys
ev = json.load(open(sys.argv[1]))["traceEvents"]
tracks = {(e["pid"], e["args"]["name"]) for e in ev if e["ph"] == "M" and e["name"] == "thread_name"}
assert {(0, "compute"), (0, "comm"), (1, "compute"), (1, "comm")} <= tracks, tracks
assert any(e["ph"] == "X" and e["pid"] == 1 for e in ev)
print("merged trace: tracks", sorted(tracks))
PY
rm -f "$trace"
d1=$(echo "$out1" | sed -n 's/.*identical weights: yes (digest \([0-9a-f]*\)).*/\1/p')
[ -n "$d1" ] || { echo "$out1"; echo "FAIL: no digest from the cohortrun launch"; exit 1; }
echo "cohortrun: ranks identical, digest $d1"
if ! command -v mpirun >/dev/null; then echo "SKIPPED: mpirun not installed"; exit 77; fi
out2=$(env -u MASTER_ADDR -u MASTER_PORT timeout 120 mpirun --allow-run-as-root -np 2 "$mnist" "${args[@]}" 2>&1) || { echo "$out2"; echo "FAIL: mpirun launch"; exit 1; }
d2=$(echo "$out2" | sed -n 's/.*identical weights: yes (digest \([0-9a-f]*\)).*/\1/p')
echo "mpirun:    ranks identical, digest ${d2:-none}"
[ "$d1" = "$d2" ] || { echo "$out2"; echo "FAIL: digests differ"; exit 1; }
compgen -G '/tmp/cohort-store-*' >/dev/null && { echo "FAIL: rendezvous directory left in /tmp"; exit 1; }
echo "1 passed, 0 failed"
