#!/usr/bin/env bash
# torchrun for real, where a working one exists (.venv-peers from `tools/setup.sh --peers`: the
# current PyTorch from PyPI; Debian's torchrun 1.13 fails under Python 3.11 before starting a
# worker). The same 2-rank MNIST job as under cohortrun must end with the same digest:
#   1. torchrun --nproc-per-node 2 --no-python mnist_cnn --comm shm (torchrun's own agent store
#      holds MASTER_PORT: cohort's group meets in a job-private directory instead);
#   2. the same with --rdzv-backend c10d;
#   3. a rank killed mid-run ends the job non-zero within 5 s; under --max-restarts 1 the job
#      restarts, resumes from its --checkpoint-dir and ends with the uninterrupted run's digest;
#   4. (root) --nnodes 2 --rdzv-backend c10d over two network-namespace hosts, one rank each,
#      ucx over TCP: the same digest as cohortrun --nnodes 2 gives for that job.
#
#   test_torchrun.sh BIN_DIR SOURCE_DIR     exits 77 with "skipped: why" without a working torchrun
set -uo pipefail
bin=$(cd "$1" && pwd)
src=$(cd "$2" && pwd)
skip() { echo "skipped: $*"; exit 77; }
torchrun=""
for t in "$src/.venv-peers/bin/torchrun" "$(command -v torchrun 2>/dev/null)"; do
  [ -n "$t" ] && [ -x "$t" ] && "$t" --help >/dev/null 2>&1 &&
    "$t" --nproc-per-node 1 --no-python true >/dev/null 2>&1 && { torchrun=$t; break; }
done
[ -n "$torchrun" ] ||
  skip "no working torchrun (make one with tools/setup.sh --peers; Debian's fails under Python 3.11)"
echo "torchrun: $torchrun ($("$(dirname "$torchrun")/python" -c 'import torch; print("torch", torch.__version__)' 2>/dev/null || echo system))"

work=$(mktemp -d)
tag=$$
ns0=torA$tag ns1=torB$tag
cleanup() {
  netns_down "$ns0" "$ns1"
  rm -rf "$work"
}
. "$(dirname "$0")/netns_hosts.sh"
trap cleanup EXIT
job=(--epochs 1 --max-steps 40 --log-interval 100000 --test-batch-size 1000)
digest_of() { sed -n 's/.*identical weights: yes (digest \([0-9a-f]*\)).*/\1/p' "$1" | tail -n1; }
fail=0
check() {  # name, exit status, log, expected digest
  local d
  d=$(digest_of "$3")
  if [ "$2" -eq 0 ] && [ -n "$d" ] && [ "$d" = "$4" ]; then
    echo "ok    $1: digest $d = cohortrun's"
  else
    echo "FAIL  $1: exit $2, digest '$d' (cohortrun: '$4')"
    tr '\r' '\n' <"$3" | grep -vE '^frame|^epoch|^\s*$' | tail -n 6
    fail=1
  fi
}

OMP_NUM_THREADS=1 "$bin/cohortrun" --nproc-per-node 2 --master-port 0 "$bin/mnist_cnn" --comm shm \
  "${job[@]}" >"$work/cohortrun.log" 2>&1
want=$(digest_of "$work/cohortrun.log")
[ -n "$want" ] || { echo "FAIL  cohortrun reference run"; tail -n 5 "$work/cohortrun.log"; exit 1; }

timeout 300 "$torchrun" --nproc-per-node 2 --no-python "$bin/mnist_cnn" --comm shm "${job[@]}" \
  >"$work/torchrun.log" 2>&1
check "torchrun --nproc-per-node 2 (agent store)" $? "$work/torchrun.log" "$want"

timeout 300 "$torchrun" --nnodes 1 --nproc-per-node 2 --rdzv-backend c10d \
  --rdzv-endpoint "localhost:$((29700 + tag % 200))" --no-python "$bin/mnist_cnn" --comm shm \
  "${job[@]}" >"$work/torchrun_c10d.log" 2>&1
check "torchrun --rdzv-backend c10d" $? "$work/torchrun_c10d.log" "$want"

. "$(dirname "$0")/kill_rank.sh"
"$torchrun" --nproc-per-node 2 --no-python "$bin/mnist_cnn" --comm shm --epochs 1 \
  --max-steps 100000 --log-interval 1 >"$work/kill.log" 2>&1 &
kill_rank_check "torchrun --nproc-per-node 2" $! "$work/kill.log" RANK || fail=1

# torchrun --max-restarts 1: rank 1 SIGKILLed at step 25; torchrun restarts both workers
# (TORCHELASTIC_RESTART_COUNT=1), the Trainer resumes from --checkpoint-dir by itself and the run
# ends with the digest of the same run uninterrupted under cohortrun.
rjob=(--comm shm --epochs 1 --max-steps 40 --log-interval 1 --test-batch-size 1000
      --deterministic --checkpoint-every 10)
OMP_NUM_THREADS=1 "$bin/cohortrun" --nproc-per-node 2 --master-port 0 "$bin/mnist_cnn" "${rjob[@]}" \
  --checkpoint-dir "$work/ref_ck" >"$work/restart_ref.log" 2>&1
want_r=$(digest_of "$work/restart_ref.log")
OMP_NUM_THREADS=1 timeout 300 "$torchrun" --nproc-per-node 2 --max-restarts 1 --no-python \
  "$bin/mnist_cnn" "${rjob[@]}" --checkpoint-dir "$work/restart_ck" >"$work/restart.log" 2>&1 &
restart_job=$!
for _ in $(seq 1 600); do grep -q "step 25/40" "$work/restart.log" 2>/dev/null && break; sleep 0.05; done
for p in $(own_mnist_pids); do
  grep -qx "RANK=1" < <(tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null) && { kill -9 "$p"; break; }
done
wait "$restart_job"
rc=$?
resumed=$(grep -o 'resumed from [^:]*: [^(]*' "$work/restart.log" | head -n1)
[ -n "$resumed" ] || rc=1
check "torchrun --max-restarts 1, rank 1 killed at step 25, ${resumed:-not resumed}" $rc \
  "$work/restart.log" "$want_r"

# ---- two hosts ----
if [ "$(id -u)" -ne 0 ] || ! command -v ip >/dev/null; then
  echo "skipped: torchrun --nnodes 2 over network namespaces (needs root and iproute2)"
  exit $fail
fi
net=10.215.$((tag % 200 + 10))
netns_up "$ns0" "$ns1" "t$tag" "$net" ||
  { echo "skipped: torchrun --nnodes 2 (could not create network namespaces)"; exit $fail; }
two=(--comm ucx --epochs 1 --max-steps 20 --log-interval 100000 --test-batch-size 1000)
run_nodes() {  # launcher name; then per node i the command is built by node_cmd
  for i in 0 1; do
    ns=ns$i
    ip netns exec "${!ns}" env OMP_NUM_THREADS=1 UCX_TLS=tcp,self UCX_NET_DEVICES="t$tag-$i" \
      timeout 300 $(node_cmd "$i") >"$work/$1.$i.log" 2>&1 &
    eval "p$i=$!"
  done
  wait "$p0"; r0=$?; wait "$p1"; r1=$?
  return $((r0 | r1))
}
node_cmd() {
  echo "$bin/cohortrun --nnodes 2 --node-rank $1 --master-addr $net.1 --master-port 29713 $bin/mnist_cnn ${two[*]}"
}
run_nodes cohortrun2
want2=$(digest_of "$work/cohortrun2.0.log")
node_cmd() {  # torchrun cannot tell which namespace is the rendezvous host: say so (is_host)
  echo "$torchrun --nnodes 2 --nproc-per-node 1 --rdzv-backend c10d --rdzv-endpoint $net.1:29714" \
       "--rdzv-id job$tag --rdzv-conf is_host=$((1 - $1)) --local-addr $net.$(($1 + 1))" \
       "--no-python $bin/mnist_cnn ${two[*]}"
}
run_nodes torchrun2
check "torchrun --nnodes 2 --rdzv-backend c10d across two hosts" $? "$work/torchrun2.0.log" "$want2"
exit $fail
