#!/usr/bin/env bash
# cohort's all-reduce (shm, or COMM=ucx) next to PyTorch's Gloo (torch.distributed's CPU backend,
# what CPU DDP and torchrun jobs use today), sum, same sizes, same machine, same run, both sides
# driven both ways (blocking: each op waited for, cohort-bench -z 1 / dist.all_reduce; window: all
# ops issued, then waited for, -z 0 / async_op=True). One table per dtype; ratios are Gloo time /
# cohort time (> 1: cohort faster). Gloo runs on TCP over loopback: it has no shared-memory
# transport, so this is the comparison a user moving a CPU job from Gloo sees.
#
#   bench/gloo_compare.sh [BUILD_DIR]        (default: build)
#
# Environment: NP (ranks, default 2), ROUNDS (alternating rounds, median reported; default 3),
# DTYPES (default "float half bfloat16"), LAT_ITERS / BW_ITERS (timed ops per size below / from
# 256 KiB; defaults 200 / 10), MAX (largest size, default 64M), COMM (shm or ucx; default shm),
# PY (the Python with torch; default .venv-peers/bin/python, made by tools/setup.sh --peers).
set -euo pipefail
# shellcheck source=bench/cpu_line.sh
. "$(dirname "$0")/cpu_line.sh"  # the CPU the figures come from

build=${1:-build}
np=${NP:-2}
rounds=${ROUNDS:-3}
dtypes=${DTYPES:-float half bfloat16}
lat_iters=${LAT_ITERS:-200}
bw_iters=${BW_ITERS:-10}
max=${MAX:-64M}
comm=${COMM:-shm}
py=${PY:-.venv-peers/bin/python}
here=$(dirname "$0")

for bin in cohortrun cohort-bench; do
  [ -x "$build/bin/$bin" ] || { echo "gloo_compare.sh: $build/bin/$bin not found (build first)" >&2; exit 1; }
done
"$py" -c "import torch.distributed as d; assert d.is_gloo_available()" 2>/dev/null || {
  echo "gloo_compare.sh: $py has no torch with Gloo (run tools/setup.sh --peers, or set PY)" >&2
  exit 1
}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

sweeps=("-b 8 -e 64K -f 8 -n $lat_iters -w 20" "-b 256K -e $max -f 4 -n $bw_iters -w 3")
for dt in $dtypes; do
  mkdir -p "$tmp/$dt"
  for r in $(seq 1 "$rounds"); do
    for s in "${sweeps[@]}"; do
      for z in 1 0; do
        # shellcheck disable=SC2086
        "$py" "$here/gloo_allreduce.py" -np "$np" $s -d "$dt" -z $z | grep -v '^#' >> "$tmp/$dt/peer$z.$r"
        # shellcheck disable=SC2086
        "$build/bin/cohortrun" --nproc-per-node "$np" --master-port 0 "$build/bin/cohort-bench" \
          --comm "$comm" --op allreduce $s -d "$dt" -z $z | grep -v '#' \
          | sed 's/^\[rank 0\] //' >> "$tmp/$dt/coh$z.$r"
      done
    done
  done
done

tv=$("$py" -c "import torch; print(torch.__version__)")
for dt in $dtypes; do
  echo "# all-reduce, $dt sum, $np ranks, $(date -u +%Y-%m-%d), $(nproc) cores ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')),"
  echo "# PyTorch $tv Gloo (TCP loopback, 1 intra-op thread) vs cohort $comm; median of $rounds alternating rounds"
  echo "# blk = each op waited for; win = all ops issued, then waited for; ratios are Gloo time / $comm time (> 1: $comm faster)"
  python3 "$here/compare_table.py" "$tmp/$dt" "$rounds" Gloo "$comm"
  echo
done
