#!/usr/bin/env bash
# Training throughput of the MNIST CNN, batch 64 per rank, side by side in one run:
#   1. PyTorch, one process, one thread                    (bench/mnist_torch.py)
#   2. cohort mnist_cnn, one process, one thread           (OMP_NUM_THREADS=1; conv2 on oneDNN's
#      Winograd kernels, the default: backends/host/conv2d.cpp)
#   3. cohort mnist_cnn, 2 ranks x one thread, shm, DDP    (global batch 128)
#   4. cohort mnist_cnn, one process, one thread, COHORT_HOST_CONV_ALGO=direct (oneDNN's direct
#      kernels, as PyTorch's CPU convolutions)
#   5. two independent cohort mnist_cnn processes at once, one thread each, no communication: what
#      two ranks could reach on this machine if the all-reduce cost nothing (they still share the
#      caches, the memory bandwidth and whatever else the VM's two cores share)
# The five alternate over ROUNDS rounds; printed: each one's median and the ratios the issues ask
# for (cohort/torch >= 1.0, goal 1.5; 2 ranks / 1 rank >= 1.8). PyTorch is the current one from
# .venv-peers (tools/setup.sh --peers) when it exists, else Debian's; PYTHON=... picks another.
#
#   bench/mnist_throughput.sh [BUILD_DIR] [STEPS] [ROUNDS]
set -euo pipefail
# shellcheck source=bench/cpu_line.sh
. "$(dirname "$0")/cpu_line.sh"  # the CPU the figures come from
build="${1:-build}"
steps="${2:-200}"
rounds="${3:-3}"
here="$(cd "$(dirname "$0")" && pwd)"
py="${PYTHON:-$here/../.venv-peers/bin/python}"
[ -x "$py" ] || py=/usr/bin/python3
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1
tv=$("$py" -c 'import torch; print(torch.__version__)')
ips() { sed -n 's/.*training throughput: \([0-9.]*\) images\/s.*/\1/p'; }
med() { printf '%s\n' $1 | sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
t="" o="" w="" g="" p=""
for r in $(seq 1 "$rounds"); do
  t+=" $("$py" "$here/mnist_torch.py" --steps "$steps" | sed -n 's/^torch images\/s: \([0-9.]*\).*/\1/p')"
  o+=" $("$build/bin/mnist_cnn" --epochs 1 --max-steps "$steps" --log-interval 1000000 \
        --test-batch-size 1000 | ips)"
  w+=" $("$build/bin/cohortrun" --nproc-per-node 2 "$build/bin/mnist_cnn" --comm shm --epochs 1 \
        --max-steps "$steps" --log-interval 1000000 --test-batch-size 1000 | ips)"
  g+=" $(COHORT_HOST_CONV_ALGO=direct "$build/bin/mnist_cnn" --epochs 1 --max-steps "$steps" \
        --log-interval 1000000 --test-batch-size 1000 | ips)"
  pair=$(mktemp)
  "$build/bin/mnist_cnn" --epochs 1 --max-steps "$steps" --log-interval 1000000 \
    --test-batch-size 1000 | ips >"$pair" &
  b=$("$build/bin/mnist_cnn" --epochs 1 --max-steps "$steps" --log-interval 1000000 \
        --test-batch-size 1000 --seed 2 | ips)
  wait
  p+=" $(awk -v a="$(cat "$pair")" -v b="$b" 'BEGIN { print a + b }')"
  rm -f "$pair"
  echo "round $r: torch$t | cohort 1 rank$o | cohort 2 ranks$w | cohort 1 rank direct$g | independent pair$p" >&2
done
torch_ips=$(med "$t") one=$(med "$o") two=$(med "$w") direct=$(med "$g") pair=$(med "$p")
echo "mnist_throughput: $(date -u +%F), $(getconf _NPROCESSORS_ONLN) cores, torch $tv, $rounds rounds, medians"
printf '%-44s %10s\n' "run (batch 64 per rank, $steps steps)" "images/s"
printf '%-44s %10.1f\n' "PyTorch $tv, 1 process x 1 thread" "$torch_ips"
printf '%-44s %10.1f\n' "cohort, 1 process x 1 thread" "$one"
printf '%-44s %10.1f\n' "cohort, 2 ranks x 1 thread (shm, DDP)" "$two"
printf '%-44s %10.1f\n' "cohort, 1 process x 1 thread, direct conv" "$direct"
printf '%-44s %10.1f\n' "cohort, 2 independent processes (sum)" "$pair"
awk -v t="$torch_ips" -v o="$one" -v w="$two" -v g="$direct" -v p="$pair" 'BEGIN {
  printf "cohort 1 rank / PyTorch:     %.2fx (target >= 1.0, goal 1.5)\n", o / t;
  printf "cohort 2 ranks / 1 rank:     %.2fx (target >= 1.8)\n", w / o;
  printf "cohort direct / PyTorch:     %.2fx (COHORT_HOST_CONV_ALGO=direct)\n", g / t;
  printf "independent pair / 1 rank:   %.2fx (the ceiling for 2 ranks here)\n", p / o;
  printf "cohort 2 ranks / pair:       %.2fx (what DDP keeps of it)\n", w / p }'
