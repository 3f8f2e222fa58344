#!/usr/bin/env bash
# The same 2-rank MNIST job (shm, batch 64 per rank) under each launcher, side by side: cohortrun,
# mpirun (Open MPI), srun (a one-node Slurm brought up for the run, root only), torchrun (the
# peers' .venv-peers). Alternating rounds, medians, each launcher's ratio to cohortrun. No thread
# settings: each launcher's own variables decide the threads per rank (the first line of each
# run says how many, and why).
#
#   bench/launchers.sh [BUILD_DIR] [STEPS] [ROUNDS]
set -uo pipefail
# shellcheck source=bench/cpu_line.sh
. "$(dirname "$0")/cpu_line.sh"  # the CPU the figures come from
build=$(cd "${1:-build}" && pwd)
steps=${2:-200}
rounds=${3:-3}
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/.." && pwd)
job=(--comm shm --epochs 1 --max-steps "$steps" --log-interval 100000 --test-batch-size 1000)
work=$(mktemp -d /tmp/cohort-launchers.XXXXXX)

declare -A cmd
cmd[cohortrun]="$build/bin/cohortrun --nproc-per-node 2 --master-port 0 $build/bin/mnist_cnn ${job[*]}"
command -v mpirun >/dev/null &&
  cmd[mpirun]="mpirun --allow-run-as-root -np 2 $build/bin/mnist_cnn ${job[*]}"
torchrun=$src/.venv-peers/bin/torchrun
[ -x "$torchrun" ] &&
  cmd[torchrun]="$torchrun --nproc-per-node 2 --no-python $build/bin/mnist_cnn ${job[*]}"
. "$src/tests/launch/slurm_cluster.sh"
trap 'slurm_down "$work/slurm" >/dev/null' EXIT
mkdir -p "$work/slurm"
if slurm_up "$work/slurm" >"$work/slurm_up.log" 2>&1; then
  cmd[srun]="srun -N1 -n2 $build/bin/mnist_cnn ${job[*]}"
else
  echo "# srun left out: $(tail -n1 "$work/slurm_up.log")"
fi
order=(cohortrun mpirun srun torchrun)

declare -A ips threads
for r in $(seq 1 "$rounds"); do
  for l in "${order[@]}"; do
    [ -n "${cmd[$l]:-}" ] || continue
    $(echo "${cmd[$l]}") >"$work/$l.$r.log" 2>&1 < /dev/null
    v=$(tr '\r' '\n' <"$work/$l.$r.log" | sed -n 's/.*training throughput: \([0-9.]*\) images\/s.*/\1/p' | tail -n1)
    ips[$l]="${ips[$l]:-} ${v:-0}"
    threads[$l]=$(tr '\r' '\n' <"$work/$l.$r.log" | sed -n 's/.*host threads: \(.*\)$/\1/p' | head -n1)
  done
done
median() { printf '%s\n' $1 | sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
base=$(median "${ips[cohortrun]}")
printf '# 2 ranks x batch 64, %s steps, %s alternating rounds, medians; %s, %s CPUs\n' \
  "$steps" "$rounds" "$(date -u +%Y-%m-%d)" "$(nproc)"
printf '%-10s %10s %8s  %-50s %s\n' launcher images/s ratio "threads per rank (why)" rounds
for l in "${order[@]}"; do
  [ -n "${cmd[$l]:-}" ] || { printf '%-10s %10s %8s  %s\n' "$l" - - "not available here"; continue; }
  m=$(median "${ips[$l]}")
  printf '%-10s %10.1f %7.2fx  %-50s %s\n' "$l" "$m" "$(awk -v a="$m" -v b="$base" 'BEGIN { print a / b }')" \
    "${threads[$l]}" "${ips[$l]# }"
done
slurm_down "$work/slurm" >/dev/null
trap - EXIT
[ -n "${KEEP:-}" ] && echo "logs: $work" || rm -rf "$work"
