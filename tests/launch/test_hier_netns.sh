#!/usr/bin/env bash
# The hierarchical communicator across two hosts that behave like a network (issue 32): network
# namespaces A and B joined by a veth pair shaped with tc's token bucket (tbf) to RATE (default
# 10gbit) each way, two ranks on each. The MNIST CNN, 20 steps in DDP's deterministic mode, ends
# with one digest
#   1. over hier (shm inside each namespace, ucx over the veth between the leaders),
#   2. over flat ucx across the same namespaces,
#   3. on one host, 4 ranks over shm,
# and 4. with no --comm at all ("auto") the job picks hier by itself; then 5. four namespace hosts
# x 2 ranks on one bridge (netns_up_star, each cable shaped both ways) over hier end with the
# digest of 8 ranks on one host over shm (the leaders' exchange among 4 hosts). Each namespace
# counts as a host (host key: host name, boot id and network namespace); COHORT_HIER_LOG=1 prints
# the map.
# netem (delay) is not in every kernel (not in this VM's): the testbed shapes bandwidth only and
# says so.
#
#   test_hier_netns.sh BIN_DIR [RATE]      exits 77 with "skipped: why" when it cannot run here
set -uo pipefail
bin=$(cd "$1" && pwd)
rate=${2:-10gbit}
skip() { echo "skipped: $*"; exit 77; }
[ "$(id -u)" -eq 0 ] || skip "needs root to create network namespaces"
command -v ip >/dev/null || skip "no ip (Debian: iproute2)"
command -v tc >/dev/null || skip "no tc (Debian: iproute2)"
grep -q -- "hier" < <("$bin/mnist_cnn" --help 2>/dev/null) || skip "this build has no hier backend (no UCX)"

tag=$$
nsA=hierA$tag nsB=hierB$tag
net=10.214.$((tag % 200 + 10))
sw=hierS$tag ns4=(hierC$tag hierD$tag hierE$tag hierF$tag)
net4=10.213.$((tag % 200 + 10))
aA=$net.1
work=$(mktemp -d)
. "$(dirname "$0")/netns_hosts.sh"
burst=$(tbf_burst "$rate")
cleanup() {
  netns_down "$nsA" "$nsB" "${ns4[@]}" "$sw"
  [ -n "${KEEP:-}" ] && echo "kept $work" || rm -rf "$work"
}
trap cleanup EXIT
netns_up "$nsA" "$nsB" "h$tag" "$net" || skip "could not create network namespaces (ip netns add failed)"
for i in A B; do
  ns=ns$i; dev=h$tag-$([ $i = A ] && echo 0 || echo 1)
  tc -n "${!ns}" qdisc add dev "$dev" root tbf rate "$rate" burst "$burst" latency 50ms ||
    skip "tc could not shape $dev with tbf"
done
echo "hosts: $nsA = $aA, $nsB = $net.2; veth shaped: $(tc -n "$nsA" qdisc show dev "h$tag-0" | head -n1)"
if ! tc -n "$nsA" qdisc add dev lo root netem delay 25us 2>/dev/null; then
  echo "note: no netem in this kernel; the link is shaped in bandwidth only (no added latency)"
else
  tc -n "$nsA" qdisc del dev lo root
fi

digest_of() { sed -n 's/.*identical weights: yes (digest \([0-9a-f]*\)).*/\1/p' "$1" | tail -n1; }
# The jobs' data (launch_data.py): the same training split, gunzipped once; a tenth of the test
# split, which only the closing evaluation reads.
data=$(python3 "$(dirname "$0")/launch_data.py" /usr/share/datasets/fashion-mnist "$work/data") ||
  data=/usr/share/datasets/fashion-mnist
job=(--deterministic --epochs 1 --max-steps 20 --log-interval 1000 --test-batch-size 1000
     --data "$data")
fail=0

# Two cohortruns, one per host, 2 ranks each; $1 names the run, the rest goes to mnist_cnn.
two_hosts() {
  local name=$1 port=$2 i ns dev pids=()
  shift 2
  for i in 0 1; do
    ns=$([ $i = 0 ] && echo "$nsA" || echo "$nsB"); dev=h$tag-$i
    ip netns exec "$ns" env OMP_NUM_THREADS=1 UCX_TLS=tcp,self UCX_NET_DEVICES="$dev" \
      COHORT_HIER_LOG=1 timeout 240 "$bin/cohortrun" --nnodes 2 --node-rank $i --nproc-per-node 2 \
      --master-addr "$aA" --master-port "$port" "$bin/mnist_cnn" "${job[@]}" "$@" \
      >"$work/$name.$i.log" 2>&1 &
    pids+=($!)
  done
  wait "${pids[0]}"; local rc0=$?
  wait "${pids[1]}"; local rc1=$?
  [ $rc0 -eq 0 ] && [ $rc1 -eq 0 ]
}

two_hosts hier 29631 --comm hier; rc=$?
dH=$(digest_of "$work/hier.0.log")
layout=$(sed -n 's/.*cohort hier: //p' "$work/hier.0.log" | head -n1)
if [ $rc -eq 0 ] && [ -n "$dH" ] && [[ "$layout" == "2 hosts: host 0 = ranks 0 1"*"host 1 = ranks 2 3"* ]]; then
  echo "ok    hier across the two hosts: digest $dH ($layout)"
else
  echo "FAIL  hier across the two hosts: exit $rc, digest '$dH', layout '$layout'"
  tail -n 5 "$work"/hier.*.log; fail=1
fi

two_hosts ucx 29632 --comm ucx; rc=$?
dU=$(digest_of "$work/ucx.0.log")
if [ $rc -eq 0 ] && [ -n "$dU" ] && [ "$dU" = "$dH" ]; then
  echo "ok    flat ucx across the same hosts: digest $dU (= hier's)"
else
  echo "FAIL  flat ucx across the same hosts: exit $rc, digest '$dU' (hier: '$dH')"
  tail -n 5 "$work"/ucx.*.log; fail=1
fi

OMP_NUM_THREADS=1 timeout 240 "$bin/cohortrun" --nproc-per-node 4 --master-port 0 \
  "$bin/mnist_cnn" "${job[@]}" --comm shm >"$work/one.log" 2>&1; rc=$?
dS=$(digest_of "$work/one.log")
if [ $rc -eq 0 ] && [ "$dS" = "$dH" ]; then
  echo "ok    one host, 4 ranks over shm: digest $dS (= hier's)"
else
  echo "FAIL  one host, 4 ranks over shm: exit $rc, digest '$dS' (hier: '$dH')"
  tail -n 5 "$work/one.log"; fail=1
fi

two_hosts auto 29633; rc=$?
picked=$(sed -n 's/.*| 4 ranks (\([a-z]*\)).*/\1/p' "$work/auto.0.log" | head -n1)
if [ $rc -eq 0 ] && [ "$picked" = hier ] && [ "$(digest_of "$work/auto.0.log")" = "$dH" ]; then
  echo "ok    no --comm: auto picked hier for 2 hosts x 2 ranks"
else
  echo "FAIL  no --comm: exit $rc, picked '$picked'"; tail -n 5 "$work"/auto.*.log; fail=1
fi

# 5. Four hosts x 2 ranks: 8 ranks on this machine's cores, which no namespace host can see, so
# every wait yields (COHORT_YIELD_WHEN_IDLE=1).
if ! netns_up_star "$sw" "q$tag" "$net4" "${ns4[@]}" ||
   ! netns_shape_star "$sw" "q$tag" "$rate" "$burst" "${ns4[@]}"; then
  echo "FAIL  could not build the 4-host testbed"; exit 1
fi
pids=()
for i in 0 1 2 3; do
  ip netns exec "${ns4[$i]}" env OMP_NUM_THREADS=1 UCX_TLS=tcp,self UCX_NET_DEVICES="q$tag-$i" \
    COHORT_YIELD_WHEN_IDLE=1 COHORT_HIER_LOG=1 timeout 240 "$bin/cohortrun" --nnodes 4 \
    --node-rank $i --nproc-per-node 2 --master-addr "$net4.1" --master-port 29634 \
    "$bin/mnist_cnn" "${job[@]}" --comm hier >"$work/four.$i.log" 2>&1 &
  pids+=($!)
done
rc=0
for p in "${pids[@]}"; do wait "$p" || rc=$?; done
d4=$(digest_of "$work/four.0.log")
layout=$(sed -n 's/.*cohort hier: //p' "$work/four.0.log" | head -n1)
OMP_NUM_THREADS=1 timeout 240 "$bin/cohortrun" --nproc-per-node 8 --master-port 0 \
  "$bin/mnist_cnn" "${job[@]}" --comm shm >"$work/one8.log" 2>&1; rc8=$?
d8=$(digest_of "$work/one8.log")
if [ $rc -eq 0 ] && [ $rc8 -eq 0 ] && [ -n "$d4" ] && [ "$d4" = "$d8" ] &&
   [[ "$layout" == "4 hosts: "*"host 3 = ranks 6 7"* ]]; then
  echo "ok    hier across 4 hosts x 2 ranks on one bridge: digest $d4 (= 8 ranks on one host over shm; $layout)"
else
  echo "FAIL  hier across 4 hosts: exit $rc, digest '$d4'; one host, 8 ranks: exit $rc8, digest '$d8'; layout '$layout'"
  tail -n 5 "$work"/four.*.log "$work/one8.log"; fail=1
fi
exit $fail
