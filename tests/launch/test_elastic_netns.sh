#!/usr/bin/env bash
# Elastic training across two hosts (docs/LAUNCH.md, "Elastic training"): network namespaces
# plugged into one bridge (a switch), 2 ranks each, one cohortrun --elastic per host (--nnodes 2;
# host 0's serves the store), mnist_cnn over ucx (TCP on the hosts' links, 3 s timeouts). Root only.
#  1. a rank of host 1 SIGKILLed at a seeded step: the 3 others go on;
#  2. a rank of host 1 SIGSTOPped past the timeout: declared dead after the settle time, refused
#     when woken; the 3 others go on;
#  3. host 1's link taken down (ip link set ... down) for 5 s, then up: host 0's ranks go on
#     alone, host 1's ranks are refused (the side without the store cannot decide) and its
#     cohortrun ends non-zero, naming why;
#  4. the same with --elastic-respawn 1: host 1's ranks, started again once the link is back,
#     rejoin at step boundaries and take the state over ucx from host 0; both hosts exit 0;
#  5. over hier (shm within a host, ucx between leaders): host 1's leader SIGKILLed.
# Each run's membership changes are logged; 1-3 and 5 end with the digest of their replay
# (--replay-membership, run on one host over shm: deterministic mode makes the reduction order
# the backend's no more), and in 1, 3, 4 and 5 every step's global batch holds exactly the samples of
# the uninterrupted run (check_samples.py): none lost, none seen twice.
#
#   test_elastic_netns.sh BIN_DIR [SEED]      exits 77 with "skipped: why" when it cannot run here
set -uo pipefail
bin=$(cd "$1" && pwd)
seed=${2:-1}
here=$(cd "$(dirname "$0")" && pwd)
skip() { echo "skipped: $*"; exit 77; }
[ "$(id -u)" -eq 0 ] || skip "needs root to create network namespaces"
command -v ip >/dev/null || skip "no ip (Debian: iproute2)"
"$bin/mnist_cnn" --help >/dev/null 2>&1 || skip "no mnist_cnn in $bin"
. "$here/kill_rank.sh"  # COHORT_TEST_JOB and own_mnist_pids
. "$here/netns_hosts.sh"

tag=$$
ns0=celA$tag ns1=celB$tag sw=celS$tag veth=ve$tag
net=10.215.$((tag % 200 + 10))
work=$(mktemp -d)
cleanup() {
  netns_down "$ns0" "$ns1" "$sw"
  own_mnist_pids | xargs -r kill -9 2>/dev/null
  [ -n "${KEEP:-}" ] && echo "kept $work" || rm -rf "$work"
}
trap cleanup EXIT
netns_up_switched "$ns0" "$ns1" "$sw" "$veth" "$net" ||
  skip "could not create network namespaces and a bridge (ip netns add / ip link add type bridge failed)"
echo "hosts: $ns0 = $net.1, $ns1 = $net.2, on a bridge in $sw"
export OMP_NUM_THREADS=1 COHORT_JOB_TOKEN=elastic-netns-$tag
# The jobs' data (launch_data.py): the same training split, gunzipped once; a tenth of the test
# split, which only the closing evaluation reads.
data=$(python3 "$here/launch_data.py" /usr/share/datasets/fashion-mnist "$work/data") ||
  data=/usr/share/datasets/fashion-mnist
# set_steps N: the jobs from here on train N steps ($steps, $job). 40 where every fault lands by
# step 29; 60 for the reference (the sample counts of every case) and the link cuts, where host 1's
# ranks reach the store again only after the link (5 s) and TCP's retransmission back-off, and
# (with the rejoin) must then start again and join before host 0 finishes.
set_steps() {
  steps=$1
  job=(--epochs 1 --max-steps $steps --log-interval 1 --test-batch-size 1000 --deterministic
       --data "$data")
}
set_steps 60
fail=0
port=$((29700 + tag % 200))
digest_of() { sed -n 's/.*identical weights: yes (digest \([0-9a-f]*\)).*/\1/p' "$1" | tail -n1; }
changes_of() {
  sed -n 's/.*"step":\([0-9]*\),"old":\[\([0-9,]*\)\],"new":\[\([0-9,]*\)\].*"reason":"\([^"]*\)".*/[\2 -> \3 at step \1: \4]/p' "$1" | tr '\n' ' '
}

# hosts NAME RESPAWN ARGS...: cohortrun on both hosts (2 ranks each); their pids in hpid0, hpid1.
# $comm: the backend (ucx unless set).
hosts() {
  local name=$1 respawn=$2 i ns
  shift 2
  port=$((port + 1))
  for i in 0 1; do
    if [ $i = 0 ]; then ns=$ns0; else ns=$ns1; fi
    ip netns exec "$ns" env UCX_TLS=tcp,self UCX_NET_DEVICES="$veth-$i" COHORT_COMM_TIMEOUT_MS=3000 \
      timeout 300 "$bin/cohortrun" --nnodes 2 --node-rank $i --nproc-per-node 2 \
      --master-addr "$net.1" --master-port $port --elastic 2:4 --elastic-respawn "$respawn" \
      "$bin/mnist_cnn" --comm "${comm:-ucx}" "${job[@]}" --elastic 2:4 --elastic-settle-ms 1500 \
      --membership-log "$work/$name.jsonl" --sample-log "$work/$name" "$@" >"$work/$name.$i.log" 2>&1 &
    eval "hpid$i=$!"
  done
}
# at_step NAME STEP: returns once host 0's log shows step STEP (at most 60 s).
at_step() {
  for _ in $(seq 1 1200); do
    grep -q "step $2/$steps" "$work/$1.0.log" 2>/dev/null && return 0
    sleep 0.05
  done
  return 1
}
# pid_of RANK: this test's mnist_cnn process of launch rank RANK.
pid_of() {
  local p
  for p in $(own_mnist_pids); do
    grep -qx "RANK=$1" < <(tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null) && { echo "$p"; return 0; }
  done
  return 1
}
# judge LABEL NAME RC0 RC1 WANT_RC1 CHANGES REPLAY SAMPLES [WHY]: prints ok or FAIL. CHANGES: N or
# MIN-MAX (joiners may come in one change or two).
judge() {
  local label=$1 name=$2 rc0=$3 rc1=$4 want1=$5 nchanges=$6 replay=$7 samples=$8 why=${9:-}
  local got want lines out=""
  got=$(digest_of "$work/$name.0.log")
  lines=$(grep -c . "$work/$name.jsonl" 2>/dev/null || echo 0)
  [ "$rc0" -eq 0 ] || why="$why; host 0 exit $rc0"
  [ "$rc1" -eq "$want1" ] || why="$why; host 1 exit $rc1, want $want1"
  case "$nchanges" in
    *-*) [ "$lines" -ge "${nchanges%-*}" ] && [ "$lines" -le "${nchanges#*-}" ] ;;
    *) [ "$lines" -eq "$nchanges" ] ;;
  esac || why="$why; $lines membership changes logged, want $nchanges"
  [ -n "$got" ] || why="$why; no final digest on host 0"
  if [ "$replay" = yes ] && [ -n "$got" ]; then
    timeout 300 "$bin/cohortrun" --nproc-per-node 4 --master-port 0 --elastic 2:4 \
      "$bin/mnist_cnn" --comm shm "${job[@]}" --elastic 2:4 --replay-membership "$work/$name.jsonl" \
      >"$work/$name.replay.log" 2>&1
    want=$(digest_of "$work/$name.replay.log")
    [ "$got" = "$want" ] || why="$why; digest $got, its replay's '$want'"
    out="digest $got = its replay's on one host over shm"
  fi
  if [ "$samples" = yes ]; then
    if s=$(python3 "$here/check_samples.py" "$work/$name" "$work/ref" 4 $steps "$work/$name.jsonl"); then
      out="$out; $s"
    else
      why="$why; $s"
    fi
  fi
  if [ -z "$why" ]; then
    echo "ok    $label: $(changes_of "$work/$name.jsonl")$out"
  else
    echo "FAIL  $label$why"
    for i in 0 1; do grep -E "cohortrun|elastic|rror|refused" "$work/$name.$i.log" | tail -n 8 | cut -c1-400; done
    # A rank that crashed: UCX's handler prints the signal and a backtrace (seen once, 2026-12-03:
    # the woken rank of case 2 died of SIGSEGV inside libucs before its refusal; not reproduced in
    # 6 runs of that case alone), which is what the next occurrence needs.
    for i in 0 1; do grep -h -A 24 "Caught signal" "$work/$name.$i.log" | head -n 40 | cut -c1-300; done
    fail=1
  fi
}

# The uninterrupted run's samples, on one host.
timeout 300 "$bin/cohortrun" --nproc-per-node 4 --master-port 0 "$bin/mnist_cnn" --comm shm \
  "${job[@]}" --sample-log "$work/ref" >"$work/ref.log" 2>&1 ||
  { echo "FAIL  the uninterrupted reference run"; tail -n 5 "$work/ref.log"; exit 1; }

# 1. SIGKILL a rank of host 1 at a seeded step.
set_steps 40
kill_step=$((5 + (seed * 13) % 25)) victim=$((2 + seed % 2))
hosts kill 0
at_step kill "$kill_step" && kill -KILL "$(pid_of "$victim")"
wait "$hpid0"; rc0=$?; wait "$hpid1"; rc1=$?
judge "2 hosts x 2 ranks over ucx, rank $victim (host 1) SIGKILLed at step $kill_step" kill $rc0 $rc1 0 1 yes yes

# 2. SIGSTOP a rank of host 1 past the 3 s timeout, wake it once the others went on.
hosts stop 0
at_step stop 10 && stopped=$(pid_of 3) && kill -STOP "$stopped"
for _ in $(seq 1 400); do grep -q "membership 1 at step" "$work/stop.0.log" && break; sleep 0.05; done
[ -n "${stopped:-}" ] && kill -CONT "$stopped"
wait "$hpid0"; rc0=$?; wait "$hpid1"; rc1=$?
why=""
grep -q "rank 3 was left out of membership 1" "$work/stop.1.log" || why="; the stopped rank 3, woken, was not refused by name"
judge "2 hosts x 2 ranks over ucx, rank 3 (host 1) SIGSTOPped at step 10 past the timeout, refused when woken" stop $rc0 $rc1 0 1 yes no "$why"

# cut NAME RESPAWN: the job with host 1's link down for 5 s from step 10; exits in rc0, rc1.
cut() {
  hosts "$1" "$2"
  at_step "$1" 10 && ip -n "$ns1" link set "$veth-1" down
  sleep 5
  ip -n "$ns1" link set "$veth-1" up
  wait "$hpid0"; rc0=$?; wait "$hpid1"; rc1=$?
}

# 3. Host 1's link down for 5 s, then up: host 0 goes on alone; host 1's ranks are refused.
set_steps 60
cut link 0
why=""
grep -q "was left out of membership 1" "$work/link.1.log" || why="; host 1's ranks were not refused by name"
grep -q "no rank of node 1 is left" "$work/link.1.log" || why="$why; host 1's cohortrun did not say why its part ended"
judge "host 1's link down for 5 s at step 10, then up: host 0 went on; host 1 refused, its cohortrun exit 1" link $rc0 $rc1 1 1 yes yes "$why"

# 4. The same, with --elastic-respawn 1: host 1's ranks come back when the link does.
cut grow 1
why=""
# Both in one change ("rank 2 joined; rank 3 joined") or in two.
[ "$(grep -o 'rank [23] joined' "$work/grow.jsonl" 2>/dev/null | sort -u | wc -l)" -eq 2 ] ||
  why="; not both of host 1's ranks rejoined"
joined=$(grep -o "rank [23] joined membership [0-9]* at step [0-9]*: [0-9.]* MB of state.*MB/s over ucx)" "$work/grow.1.log" | head -n1)
judge "host 1's link down for 5 s and up again, --elastic-respawn 1: $joined" grow $rc0 $rc1 0 2-3 no yes "$why"
# 5. The hierarchical communicator (shm on each host, ucx between the hosts' leaders): host 1's
# leader, rank 2, SIGKILLed; the group goes on with a host of 2 and a host of 1.
set_steps 40
comm=hier hosts hier 0
at_step hier "$kill_step" && kill -KILL "$(pid_of 2)"
wait "$hpid0"; rc0=$?; wait "$hpid1"; rc1=$?
judge "hier, 2 hosts x 2 ranks, host 1's leader (rank 2) SIGKILLed at step $kill_step" hier $rc0 $rc1 0 1 yes yes
exit $fail
