#!/usr/bin/env bash
# The 8-byte all-reduce's latency, cohort shm against Open MPI (vader), 2 ranks pinned to a core
# each, each op waited for before the next (MPI_Allreduce in a loop; cohort-bench -z 1), with
# cohort's mismatch checks on (the default). The two alternate ROUNDS times; prints every round
# and the medians, in ns (cohort-bench's --json time and mpi_allreduce_bench's 3 decimals: the
# tables' 2 decimals of a microsecond are too coarse here).
#
#   bench/shm_latency.sh [BUILD_DIR]      (default build)
# Environment: ROUNDS (default 7), ITERS (timed ops per run, default 200000), SIZE (default 8).
# This VM's cross-core latency has two regimes that alternate minute to minute
# (docs/benchmarks/allreduce.md, "All-reduce: cohort shm vs Open MPI"): compare rounds only with
# their neighbours.
set -euo pipefail
# shellcheck source=bench/cpu_line.sh
. "$(dirname "$0")/cpu_line.sh"  # the CPU the figures come from
build=$(cd "${1:-build}" && pwd)
rounds=${ROUNDS:-7}
iters=${ITERS:-200000}
size=${SIZE:-8}
for b in cohortrun cohort-bench mpi_allreduce_bench; do
  [ -x "$build/bin/$b" ] || { echo "shm_latency.sh: $build/bin/$b not found (build first)" >&2; exit 1; }
done
command -v mpirun >/dev/null || { echo "shm_latency.sh: mpirun not found (openmpi-bin)" >&2; exit 1; }
echo "# $size-byte all-reduce, 2 ranks, blocking, $iters ops per run, $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores ($(sed -n 's/^model name[^:]*: //p' /proc/cpuinfo | head -n1))"
echo "# $(mpirun --version 2>/dev/null | head -n1) against cohort shm (checks ${COHORT_COLLECTIVE_CHECKS:-on})"
printf "%6s %10s %10s %9s\n" round "MPI ns" "shm ns" "shm/MPI"
m_all=() c_all=()
for r in $(seq "$rounds"); do
  m=$(mpirun --allow-run-as-root -np 2 --bind-to core "$build/bin/mpi_allreduce_bench" \
        -b "$size" -e "$size" -n "$iters" -w 2000 -z 1 2>/dev/null | awk -v s="$size" '$1 == s { print $5 * 1000 }')
  c=$("$build/bin/cohortrun" --nproc-per-node 2 --master-port 0 "$build/bin/cohort-bench" --comm shm \
        --bind -b "$size" -e "$size" -n "$iters" -w 2000 -z 1 --json 2>&1 |
      sed -n 's/.*"time_us": \([0-9.]*\).*/\1/p' | awk '{ print $1 * 1000 }')
  [ -n "$m" ] && [ -n "$c" ] || { echo "shm_latency.sh: a run printed no time (MPI '$m', shm '$c')" >&2; exit 1; }
  printf "%6s %10.0f %10.0f %8.2fx\n" "$r" "$m" "$c" "$(echo "$c / $m" | bc -l)"
  m_all+=("$m") c_all+=("$c")
done
med() { printf "%s\n" "$@" | sort -g | awk '{ a[NR] = $1 } END { print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }
mm=$(med "${m_all[@]}") cm=$(med "${c_all[@]}")
printf "%6s %10.0f %10.0f %8.2fx\n" median "$mm" "$cm" "$(echo "$cm / $mm" | bc -l)"
