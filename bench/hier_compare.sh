#!/usr/bin/env bash
# The hierarchical all-reduce against flat ucx and Open MPI on the shaped multi-host testbed (issue
# 32): HOSTS network namespaces (2) plugged into one bridge, each host's veth shaped with tc tbf to
# RATE each way (upload at the host's end, download at the switch's; no netem here: bandwidth
# only), PER_HOST ranks per namespace (2), float32 sum, each op waited for before the next
# (cohort-bench -z 1, MPI_Allreduce in a loop). cohort runs one cohortrun per namespace (UCX over
# TCP on the veth, shm inside a namespace for hier); Open MPI runs one mpirun from host 0 with its
# daemons on the others started through a namespace "rsh" agent (btl tcp on the veth, vader
# inside a namespace). The sides alternate ROUNDS times; each cell is the median. Root only.
# (Before 2026-11-27's third session the two hosts were one veth pair shaped at both ends, no
# bridge: the tables in docs/benchmarks/multihost.md before that date ran so.)
#
#   bench/hier_compare.sh [BUILD_DIR]      (default build)
# With MODEL=1 it first calibrates the cost model (cohort-bench --calibrate on hier: the links
# and hier_op_us; then --calibrate-op on ucx forced to rd, ring and rab: each one's op term
# against the same links), also runs flat
# ucx with each of its algorithms forced (COHORT_UCX_ALLREDUCE=ring, rd, rab), and prints a second
# table: every algorithm's measured time against the model's prediction, the error, the model's
# pick and the measured best, flagging a pick over 10% above the best.
# Environment: RATE (default 10gbit), HOSTS (default 2), PER_HOST (ranks per host, default 2), ROUNDS
# (default 3), SIZES (cohort-bench -b/-e/-f of the sweep, default "-b 16 -e 64M -f 4": every
# power of 4 from 16 B to 64 MiB), ITERS (timed ops per size, default 20), SMALL_ITERS (below),
# BURST (tbf's bucket in bytes, default tbf_burst), MPI_ARGS (extra mpirun arguments) and
# COHORT_YIELD_WHEN_IDLE
# (defaults: --mca mpi_yield_when_idle 1 and 1 when there are more ranks than cores, else none).
set -euo pipefail
# shellcheck source=bench/cpu_line.sh
. "$(dirname "$0")/cpu_line.sh"  # the CPU the figures come from
build=$(cd "${1:-build}" && pwd)
bin=$build/bin
rate=${RATE:-10gbit}
# tbf's bucket: tbf_burst (tests/launch/netns_hosts.sh: 200 us of the rate, at least 16 KiB);
# BURST overrides, in bytes.
rounds=${ROUNDS:-3}
per_host=${PER_HOST:-2}
hosts=${HOSTS:-2}
# More ranks than cores in all: both sides' waits give the core away when idle (Open MPI's
# mpi_yield_when_idle, cohort's COHORT_YIELD_WHEN_IDLE). Each namespace host sees every core and
# only its own ranks, so neither can tell by itself; spinning there starves the other hosts'
# ranks (2 x 2 ranks at 10 Gbit/s, 16 B: Open MPI 7.1 ms spinning, 37 us yielding). MPI_ARGS
# and COHORT_YIELD_WHEN_IDLE replace these.
if [ $((hosts * per_host)) -gt "$(nproc)" ]; then
  def_mpi_args="--mca mpi_yield_when_idle 1" def_yield=1
else
  def_mpi_args="" def_yield=""
fi
read -r -a mpi_args <<< "${MPI_ARGS-$def_mpi_args}"
yield=${COHORT_YIELD_WHEN_IDLE-$def_yield}
read -r -a sizes <<< "${SIZES:--b 16 -e 64M -f 4}"
iters=${ITERS:-20}
# SMALL_ITERS (default ITERS): timed ops per size up to 64 KiB. A small all-reduce on shared cores
# is scheduling, and 10 ops of it swing 2x; more ops steady it. The sweep then runs as two
# launches, 16 B-64 KiB and 256 KiB-64 MiB (the default SIZES only).
small_iters=${SMALL_ITERS:-$iters}
if [ "$small_iters" != "$iters" ] && [ -n "${SIZES:-}" ]; then
  echo "hier_compare.sh: SMALL_ITERS splits the default sweep; unset SIZES" >&2; exit 2
fi
[ "$(id -u)" -eq 0 ] || { echo "hier_compare.sh: needs root (network namespaces)" >&2; exit 2; }
for b in cohortrun cohort-bench mpi_allreduce_bench; do
  [ -x "$bin/$b" ] || { echo "hier_compare.sh: no $bin/$b" >&2; exit 2; }
done
root=$(cd "$(dirname "$0")/.." && pwd)
. "$root/tests/launch/netns_hosts.sh"
burst=${BURST:-$(tbf_burst "$rate")}
tag=$$ net=10.215.$(($$ % 200 + 10)) sw=hcS$$
ns=()
for i in $(seq 0 $((hosts - 1))); do ns+=("hc$i.$$"); done
tmp=$(mktemp -d)
trap 'netns_down "$sw" "${ns[@]}"; rm -rf "$tmp"' EXIT
netns_up_star "$sw" "c$tag" "$net" "${ns[@]}"
netns_shape_star "$sw" "c$tag" "$rate" "$burst" "${ns[@]}"

{
  echo '#!/bin/sh'
  echo 'host=$1; shift'
  echo 'case "$host" in'
  for i in $(seq 0 $((hosts - 1))); do echo "  $net.$((i + 1))) ns=${ns[$i]}; name=host$i ;;"; done
  echo '  *) exit 255 ;;'
  echo 'esac'
  echo '# A host name of its own (a UTS namespace), or Open MPI takes all namespaces for one node.'
  echo 'exec ip netns exec "$ns" unshare --uts /bin/sh -c "hostname $name; $*"'
} > "$tmp/rsh"
chmod +x "$tmp/rsh"

# One sweep of cohort-bench over two cohortruns. Rank 0's rows (size, time us) to stdout.
cohort_side() {
  local comm=$1 port=$2 i pids=() rc=0
  shift 2
  for i in $(seq 0 $((hosts - 1))); do
    ip netns exec "${ns[$i]}" env UCX_TLS=tcp,self UCX_NET_DEVICES="c$tag-$i" OMP_NUM_THREADS=1 \
      COHORT_UCX_ALLREDUCE="${COHORT_UCX_ALLREDUCE:-auto}" COHORT_YIELD_WHEN_IDLE="$yield" \
      "$bin/cohortrun" --nnodes "$hosts" --node-rank $i --nproc-per-node "$per_host" --master-addr "$net.1" \
      --master-port "$port" "$bin/cohort-bench" --comm "$comm" -z 1 "$@" >"$tmp/c.$i" 2>&1 &
    pids+=($!)
  done
  for i in "${pids[@]}"; do wait "$i" || rc=1; done
  [ $rc = 0 ] ||
    { echo "hier_compare.sh: cohort-bench --comm $comm failed:" >&2; tail -n 15 "$tmp"/c.* >&2; return 1; }
  # size, time, then (with --model) ring rd rab hier pick
  sed -n 's/^\[rank 0\] *//p' "$tmp/c.0" | awk '$1 ~ /^[0-9]+$/ {
    printf "%s %s", $1, $5; for (i = 9; i <= NF; ++i) printf " %s", $i; printf "\n" }'
}
mpi_side() {
  local hostlist i
  hostlist=$(for i in $(seq 1 "$hosts"); do printf "%s" "$net.$i:$per_host,"; done)
  ip netns exec "${ns[0]}" unshare --uts sh -c 'hostname host0; exec "$@"' mpirun \
    mpirun --allow-run-as-root -np $((hosts * per_host)) --host "${hostlist%,}" \
    --mca plm_rsh_agent "$tmp/rsh" --mca oob_tcp_if_include "$net.0/24" \
    --mca btl self,vader,tcp --mca btl_tcp_if_include "$net.0/24" --bind-to none "${mpi_args[@]}" \
    "$bin/mpi_allreduce_bench" -z 1 "$@" >"$tmp/m.log" 2>&1 ||
    { echo "hier_compare.sh: mpirun failed:" >&2; grep -v '^\[' "$tmp/m.log" | head -n 30 >&2; return 1; }
  awk '$1 ~ /^[0-9]+$/ { print $1, $5 }' "$tmp/m.log"
}

# The size sweep of one side (cohort_side COMM PORT, or mpi_side), split by SMALL_ITERS.
sweep() {
  if [ "$small_iters" = "$iters" ]; then "$@" "${sizes[@]}" -n "$iters" -w 3; return; fi
  "$@" -b 16 -e 64K -f 4 -n "$small_iters" -w 3 || return
  if [ "$1" = cohort_side ]; then set -- "$1" "$2" $(($3 + 1000)) "${@:4}"; fi
  "$@" -b 256K -e 64M -f 4 -n "$iters" -w 3
}

model=()
if [ "${MODEL:-0}" = 1 ]; then
  cohort_side hier 29698 --calibrate "$tmp/model.txt" > /dev/null
  COHORT_UCX_ALLREDUCE=rd cohort_side ucx 29697 --calibrate-op "$tmp/model.txt" > /dev/null
  COHORT_UCX_ALLREDUCE=ring cohort_side ucx 29696 --calibrate-op "$tmp/model.txt" > /dev/null
  COHORT_UCX_ALLREDUCE=rab cohort_side ucx 29699 --calibrate-op "$tmp/model.txt" > /dev/null
  cp "$tmp/c.0" "$tmp/calibrate.log"
  model=(--model "$tmp/model.txt")
fi
for r in $(seq "$rounds"); do
  sweep cohort_side hier $((29700 + r)) "${model[@]}" >> "$tmp/hier"
  sweep cohort_side ucx $((29750 + r)) "${model[@]}" >> "$tmp/ucx"
  if [ ${#model[@]} -gt 0 ]; then
    COHORT_UCX_ALLREDUCE=ring sweep cohort_side ucx $((29800 + r)) >> "$tmp/ring"
    COHORT_UCX_ALLREDUCE=rd sweep cohort_side ucx $((29850 + r)) >> "$tmp/rd"
    COHORT_UCX_ALLREDUCE=rab sweep cohort_side ucx $((29900 + r)) >> "$tmp/rab"
  fi
  sweep mpi_side >> "$tmp/mpi"
done

echo "# all-reduce, float32 sum, $hosts namespace hosts x $per_host ranks on one bridge, each host's veth shaped by tbf to $rate each way (bucket $burst B)"
echo "# (no added latency: no netem), $(date -u +%F), $(nproc) cores ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//'))"
echo "# $(mpirun --version 2>/dev/null | head -1) ${mpi_args[*]}; cohort COHORT_YIELD_WHEN_IDLE=${yield:-auto}; each op waited for; median of $rounds alternating rounds; $iters timed ops per size$([ "$small_iters" = "$iters" ] || echo " ($small_iters up to 64 KiB)"); times in us"
python3 - "$tmp" <<'PY'
import os, sys, statistics, collections
d = sys.argv[1]
pred = {}  # size -> (ring, rd, rab, hier, pick): the model's columns, the same on every row
def load(name):
    t = collections.defaultdict(list)
    for line in open(f"{d}/{name}"):
        f = line.split()
        t[int(f[0])].append(float(f[1]))
        if len(f) == 7:
            pred[int(f[0])] = tuple(float(x) for x in f[2:6]) + (f[6],)
    return {s: statistics.median(v) for s, v in t.items()}
h, u, m = load("hier"), load("ucx"), load("mpi")
nan = float("nan")
print(f"{'bytes':>10} {'hier':>10} {'ucx':>10} {'Open MPI':>10} {'ucx/hier':>9} {'MPI/hier':>9}")
for s in sorted(h):
    print(f"{s:>10} {h[s]:>10.1f} {u.get(s, nan):>10.1f} {m.get(s, nan):>10.1f} "
          f"{u.get(s, nan) / h[s]:>8.2f}x {m.get(s, nan) / h[s]:>8.2f}x")
if pred:
    r, d2, rb = load("ring"), load("rd"), load("rab")
    print()
    print("# the cost model (" + open(f"{d}/model.txt").read().splitlines()[0].lstrip("# ") + ")")
    for line in open(f"{d}/model.txt"):
        if not line.startswith("#"):
            print("#   " + line.strip())
    print("# predicted against measured (us) per algorithm; err = |predicted - measured| / measured;")
    print("# ring, rd and rab are flat ucx forced (COHORT_UCX_ALLREDUCE), hier is hier's stages; the")
    print("# pick is the model's among the four; WRONG: its measured time is over 10% above the best")
    print(f"{'bytes':>10}" + "".join(f" {a:>9} {'pred':>9} {'err':>4} " for a in ("hier", "ring", "rd", "rab"))
          + f"{'pick':>5} {'best':>5}")
    errs, wrong, cells = [], 0, 0
    for s in sorted(h):
        ring_p, rd_p, rab_p, hh_p, _ = pred[s]
        meas = {"hier": h[s], "ring": r.get(s, nan), "rd": d2.get(s, nan), "rab": rb.get(s, nan)}
        prd = {"hier": hh_p, "ring": ring_p, "rd": rd_p, "rab": rab_p}
        pick = min(prd, key=prd.get)
        best = min(meas, key=meas.get)
        cell = []
        for a in ("hier", "ring", "rd", "rab"):
            e = abs(prd[a] - meas[a]) / meas[a]
            errs.append(e)
            cell.append(f"{meas[a]:>9.1f} {prd[a]:>9.1f} {e:>4.0%}" + ("!" if e > 0.35 else " "))
        bad = meas[pick] > 1.1 * meas[best]
        wrong += bad
        cells += 1
        print(f"{s:>10} " + " ".join(cell) + f" {pick:>5} {best:>5}" + ("  WRONG PICK" if bad else ""))
    over = sum(e > 0.35 for e in errs)
    print(f"# median error {statistics.median(errs):.0%}, worst {max(errs):.0%}, {over} of {len(errs)} "
          f"predictions over 35% (marked !); {wrong} of {cells} picks wrong "
          f"({(cells - wrong) / cells:.0%} right)")
PY
