#!/usr/bin/env bash
# The hierarchical all-reduce against flat ucx and Open MPI on the shaped two-host testbed (issue
# 32): network namespaces A and B joined by a veth pair shaped with tc tbf to RATE each way (no
# netem here: bandwidth only), 2 ranks per namespace, float32 sum, each op waited for before the
# next (cohort-bench -z 1, MPI_Allreduce in a loop). cohort runs one cohortrun per namespace
# (UCX over TCP on the veth, shm inside a namespace for hier); Open MPI runs one mpirun from A
# with its daemon on B started through a namespace "rsh" agent (btl tcp on the veth, vader
# inside a namespace). The sides alternate ROUNDS times; each cell is the median. Root only.
#
#   bench/hier_compare.sh [BUILD_DIR]      (default build)
# Environment: RATE (default 10gbit), ROUNDS (default 3), SIZES (cohort-bench -b/-e/-f of the
# sweep, default "-b 16 -e 64M -f 4": every power of 4 from 16 B to 64 MiB), ITERS (timed ops per size, default 20).
set -euo pipefail
build=$(cd "${1:-build}" && pwd)
bin=$build/bin
rate=${RATE:-10gbit}
rounds=${ROUNDS:-3}
read -r -a sizes <<< "${SIZES:--b 16 -e 64M -f 4}"
iters=${ITERS:-20}
[ "$(id -u)" -eq 0 ] || { echo "hier_compare.sh: needs root (network namespaces)" >&2; exit 2; }
for b in cohortrun cohort-bench mpi_allreduce_bench; do
  [ -x "$bin/$b" ] || { echo "hier_compare.sh: no $bin/$b" >&2; exit 2; }
done
root=$(cd "$(dirname "$0")/.." && pwd)
. "$root/tests/launch/netns_hosts.sh"
tag=$$ nsA=hcA$$ nsB=hcB$$ net=10.215.$(($$ % 200 + 10))
tmp=$(mktemp -d)
trap 'netns_down "$nsA" "$nsB"; rm -rf "$tmp"' EXIT
netns_up "$nsA" "$nsB" "c$tag" "$net"
tc -n "$nsA" qdisc add dev "c$tag-0" root tbf rate "$rate" burst 4mb latency 50ms
tc -n "$nsB" qdisc add dev "c$tag-1" root tbf rate "$rate" burst 4mb latency 50ms

cat > "$tmp/rsh" <<EOF
#!/bin/sh
host=\$1; shift
case "\$host" in
  $net.1) ns=$nsA; name=hostA ;;
  $net.2) ns=$nsB; name=hostB ;;
  *) exit 255 ;;
esac
# A host name of its own (a UTS namespace), or Open MPI takes both namespaces for one node.
exec ip netns exec "\$ns" unshare --uts /bin/sh -c "hostname \$name; \$*"
EOF
chmod +x "$tmp/rsh"

# One sweep of cohort-bench over two cohortruns; rank 0's rows (size, time us) to stdout.
cohort_side() {
  local comm=$1 port=$2 i ns pids=()
  shift 2
  for i in 0 1; do
    ns=$([ $i = 0 ] && echo "$nsA" || echo "$nsB")
    ip netns exec "$ns" env UCX_TLS=tcp,self UCX_NET_DEVICES="c$tag-$i" OMP_NUM_THREADS=1 \
      "$bin/cohortrun" --nnodes 2 --node-rank $i --nproc-per-node 2 --master-addr "$net.1" \
      --master-port "$port" "$bin/cohort-bench" --comm "$comm" -z 1 "$@" >"$tmp/c.$i" 2>&1 &
    pids+=($!)
  done
  wait "${pids[0]}" "${pids[1]}"
  sed -n 's/^\[rank 0\] *//p' "$tmp/c.0" | awk '$1 ~ /^[0-9]+$/ { print $1, $5 }'
}
mpi_side() {
  ip netns exec "$nsA" unshare --uts sh -c 'hostname hostA; exec "$@"' mpirun \
    mpirun --allow-run-as-root -np 4 --host "$net.1:2,$net.2:2" \
    --mca plm_rsh_agent "$tmp/rsh" --mca oob_tcp_if_include "$net.0/24" \
    --mca btl self,vader,tcp --mca btl_tcp_if_include "$net.0/24" --bind-to none \
    "$bin/mpi_allreduce_bench" -z 1 "$@" >"$tmp/m.log" 2>&1 ||
    { echo "hier_compare.sh: mpirun failed:" >&2; grep -v '^\[' "$tmp/m.log" | head -n 30 >&2; return 1; }
  awk '$1 ~ /^[0-9]+$/ { print $1, $5 }' "$tmp/m.log"
}

for r in $(seq "$rounds"); do
  cohort_side hier $((29700 + r)) "${sizes[@]}" -n "$iters" -w 3 >> "$tmp/hier"
  cohort_side ucx $((29750 + r)) "${sizes[@]}" -n "$iters" -w 3 >> "$tmp/ucx"
  mpi_side "${sizes[@]}" -n "$iters" -w 3 >> "$tmp/mpi"
done

echo "# all-reduce, float32 sum, 2 namespace hosts x 2 ranks, veth shaped by tbf to $rate each way"
echo "# (no added latency: no netem), $(date -u +%F), $(nproc) cores ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//'))"
echo "# $(mpirun --version 2>/dev/null | head -1); each op waited for; median of $rounds alternating rounds; $iters timed ops per size; times in us"
python3 - "$tmp" <<'PY'
import sys, statistics, collections
d = sys.argv[1]
def load(name):
    t = collections.defaultdict(list)
    for line in open(f"{d}/{name}"):
        size, us = line.split()
        t[int(size)].append(float(us))
    return {s: statistics.median(v) for s, v in t.items()}
h, u, m = load("hier"), load("ucx"), load("mpi")
nan = float("nan")
print(f"{'bytes':>10} {'hier':>10} {'ucx':>10} {'Open MPI':>10} {'ucx/hier':>9} {'MPI/hier':>9}")
for s in sorted(h):
    print(f"{s:>10} {h[s]:>10.1f} {u.get(s, nan):>10.1f} {m.get(s, nan):>10.1f} "
          f"{u.get(s, nan) / h[s]:>8.2f}x {m.get(s, nan) / h[s]:>8.2f}x")
PY
