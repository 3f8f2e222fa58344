#!/usr/bin/env bash
# Two hosts on one machine: network namespaces joined by a veth pair (root only). The same 2-rank
# MNIST job, one rank per "host", over ucx restricted to TCP on the veth, launched
#   1. by cohortrun on each host (--nnodes 2 --node-rank {0,1} --master-addr <host 0>), and
#   2. by mpirun from host 0 with Open MPI's own variables (plus -x MASTER_ADDR/PORT for the
#      store), its remote daemon started through a namespace "rsh" agent instead of ssh;
# both end with identical weights and the same digest, each rank provably ran in its own
# namespace; 3. a rank killed mid-run under mpirun ends the job non-zero within 5 s; 4. with
# one cohortrun per host, killing host 1's rank ends host 0's job non-zero within 5 s (the
# survivor notices by itself) and leaves no process behind.
# Traffic stays inside the two namespaces (ucx: UCX_TLS=tcp,self on the veth device).
#
#   test_netns_hosts.sh BIN_DIR        exits 77 with "skipped: why" when it cannot run here
set -uo pipefail
bin=$(cd "$1" && pwd)
skip() { echo "skipped: $*"; exit 77; }
[ "$(id -u)" -eq 0 ] || skip "needs root to create network namespaces"
command -v ip >/dev/null || skip "no ip (Debian: iproute2)"
"$bin/mnist_cnn" --help >/dev/null 2>&1 || skip "no mnist_cnn in $bin"

tag=$$
ns0=cohA$tag ns1=cohB$tag
net=10.213.$((tag % 200 + 10))
a0=$net.1 a1=$net.2
work=$(mktemp -d)
cleanup() {
  netns_down "$ns0" "$ns1"
  [ -n "${KEEP:-}" ] && echo "kept $work" || rm -rf "$work"
}
. "$(dirname "$0")/netns_hosts.sh"
trap cleanup EXIT
netns_up "$ns0" "$ns1" "v$tag" "$net" || skip "could not create network namespaces (ip netns add failed)"
echo "hosts: $ns0 = $a0, $ns1 = $a1"

# Each rank records the namespace it runs in, then becomes mnist_cnn.
cat >"$work/rank.sh" <<EOF
#!/bin/sh
r=\${RANK:-\$OMPI_COMM_WORLD_RANK}
ip netns identify \$\$ > "$work/ns.\$1.\$r"
shift
exec "\$@"
EOF
chmod +x "$work/rank.sh"
job=(--comm ucx --epochs 1 --max-steps 20 --log-interval 1000 --test-batch-size 1000)
digest_of() { sed -n 's/.*identical weights: yes (digest \([0-9a-f]*\)).*/\1/p' "$1" | tail -n1; }
fail=0

# ---- 1. cohortrun on each host ----
for i in 0 1; do
  ns=ns$i; dev=v$tag-$i
  ip netns exec "${!ns}" env OMP_NUM_THREADS=1 UCX_TLS=tcp,self UCX_NET_DEVICES="$dev" \
    "$bin/cohortrun" --nnodes 2 --node-rank $i --master-addr "$a0" --master-port 29613 \
    "$work/rank.sh" cohortrun "$bin/mnist_cnn" "${job[@]}" >"$work/cohortrun.$i.log" 2>&1 &
  eval "pid$i=$!"
done
wait "$pid0"; rc0=$?; wait "$pid1"; rc1=$?
d1=$(digest_of "$work/cohortrun.0.log")
if [ $rc0 -eq 0 ] && [ $rc1 -eq 0 ] && [ -n "$d1" ] &&
   [ "$(cat "$work/ns.cohortrun.0")" = "$ns0" ] && [ "$(cat "$work/ns.cohortrun.1")" = "$ns1" ]; then
  echo "ok    cohortrun --nnodes 2 across two hosts: digest $d1, rank 0 in $ns0, rank 1 in $ns1"
else
  echo "FAIL  cohortrun --nnodes 2: exit $rc0/$rc1, digest '$d1'"; tail -n 5 "$work"/cohortrun.*.log
  fail=1
fi

# ---- 4 (first, mpirun's parts may be skipped). cohortrun on each host; host 1's rank killed ----
# No launcher spans both hosts here: host 0's rank must notice on its own (ucx's keep-alive or
# the broken TCP connection) and its cohortrun must end non-zero within 5 s.
. "$(dirname "$0")/kill_rank.sh"
for i in 0 1; do
  ns=ns$i; dev=v$tag-$i
  ip netns exec "${!ns}" env OMP_NUM_THREADS=1 UCX_TLS=tcp,self UCX_NET_DEVICES="$dev" \
    "$bin/cohortrun" --nnodes 2 --node-rank $i --master-addr "$a0" --master-port 29615 \
    "$bin/mnist_cnn" --comm ucx --epochs 1 --max-steps 100000 --log-interval 1 \
    >"$work/kill2.$i.log" 2>&1 &
  eval "kpid$i=$!"
done
kill_rank_check "cohortrun on two hosts, host 1's rank killed: host 0's job" "$kpid0" \
  "$work/kill2.0.log" RANK || { fail=1; tail -n 3 "$work/kill2.0.log"; }
wait "$kpid1" 2>/dev/null
left=$(own_mnist_pids | tr '\n' ' ')
if [ -n "$left" ]; then
  echo "FAIL  processes left behind after the kill: $left"; fail=1
fi
grep -h "stopped answering\|has that rank exited" "$work/kill2.0.log" | head -n 1 | cut -c1-300

# ---- 2. mpirun from host 0, Open MPI's variables ----
if command -v mpirun >/dev/null; then
  cat >"$work/rsh" <<EOF
#!/bin/sh
# Open MPI's ssh for these two hosts: the host, then the command to run there.
host=\$1; shift
case "\$host" in
  $a0) ns=$ns0 ;;
  $a1) ns=$ns1 ;;
  *) echo "netns rsh: unknown host \$host" >&2; exit 255 ;;
esac
exec ip netns exec "\$ns" /bin/sh -c "\$*"
EOF
  chmod +x "$work/rsh"
  mpi=(mpirun --allow-run-as-root -np 2 --host "$a0:1,$a1:1" --mca plm_rsh_agent "$work/rsh"
       --mca oob_tcp_if_include "$net.0/24" --mca btl self,tcp --mca btl_tcp_if_include "$net.0/24"
       -x MASTER_ADDR="$a0" -x MASTER_PORT=29614 -x UCX_TLS=tcp,self -x OMP_NUM_THREADS=1
       -x COHORT_TEST_JOB)
  timeout 300 ip netns exec "$ns0" "${mpi[@]}" "$work/rank.sh" mpirun "$bin/mnist_cnn" "${job[@]}" \
    >"$work/mpirun.log" 2>&1
  rc=$?
  d2=$(digest_of "$work/mpirun.log")
  if [ $rc -eq 0 ] && [ "$d2" = "$d1" ] &&
     [ "$(cat "$work/ns.mpirun.0")" = "$ns0" ] && [ "$(cat "$work/ns.mpirun.1")" = "$ns1" ]; then
    echo "ok    mpirun across two hosts: digest $d2 (= cohortrun's), rank 0 in $ns0, rank 1 in $ns1"
  else
    echo "FAIL  mpirun across two hosts: exit $rc, digest '$d2' (cohortrun: '$d1')"
    tail -n 5 "$work/mpirun.log"; fail=1
  fi

  # ---- 3. a rank killed mid-run ----
  ip netns exec "$ns0" "${mpi[@]}" "$bin/mnist_cnn" --comm ucx --epochs 1 --max-steps 100000 \
    --log-interval 1 >"$work/kill.log" 2>&1 &
  kill_rank_check "mpirun across two hosts" $! "$work/kill.log" OMPI_COMM_WORLD_RANK || fail=1
else
  echo "skipped: mpirun parts (no mpirun; Debian: openmpi-bin)"
fi
exit $fail
