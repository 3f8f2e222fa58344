# A single-node Slurm on this host from Debian's packages (slurm-wlm, munge), for the launcher test
# (tests/launch/test_slurm.sh) and benchmark (bench/launchers.sh). Source it, then:
#
#   slurm_up DIR     munged, slurmctld and slurmd with their key, config, state, pids and logs in
#                    DIR; exports SLURM_CONF; returns once the node is idle. Exit status 77 with
#                    "skipped: why" when it cannot run here (not root, no binaries), 1 on failure.
#   slurm_down DIR   cancels jobs, stops the daemons, removes DIR (KEEP=1 keeps it)
#
# Ports are chosen from the caller's pid (the next free pair) so parallel bring-ups do not clash;
# nothing outside DIR is written (munged gets its own socket and key, Slurm its own state and spool folders).

slurm_up() {
  local work=$1 host port state
  if [ "$(id -u)" -ne 0 ]; then echo "skipped: needs root to run slurmctld, slurmd and munged"; return 77; fi
  for b in munged slurmctld slurmd srun sbatch sinfo scancel; do
    command -v "$b" >/dev/null ||
      { echo "skipped: no $b (Debian: slurm-wlm munge; tools/setup.sh installs them)"; return 77; }
  done
  chmod 755 "$work"
  host=$(hostname -s)
  mkdir -p "$work/munge" "$work/state" "$work/spool"
  chmod 700 "$work/munge"
  dd if=/dev/urandom of="$work/munge/munge.key" bs=1024 count=1 status=none
  chmod 400 "$work/munge/munge.key"
  munged --force --key-file="$work/munge/munge.key" --socket="$work/munge/munge.socket" \
    --pid-file="$work/munged.pid" --log-file="$work/munged.log" --seed-file="$work/munge/seed" ||
    { echo "FAIL  munged did not start: $(tail -n 2 "$work/munged.log" 2>/dev/null)"; return 1; }
  port=$((17000 + $$ % 1000 * 2))
  # Another suite's cluster may hold that pair (pids that agree mod 1000): take the next free one.
  while ss -Htln "( sport = :$port or sport = :$((port + 1)) )" 2>/dev/null | grep -q .; do
    port=$((port + 2))
  done
  # cred_expire=5 (Slurm's least): a requeued job waits that long before it may start again.
  # MinJobAge=4: sbatch --wait polls every 2 s only while MinJobAge/2 exceeds its interval, else
  # it backs off 2 -> 8 -> 32 s (src/sbatch/sbatch.c, _job_wait), and a job that ends just after
  # 10 s was seen done only at 42 s. Records of ended jobs still outlive two polls.
  cat >"$work/slurm.conf" <<EOF
ClusterName=cohorttest
SlurmctldHost=$host
SlurmUser=root
SlurmdUser=root
SlurmctldPort=$port
SlurmdPort=$((port + 1))
AuthType=auth/munge
AuthInfo=socket=$work/munge/munge.socket,cred_expire=5
MinJobAge=4
CredType=cred/munge
SchedulerParameters=sched_interval=2
StateSaveLocation=$work/state
SlurmdSpoolDir=$work/spool
SlurmctldPidFile=$work/slurmctld.pid
SlurmdPidFile=$work/slurmd.pid
SlurmctldLogFile=$work/slurmctld.log
SlurmdLogFile=$work/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
ReturnToService=2
MpiDefault=none
JobCompType=jobcomp/none
AccountingStorageType=accounting_storage/none
NodeName=$host CPUs=$(nproc) State=UNKNOWN
PartitionName=test Nodes=ALL Default=YES MaxTime=INFINITE State=UP
EOF
  export SLURM_CONF="$work/slurm.conf"
  slurmctld -f "$SLURM_CONF" || { echo "FAIL  slurmctld did not start: $(tail -n 3 "$work/slurmctld.log")"; return 1; }
  slurmd -f "$SLURM_CONF" || { echo "FAIL  slurmd did not start: $(tail -n 3 "$work/slurmd.log")"; return 1; }
  state=""
  for _ in $(seq 1 60); do
    state=$(sinfo -h -o %t 2>/dev/null | head -n1)
    [ "$state" = idle ] && return 0
    sleep 0.5
  done
  echo "FAIL  the node did not become idle (state '$state')"
  tail -n 5 "$work/slurmctld.log" "$work/slurmd.log"
  return 1
}

slurm_down() {
  local work=$1 f
  [ -d "$work" ] || return 0
  scancel --quiet --user=root 2>/dev/null
  for f in slurmd slurmctld munged; do
    [ -f "$work/$f.pid" ] && kill "$(cat "$work/$f.pid")" 2>/dev/null
  done
  sleep 0.5
  for f in slurmd slurmctld munged; do
    [ -f "$work/$f.pid" ] && kill -9 "$(cat "$work/$f.pid")" 2>/dev/null
  done
  if [ -n "${KEEP:-}" ]; then echo "kept $work"; else rm -rf "$work"; fi
}
