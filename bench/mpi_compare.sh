#!/usr/bin/env bash
# cohort's shm (or COMM=ucx) all-reduce next to Open MPI's MPI_Allreduce, float32 sum, same sizes, same machine,
# same run. Prints one row per size with both busbw figures and their ratio (shm / MPI).
#
#   bench/mpi_compare.sh [BUILD_DIR]        (default: build)
#
# Environment: NP (ranks, default 2), ROUNDS (default 3: the two programs alternate ROUNDS times
# and each size reports the median of its rounds, which tames the noise of a shared machine),
# LAT_ITERS / BW_ITERS (timed ops per size below / from 256 KiB; defaults 2000 / 20), MAX (largest
# size, default 256M), BIND (1: pin each rank to a core, as mpirun does by default; 0: neither
# pins; default 1), COMM (cohort backend: shm, default, or ucx).
set -euo pipefail

build=${1:-build}
np=${NP:-2}
rounds=${ROUNDS:-3}
lat_iters=${LAT_ITERS:-2000}
bw_iters=${BW_ITERS:-20}
max=${MAX:-256M}
bind=${BIND:-1}
comm=${COMM:-shm}

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
    # shellcheck disable=SC2086
    mpirun --allow-run-as-root -np "$np" "${mpi_bind[@]}" "$build/bin/mpi_allreduce_bench" $s \
      | grep -v '^#' >> "$tmp/mpi.$r"
    # shellcheck disable=SC2086
    "$build/bin/cohortrun" --nproc-per-node "$np" --master-port 0 "$build/bin/cohort-bench" \
      --comm "$comm" --op allreduce "${shm_bind[@]}" $s | grep -v '#' | sed 's/^\[rank 0\] //' \
      >> "$tmp/shm.$r"
  done
done

echo "# all-reduce, float32 sum, $np ranks, $(date -u +%Y-%m-%d), $(nproc) cores ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')),"
echo "# $(mpirun --version 2>/dev/null | head -1) vs cohort $comm; median of $rounds alternating rounds; bind=$bind"
printf '%12s | %10s %9s | %10s %9s | %7s | %s\n' "size (B)" "MPI us" "MPI busbw" "$comm us" "$comm busbw" \
  "$comm/MPI" "#wrong (MPI/$comm)"
# Columns of both programs: size count type redop time algbw busbw #wrong
python3 - "$tmp" "$rounds" <<'EOF'
import sys, statistics, collections
tmp, rounds = sys.argv[1], int(sys.argv[2])
def load(kind):
    rows = collections.defaultdict(list)
    for r in range(1, rounds + 1):
        for line in open(f"{tmp}/{kind}.{r}"):
            f = line.split()
            if len(f) >= 8 and f[0].isdigit():
                rows[int(f[0])].append((float(f[4]), float(f[6]), f[7]))
    return rows
mpi, shm = load("mpi"), load("shm")
for size in sorted(set(mpi) & set(shm)):
    mt = statistics.median(x[0] for x in mpi[size]); mb = statistics.median(x[1] for x in mpi[size])
    st = statistics.median(x[0] for x in shm[size]); sb = statistics.median(x[1] for x in shm[size])
    wrong = "/".join(",".join(sorted(set(x[2] for x in d[size]))) for d in (mpi, shm))
    # Same bytes on both sides, so the busbw ratio is the time ratio (exact even where busbw
    # rounds to 0.00 at tiny sizes).
    ratio = mt / st if st > 0 else float("nan")
    print(f"{size:12d} | {mt:10.2f} {mb:9.2f} | {st:10.2f} {sb:9.2f} | {ratio:7.2f} | {wrong}")
EOF
