#!/usr/bin/env bash
# Peak resident memory (GNU time's maxrss) of the MNIST CNN job, cohort against the current
# PyTorch (.venv-peers), the same work on each side: STEPS training steps of batch 64 on one
# thread, then the 10,000 test images in batches of TEST_BATCH.
#   bench/peak_rss.sh [STEPS] [TEST_BATCH]     (defaults 200, 1000)
set -euo pipefail
# shellcheck source=bench/cpu_line.sh
. "$(dirname "$0")/cpu_line.sh"  # the CPU the figures come from
root=$(cd "$(dirname "$0")/.." && pwd)
steps=${1:-200} tb=${2:-1000}
py=$root/.venv-peers/bin/python
[ -x "$py" ] || { echo "peak_rss: no $py (run tools/setup.sh --peers)" >&2; exit 2; }
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1
rss() { /usr/bin/time -f "%M" "$@" 2>&1 >/dev/null | tail -n1; }
c=$(rss "$root/build/bin/mnist_cnn" --epochs 1 --max-steps "$steps" --test-batch-size "$tb" --log-interval 100000)
t=$(rss "$py" "$root/bench/mnist_torch.py" --steps "$steps" --eval-batch "$tb")
base=$(rss "$py" -c "import torch")
echo "peak RSS, MNIST CNN, $steps steps of batch 64 + the test set in batches of $tb, 1 thread ($(date -u +%F)):"
printf '  cohort mnist_cnn              %6d MiB\n' $((c / 1024))
printf '  torch %-12s            %6d MiB (of which %d MiB is importing torch)\n' \
  "$("$py" -c 'import torch; print(torch.__version__)')" $((t / 1024)) $((base / 1024))
awk -v c="$c" -v t="$t" 'BEGIN { printf "  cohort / torch: %.2fx\n", c / t }'
