#!/usr/bin/env bash
# DDP across shaped hosts against one host (issue 32's "DDP 4 ranks on 2 shaped hosts: images/s at
# least 0.9x of 4 ranks on one host"): the MNIST CNN, 4 ranks x 1 thread, default DDP (25 MiB
# buckets, first 1 MiB), STEPS steps of 64 per rank,
#   two:  network namespaces A and B (2 ranks each) joined by a veth pair shaped with tc tbf to
#         RATE each way (bucket: tbf_burst), one cohortrun per namespace, hier (the backend auto
#         picks there: shm inside a namespace, ucx over TCP on the veth between the leaders);
#   one:  the same job on one host, 4 ranks over shm.
# The two alternate ROUNDS times; the figure is the median of mnist_cnn's "training throughput"
# (images/s over all ranks, the evaluation excluded). Root only.
#
#   bench/hier_ddp.sh [BUILD_DIR]     RATE (10gbit), ROUNDS (3), STEPS (300), MODEL (mnist: the
#                                     MNIST CNN; resnet9: cifar_cnn --model resnet9 on Fashion-MNIST)
set -euo pipefail
# shellcheck source=bench/cpu_line.sh
. "$(dirname "$0")/cpu_line.sh"  # the CPU the figures come from
build=$(cd "${1:-build}" && pwd)
bin=$build/bin
rate=${RATE:-10gbit}
rounds=${ROUNDS:-3}
steps=${STEPS:-300}
model=${MODEL:-mnist}
[ "$(id -u)" -eq 0 ] || { echo "hier_ddp.sh: needs root (network namespaces)" >&2; exit 2; }
case "$model" in
  mnist) job=("$bin/mnist_cnn" --epochs 1 --max-steps "$steps" --log-interval 100000 --test-batch-size 1000) ;;
  resnet9) job=("$bin/cifar_cnn" --model resnet9 --dataset fashion-mnist --epochs 1 --max-steps "$steps"
                --log-interval 100000) ;;
  *) echo "hier_ddp.sh: MODEL='$model' is not mnist or resnet9" >&2; exit 2 ;;
esac
for b in cohortrun "$(basename "${job[0]}")"; do
  [ -x "$bin/$b" ] || { echo "hier_ddp.sh: no $bin/$b" >&2; exit 2; }
done
root=$(cd "$(dirname "$0")/.." && pwd)
. "$root/tests/launch/netns_hosts.sh"
tag=$$ nsA=hdA$$ nsB=hdB$$ net=10.216.$(($$ % 200 + 10))
burst=$(tbf_burst "$rate")
tmp=$(mktemp -d)
trap 'netns_down "$nsA" "$nsB"; rm -rf "$tmp"' EXIT
netns_up "$nsA" "$nsB" "d$tag" "$net"
tc -n "$nsA" qdisc add dev "d$tag-0" root tbf rate "$rate" burst "$burst" latency 50ms
tc -n "$nsB" qdisc add dev "d$tag-1" root tbf rate "$rate" burst "$burst" latency 50ms

ips() { sed -n 's/.*training throughput: \([0-9.]*\) images\/s.*/\1/p' "$1" | tail -n1; }
two_hosts() {  # PORT: prints images/s
  local i ns pids=()
  for i in 0 1; do
    ns=$([ $i = 0 ] && echo "$nsA" || echo "$nsB")
    # Yield when idle, as the one-host run does by itself (4 ranks on 2 cores): each namespace
    # sees only its own 2 ranks (COHORT_YIELD_WHEN_IDLE, docs/COLLECTIVES.md).
    ip netns exec "$ns" env OMP_NUM_THREADS=1 UCX_TLS=tcp,self UCX_NET_DEVICES="d$tag-$i" \
      COHORT_YIELD_WHEN_IDLE="${COHORT_YIELD_WHEN_IDLE-1}" \
      "$bin/cohortrun" --nnodes 2 --node-rank $i --nproc-per-node 2 --master-addr "$net.1" \
      --master-port "$1" "${job[@]}" >"$tmp/two.$i.log" 2>&1 &
    pids+=($!)
  done
  wait "${pids[0]}" "${pids[1]}" || { tail -n 20 "$tmp"/two.*.log >&2; return 1; }
  grep -q '| 4 ranks (hier)' "$tmp/two.0.log" ||
    { echo "hier_ddp.sh: the two-host job did not run on hier:" >&2; grep -m3 'ranks (' "$tmp/two.0.log" >&2; return 1; }
  ips "$tmp/two.0.log"
}
one_host() {
  OMP_NUM_THREADS=1 "$bin/cohortrun" --nproc-per-node 4 --master-port 0 "${job[@]}" --comm shm \
    >"$tmp/one.log" 2>&1 || { tail -n 20 "$tmp/one.log" >&2; return 1; }
  ips "$tmp/one.log"
}
two=() one=()
for r in $(seq "$rounds"); do
  two+=("$(two_hosts $((29900 + r)))")
  one+=("$(one_host)")
  echo "round $r: two shaped hosts ${two[-1]} images/s, one host ${one[-1]} images/s" >&2
done
echo "# DDP, $model, 4 ranks x 1 thread, $steps steps of 64 per rank; 2 namespace hosts x 2 ranks (hier)"
echo "# over a veth shaped by tbf to $rate each way (bucket $burst B, no netem) against 1 host x 4 ranks (shm)"
echo "# $(date -u +%F), $(nproc) cores ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')); median of $rounds alternating rounds"
python3 - "${two[*]}" "${one[*]}" <<'PY'
import statistics, sys
two = [float(x) for x in sys.argv[1].split()]
one = [float(x) for x in sys.argv[2].split()]
print(f"two shaped hosts (hier): {' '.join(f'{x:.1f}' for x in two)}  median {statistics.median(two):.1f} images/s")
print(f"one host (shm):          {' '.join(f'{x:.1f}' for x in one)}  median {statistics.median(one):.1f} images/s")
print(f"ratio two/one: {statistics.median(two) / statistics.median(one):.3f} (target 0.9)")
PY
