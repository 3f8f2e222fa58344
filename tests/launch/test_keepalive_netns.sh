#!/usr/bin/env bash
# The ucx keep-alive on a saturated slow link (issue 32): two network-namespace hosts x 4 ranks,
# the veth shaped by tc tbf to 1 Gbit/s each way, flat ucx forced to recursive doubling, whose
# cross-host step has all 4 ranks of a host send 64 MiB at once: 2.1 s of wire time each.
#   1. 64 MiB all-reduces with the default keep-alive limit (COHORT_PEER_TIMEOUT_MS unset: 2 s)
#      complete: no live rank is presumed dead. Before keep-alives had endpoints of their own
#      (collectives/ucx/liveness.cpp), a pong queued behind 64 MiB of data on the same connection
#      and this failed every time (5 runs of 5, 2026-11-27).
#   2. The same load with one rank SIGSTOPped: the job still fails within seconds, naming that
#      rank's pid, so the separate endpoints did not blind the keep-alive.
#
#   test_keepalive_netns.sh BIN_DIR      exits 77 with "skipped: why" when it cannot run here
set -uo pipefail
bin=$(cd "$1" && pwd)
skip() { echo "skipped: $*"; exit 77; }
[ "$(id -u)" -eq 0 ] || skip "needs root to create network namespaces"
command -v ip >/dev/null || skip "no ip (Debian: iproute2)"
command -v tc >/dev/null || skip "no tc (Debian: iproute2)"
[ -x "$bin/cohort-bench" ] || skip "no cohort-bench in $bin"
grep -q -- "ucx" < <("$bin/mnist_cnn" --help 2>/dev/null) || skip "this build has no ucx backend"

tag=$$
nsA=kaA$tag nsB=kaB$tag
net=10.216.$((tag % 200 + 10))
work=$(mktemp -d)
. "$(dirname "$0")/netns_hosts.sh"
cleanup() {
  netns_down "$nsA" "$nsB"
  [ -n "${KEEP:-}" ] && echo "kept $work" || rm -rf "$work"
}
trap cleanup EXIT
netns_up "$nsA" "$nsB" "k$tag" "$net" || skip "could not create network namespaces (ip netns add failed)"
burst=$(tbf_burst 1gbit)
for i in 0 1; do
  ns=$([ $i = 0 ] && echo "$nsA" || echo "$nsB")
  tc -n "$ns" qdisc add dev "k$tag-$i" root tbf rate 1gbit burst "$burst" latency 50ms ||
    skip "tc could not shape k$tag-$i with tbf"
done
echo "hosts: $nsA = $net.1, $nsB = $net.2, 4 ranks each; veth: $(tc -n "$nsA" qdisc show dev "k$tag-0" | head -n1)"

# Starts one cohortrun per host in the background (pids in $pids); logs $work/NAME.{0,1}.log.
pids=()
start_job() {
  local name=$1 port=$2 i ns
  shift 2
  pids=()
  for i in 0 1; do
    ns=$([ $i = 0 ] && echo "$nsA" || echo "$nsB")
    ip netns exec "$ns" env -u COHORT_PEER_TIMEOUT_MS OMP_NUM_THREADS=1 UCX_TLS=tcp,self \
      UCX_NET_DEVICES="k$tag-$i" COHORT_UCX_ALLREDUCE=rd COHORT_TEST_JOB="keepalive.$tag" \
      timeout 120 "$bin/cohortrun" --nnodes 2 --node-rank $i --nproc-per-node 4 \
      --master-addr "$net.1" --master-port "$port" \
      "$bin/cohort-bench" --comm ucx -z 1 -b 64M -e 64M "$@" >"$work/$name.$i.log" 2>&1 &
    pids+=($!)
  done
}
wait_job() {
  wait "${pids[0]}"; local rc0=$?
  wait "${pids[1]}"; local rc1=$?
  [ $rc0 -eq 0 ] && [ $rc1 -eq 0 ]
}
fail=0

start_job busy 29641 -n 3 -w 1
t0=$(date +%s.%N)
wait_job; rc=$?
dt=$(python3 -c "print(f'{$(date +%s.%N) - $t0:.1f}')")
if [ $rc -eq 0 ] && ! grep -q "presumed dead" "$work"/busy.*.log; then
  ms=$(sed -n 's/^\[rank 0\] *67108864 .* sum *\([0-9]*\)[0-9][0-9][0-9]\.[0-9]* .*/\1/p' "$work/busy.0.log")
  echo "ok    4 all-reduces of 64 MiB over the saturated link, default keep-alive: all done (${ms} ms each, ${dt} s in all)"
else
  echo "FAIL  64 MiB all-reduces over the saturated link: exit $rc after ${dt} s"
  grep -h "presumed\|error\|failed" "$work"/busy.*.log | head -n 5; fail=1
fi

# A rank that stops (SIGSTOP: alive to the kernel, silent to its peers) under the same load.
start_job stopped 29642 -n 100000 -w 1
victim=""
for _ in $(seq 1 150); do
  grep -q "#wrong" "$work/stopped.0.log" 2>/dev/null && break  # the table's header: setup done
  sleep 0.2
done
sleep 3  # inside the warm-up or the timed loop
for p in $(ip netns pids "$nsB"); do
  [ "$(cat "/proc/$p/comm" 2>/dev/null)" = cohort-bench ] || continue
  grep -qx "RANK=5" < <({ tr '\0' '\n' <"/proc/$p/environ"; } 2>/dev/null) && { victim=$p; break; }
done
if [ -z "$victim" ]; then
  echo "FAIL  no rank 5 cohort-bench process found in $nsB"; fail=1
  kill -9 "${pids[@]}" 2>/dev/null
else
  kill -STOP "$victim"
  t0=$(date +%s.%N)
  wait_job; rc=$?
  dt=$(python3 -c "print(f'{$(date +%s.%N) - $t0:.1f}')")
  line=$(grep -h "pid $victim) stopped answering" "$work"/stopped.*.log | head -n1)
  if [ $rc -ne 0 ] && [ -n "$line" ] && python3 -c "import sys; sys.exit(0 if $dt < 30 else 1)"; then
    echo "ok    rank 5 (pid $victim) SIGSTOPped under the same load: the job failed ${dt} s later, naming it"
    echo "      ${line:0:220}"
  else
    echo "FAIL  rank 5 (pid $victim) SIGSTOPped: exit $rc after ${dt} s; a line naming it: '${line:0:200}'"
    tail -n 4 "$work"/stopped.*.log; fail=1
  fi
  kill -9 "$victim" 2>/dev/null
fi
exit $fail
