#!/usr/bin/env bash
# Where a data-parallel step's time goes: 2 ranks x 1 thread under cohortrun, DDP, batch 64 per
# rank, each model on each backend. The numbers are DDP's own (trainer's PhaseTimer, filled from
# DistributedDataParallel::last_step(), docs/PARALLEL.md "How comm and overlap are measured"):
#   comm    = time after the model's backward spent waiting for the bucket all-reduces (exposed);
#   overlap = time with a bucket all-reduce in flight while backward still ran (hidden);
#   step    = the whole training step (data, forward, backward, comm, optimizer).
# The share columns divide by the step. Each row is the median of ROUNDS runs (the backends
# alternate within a round).
#
#   bench/ddp_share.sh [ROUNDS] [MODELS...]   (default 3; mnist resnet9)
#
# MODELS: mnist (examples/mnist_cnn, 200 steps) and any cifar_cnn --model name (resnet9: 12 steps,
# others 20), on Fashion-MNIST. BACKENDS (environment, default "shm ucx").
set -euo pipefail
# shellcheck source=bench/cpu_line.sh
. "$(dirname "$0")/cpu_line.sh"  # the CPU the figures come from
root=$(cd "$(dirname "$0")/.." && pwd)
bin=$root/build/bin
rounds=${1:-3}
shift || true
models=("$@")
[ ${#models[@]} -eq 0 ] && models=(mnist resnet9)
read -r -a backends <<< "${BACKENDS:-shm ucx}"
for b in cohortrun mnist_cnn cifar_cnn; do
  [ -x "$bin/$b" ] || { echo "ddp_share: $bin/$b not found (build first)" >&2; exit 2; }
done
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

run() {  # model backend -> the run's output
  local m=$1 c=$2
  if [ "$m" = mnist ]; then
    OMP_NUM_THREADS=1 "$bin/cohortrun" --nproc-per-node 2 --master-port 0 "$bin/mnist_cnn" \
      --epochs 1 --max-steps 200 --test-batch-size 1000 --log-interval 100000 --comm "$c"
  else
    local s=20
    [ "$m" = resnet9 ] && s=12
    OMP_NUM_THREADS=1 "$bin/cohortrun" --nproc-per-node 2 --master-port 0 "$bin/cifar_cnn" \
      --model "$m" --dataset fashion-mnist --augment 0 --max-steps "$s" --no-eval \
      --log-interval 100000 --comm "$c"
  fi
}

for r in $(seq "$rounds"); do
  for m in "${models[@]}"; do
    for c in "${backends[@]}"; do
      run "$m" "$c" > "$tmp/$m.$c.$r" 2>&1 || { echo "ddp_share: $m over $c failed:" >&2; tail -20 "$tmp/$m.$c.$r" >&2; exit 1; }
    done
  done
done

echo "ddp_share: $(date -u '+%F %H:%M') UTC, $(nproc --all) cores, 2 ranks x 1 thread, batch 64 per rank, median of $rounds runs"
python3 - "$tmp" "$rounds" "${models[*]}" "${backends[*]}" <<'EOF'
import re, statistics, sys
tmp, rounds, models, backends = sys.argv[1], int(sys.argv[2]), sys.argv[3].split(), sys.argv[4].split()
def parse(path):
    text = open(path).read()
    ph = {m.group(1): float(m.group(2)) for m in
          re.finditer(r"\[rank 0\]\s+(?:of which )?(\w+)\s+[0-9.]+\s+([0-9.]+)\s+[0-9.]+%", text)}
    ips = re.search(r"training throughput: ([0-9.]+) images/s", text)
    steps = re.search(r"total\s+[0-9.]+\s+[0-9.]+\s+[0-9.]+%\s+\((\d+) steps\)", text)
    return ph, float(ips.group(1)) if ips else float("nan"), int(steps.group(1)) if steps else 0
print(f"{'model':<9} {'backend':<7} {'steps':>5} {'images/s':>9} {'step ms':>8} {'backward ms':>11}"
      f" {'comm ms':>8} {'comm %':>7} {'overlap ms':>10} {'overlap %':>9}")
for m in models:
    for c in backends:
        runs = [parse(f"{tmp}/{m}.{c}.{r}") for r in range(1, rounds + 1)]
        med = lambda f: statistics.median(f(x) for x in runs)
        step = med(lambda x: x[0].get("total", float("nan")))
        comm = med(lambda x: x[0].get("comm", 0.0))
        ovl = med(lambda x: x[0].get("overlap", 0.0))
        bwd = med(lambda x: x[0].get("backward", float("nan")))
        print(f"{m:<9} {c:<7} {runs[0][2]:>5} {med(lambda x: x[1]):>9.1f} {step:>8.2f} {bwd:>11.2f}"
              f" {comm:>8.2f} {100 * comm / step:>6.1f}% {ovl:>10.2f} {100 * ovl / step:>8.1f}%")
EOF
