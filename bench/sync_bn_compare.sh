#!/usr/bin/env bash
# The cost of --sync-bn: the zoo's program on 2 ranks (shm) with plain BatchNorm2d and with
# synchronised batch norm, the same model, synthetic data, steps and batch, alternating which goes
# first over ROUNDS rounds; prints each side's median images/s (the Trainer's training
# throughput) and the ratio sync / plain (the issue's target: at least 0.9).
#
#   bench/sync_bn_compare.sh [MODEL] [ROUNDS] [STEPS] [BATCH]   (default: resnet9 3 12 16)
set -euo pipefail
# shellcheck source=bench/cpu_line.sh
. "$(dirname "$0")/cpu_line.sh"
root=$(cd "$(dirname "$0")/.." && pwd)
model=${1:-resnet9}
rounds=${2:-3}
steps=${3:-12}
batch=${4:-16}
bin=$root/build/bin
[ -x "$bin/cifar_cnn" ] || { echo "sync_bn_compare: $bin/cifar_cnn not built" >&2; exit 2; }
plain=() sync=()
run() {  # run EXTRA...: prints the run's images/s
  OMP_NUM_THREADS=1 "$bin/cohortrun" --nproc-per-node 2 --master-port 0 "$bin/cifar_cnn" \
    --model "$model" --synthetic --epochs 1 --max-steps "$steps" --batch-size "$batch" --comm shm \
    --no-eval "$@" 2>&1 | sed -n 's/.*training throughput: \([0-9.]*\) images\/s.*/\1/p'
}
for r in $(seq 1 "$rounds"); do
  if [ $((r % 2)) = 1 ]; then order="plain sync"; else order="sync plain"; fi
  for side in $order; do
    if [ "$side" = plain ]; then plain+=("$(run)"); else sync+=("$(run --sync-bn)"); fi
  done
done
python3 - "$model" "$steps" "$batch" "${plain[*]}" "${sync[*]}" <<'PY'
import statistics, sys
model, steps, batch = sys.argv[1:4]
plain = [float(x) for x in sys.argv[4].split()]
sync = [float(x) for x in sys.argv[5].split()]
print(f"sync_bn_compare: {model}, 2 ranks (shm), batch {batch} per rank, {steps} steps, "
      f"{len(plain)} rounds alternating")
print(f"plain BatchNorm2d images/s: {' '.join(f'{x:.1f}' for x in plain)}  median {statistics.median(plain):.1f}")
print(f"--sync-bn         images/s: {' '.join(f'{x:.1f}' for x in sync)}  median {statistics.median(sync):.1f}")
print(f"sync / plain: {statistics.median(sync) / statistics.median(plain):.2f}x")
PY
