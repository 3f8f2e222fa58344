#!/usr/bin/env bash
# cohort's nccl backend next to NVIDIA's nccl-tests (all_reduce_perf), float sum, same sizes, same
# GPUs, same run, both sides driven both ways (blocking: -z 1, each op waited for; window: -z 0,
# all ops issued, then waited for), alternating over rounds, medians. Ratios are nccl-tests time /
# cohort time (> 1: cohort faster); the issue's target is cohort's busbw within 10% of nccl-tests'
# (a ratio >= 0.90) at 64 MiB and above. nccl-tests runs one process driving all N GPUs (-g N);
# cohort runs N processes (cohortrun), one GPU each, as a training job does.
#
#   bench/nccl_compare.sh [--nccl-tests SRC] [--build DIR] [--np N]
#
#   --nccl-tests SRC  nccl-tests' source (default .gpu/nccl-tests, what tools/gpu_deps.sh carries);
#                     built once into DIR/nccl-tests with this machine's nvcc and NCCL
#   --build DIR       cohort's CUDA build (default build-gpu, what tools/gpu_check.sh makes)
#   --np N            GPUs (default: every visible GPU)
#
# Environment: ROUNDS (default 3), LAT_ITERS / BW_ITERS (timed ops per size below / from 1 MiB;
# defaults 200 / 20), MAX (largest size, default 256M), NCCL_HOME (default: the nvidia-nccl wheel
# python3 can import, else /usr/local/cuda). Without a GPU it builds all_reduce_perf, says so and
# exits 0 (a check that the peer builds here).
set -euo pipefail
# shellcheck source=bench/cpu_line.sh
. "$(dirname "$0")/cpu_line.sh"  # the CPU the figures come from
cd "$(dirname "$0")/.."

src=.gpu/nccl-tests
build=build-gpu
np=""
while [ $# -gt 0 ]; do
  case "$1" in
    --nccl-tests) src="$2"; shift 2 ;;
    --build) build="$2"; shift 2 ;;
    --np) np="$2"; shift 2 ;;
    -h|--help) sed -n '2,20p' "$0"; exit 0 ;;
    *) echo "nccl_compare.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
rounds=${ROUNDS:-3}
lat_iters=${LAT_ITERS:-200}
bw_iters=${BW_ITERS:-20}
max=${MAX:-256M}
[ -f "$src/src/all_reduce.cu" ] || {
  echo "nccl_compare.sh: no nccl-tests source at $src (fetch NVIDIA/nccl-tests and pass --nccl-tests, or carry it with tools/gpu_deps.sh)" >&2
  exit 2
}

# ---- the peer, built once ----
if [ -z "${NCCL_HOME:-}" ]; then
  NCCL_HOME=$(python3 -c "import nvidia.nccl as m; print(list(m.__path__)[0])" 2>/dev/null) || NCCL_HOME=""
  [ -n "$NCCL_HOME" ] && [ -e "$NCCL_HOME/include/nccl.h" ] || NCCL_HOME=/usr/local/cuda
fi
[ -e "$NCCL_HOME/lib/libnccl.so" ] || [ ! -e "$NCCL_HOME/lib/libnccl.so.2" ] ||
  ln -sf libnccl.so.2 "$NCCL_HOME/lib/libnccl.so" 2>/dev/null || true  # wheels ship only .so.2
cap=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -n1 | tr -d . || true)
gencode="-gencode=arch=compute_${cap:-90},code=sm_${cap:-90}"
peer_dir="$build/nccl-tests"
peer="$peer_dir/all_reduce_perf"
if [ ! -x "$peer" ]; then
  mkdir -p "$peer_dir"
  peer_abs=$(cd "$peer_dir" && pwd)
  if ! make -C "$src/src" -j"$(nproc)" BUILDDIR="$peer_abs" NCCL_HOME="$NCCL_HOME" \
       NVCC_GENCODE="$gencode" "$peer_abs/all_reduce_perf" \
       > "$peer_dir/make.log" 2>&1; then
    tail -n 20 "$peer_dir/make.log" >&2
    echo "nccl_compare.sh: building nccl-tests failed (see $peer_dir/make.log)" >&2
    exit 1
  fi
fi
version=$(sed -n 's/^#define NCCL_TESTS_VERSION "\(.*\)"/\1/p' "$src/src/common.h" 2>/dev/null || true)
echo "# nccl-tests ${version:-?} built: $peer ($gencode)"
gpus=$( (nvidia-smi -L 2>/dev/null || true) | grep -c "^GPU" || true)
if [ "${gpus:-0}" -eq 0 ]; then
  echo "nccl_compare.sh: no GPU (nvidia-smi found none): built nccl-tests only"
  exit 0
fi
np=${np:-$gpus}
for bin in cohortrun cohort-bench; do
  [ -x "$build/bin/$bin" ] || { echo "nccl_compare.sh: $build/bin/$bin not found (tools/gpu_check.sh builds it)" >&2; exit 1; }
done
export LD_LIBRARY_PATH="$NCCL_HOME/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
sweeps=("-b 8 -e 512K -f 8 -n $lat_iters -w 20" "-b 1M -e $max -f 4 -n $bw_iters -w 5")
for r in $(seq 1 "$rounds"); do
  for s in "${sweeps[@]}"; do
    for z in 1 0; do
      # nccl-tests' rows: size count type redop root, then out-of-place time algbw busbw #wrong;
      # kept in cohort-bench's columns (size count type redop time algbw busbw #wrong).
      # shellcheck disable=SC2086
      "$peer" $s -g "$np" -d float -o sum -c 1 -z $z | grep -v '^#' \
        | awk 'NF >= 9 && $1 ~ /^[0-9]+$/ {print $1, $2, $3, $4, $6, $7, $8, $9}' >> "$tmp/peer$z.$r"
      # shellcheck disable=SC2086
      "$build/bin/cohortrun" --nproc-per-node "$np" --master-port 0 "$build/bin/cohort-bench" \
        --comm nccl --op allreduce $s -d float -o sum -z $z | grep -v '#' \
        | sed 's/^\[rank 0\] //' >> "$tmp/coh$z.$r"
    done
  done
done

echo "# all-reduce, float sum, $np GPU(s) ($(nvidia-smi --query-gpu=name --format=csv,noheader | head -n1)), $(date -u +%Y-%m-%d)"
echo "# nccl-tests all_reduce_perf -g $np (1 process) vs cohort-bench --comm nccl ($np processes); median of $rounds alternating rounds"
echo "# blk = each op waited for; win = all ops issued, then waited for; ratios are nccl-tests time / cohort time (> 1: cohort faster)"
python3 bench/compare_table.py "$tmp" "$rounds" nccl-tests cohort
