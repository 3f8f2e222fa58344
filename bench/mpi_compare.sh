#!/usr/bin/env bash
# cohort's shm (or COMM=ucx) all-reduce next to Open MPI's, float32 sum, same sizes, same machine,
# same run, each side driven both ways:
#   blocking: each op waited for before the next (MPI_Allreduce in a loop; cohort-bench -z 1);
#   window:   all -n ops issued, then waited for (MPI_Iallreduce + MPI_Waitall; cohort-bench -z 0,
#             which is how nccl-tests times).
# Prints one row per size with the four times and three ratios (MPI time / cohort time, so > 1
# means cohort is faster): blocking against blocking, window against window, and each side's
# faster mode against the other's.
#
#   bench/mpi_compare.sh [BUILD_DIR]        (default: build)
#
# Environment: NP (ranks, default 2), ROUNDS (default 3: the programs alternate ROUNDS times and
# each size reports the median of its rounds, which tames the noise of a shared machine),
# LAT_ITERS / BW_ITERS (timed ops per size below / from 256 KiB; defaults 2000 / 20), MAX (largest
# size, default 256M), BIND (1: pin each rank to a core, as mpirun does by default; 0: neither
# pins; default 1), COMM (cohort backend: shm, default, or ucx), MPI_ARGS (extra mpirun arguments,
# e.g. "--mca btl_vader_single_copy_mechanism none"), REG (1: cohort's buffers come from
# Communicator::alloc_buffer, cohort-bench -R 1, as DDP's buckets do; default 0: malloc, as MPI's).
set -euo pipefail
# shellcheck source=bench/cpu_line.sh
. "$(dirname "$0")/cpu_line.sh"  # the CPU the figures come from

build=${1:-build}
np=${NP:-2}
rounds=${ROUNDS:-3}
lat_iters=${LAT_ITERS:-2000}
bw_iters=${BW_ITERS:-20}
max=${MAX:-256M}
bind=${BIND:-1}
comm=${COMM:-shm}
reg=${REG:-0}
read -r -a mpi_args <<< "${MPI_ARGS:-}"

for bin in cohortrun cohort-bench mpi_allreduce_bench; do
  if [ ! -x "$build/bin/$bin" ]; then
    echo "mpi_compare.sh: $build/bin/$bin not found (build first; mpi_allreduce_bench needs libopenmpi-dev)" >&2
    exit 1
  fi
done
command -v mpirun >/dev/null || { echo "mpi_compare.sh: mpirun not found (openmpi-bin)" >&2; exit 1; }

if [ "$bind" = 1 ]; then mpi_bind=(--bind-to core); shm_bind=(--bind); else mpi_bind=(--bind-to none); shm_bind=(); fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# Two sweeps per program: small sizes with many iterations (latency), large ones with fewer.
sweeps=("-b 8 -e 64K -f 4 -n $lat_iters -w 200" "-b 256K -e $max -f 4 -n $bw_iters -w 3")
for r in $(seq 1 "$rounds"); do
  for s in "${sweeps[@]}"; do
    for z in 1 0; do
      # shellcheck disable=SC2086
      mpirun --allow-run-as-root -np "$np" "${mpi_bind[@]}" "${mpi_args[@]}" \
        "$build/bin/mpi_allreduce_bench" $s -z $z | grep -v '^#' >> "$tmp/peer$z.$r"
      # shellcheck disable=SC2086
      "$build/bin/cohortrun" --nproc-per-node "$np" --master-port 0 "$build/bin/cohort-bench" \
        --comm "$comm" --op allreduce "${shm_bind[@]}" $s -z $z -R "$reg" | grep -v '#' \
        | sed 's/^\[rank 0\] //' >> "$tmp/coh$z.$r"
    done
  done
done

echo "# all-reduce, float32 sum, $np ranks, $(date -u +%Y-%m-%d), $(nproc) cores ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')),"
echo "# $(mpirun --version 2>/dev/null | head -1) ${MPI_ARGS:-} vs cohort $comm; median of $rounds alternating rounds; bind=$bind; cohort buffers: $([ "$reg" = 1 ] && echo alloc_buffer || echo malloc)"
echo "# blk = each op waited for (MPI_Allreduce / cohort-bench -z 1); win = all ops issued, then waited"
echo "# for (MPI_Iallreduce + MPI_Waitall / cohort-bench -z 0); ratios are MPI time / $comm time (> 1: $comm faster)"
python3 "$(dirname "$0")/compare_table.py" "$tmp" "$rounds" MPI "$comm"
