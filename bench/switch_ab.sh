#!/usr/bin/env bash
# One environment switch's two settings on the same job, back to back, alternating over ROUNDS
# rounds, with PyTorch's eager run of the same model in each round as the peer:
#   mnist: the MNIST CNN, 1 process x 1 thread, 200 steps     vs bench/mnist_torch.py
#   vit:   the zoo's ViT, 1 process x 2 threads, 12 steps     vs bench/zoo_torch.py --model vit
# The switches measured so far: COHORT_FUSION on/off (layer fusion, layers/sequential.hpp) and
# COHORT_HOST_CACHE on/off (the host's caching allocator, backends/host/host_device.hpp).
# Prints each setting's median images/s, A / B and A / PyTorch.
#
#   bench/switch_ab.sh BUILD_DIR ROUNDS VAR A B [MODELS...]
#   e.g. bench/switch_ab.sh build 5 COHORT_FUSION on off mnist vit
set -euo pipefail
# shellcheck source=bench/cpu_line.sh
. "$(dirname "$0")/cpu_line.sh"  # the CPU the figures come from
[ $# -ge 5 ] || { sed -n '2,12p' "$0" >&2; exit 2; }
build=$1 rounds=$2 var=$3 a=$4 b=$5
shift 5
models=("$@")
[ ${#models[@]} -eq 0 ] && models=(mnist vit)
here="$(cd "$(dirname "$0")" && pwd)"
py="${PYTHON:-$here/../.venv-peers/bin/python}"
[ -x "$py" ] || py=/usr/bin/python3
tv=$("$py" -c 'import torch; print(torch.__version__)')
ips() { sed -n 's/.*training throughput: \([0-9.]*\) images\/s.*/\1/p' | tail -n1; }
med() { printf '%s\n' $1 | sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
run() {  # run MODEL VALUE: one cohort run's images/s with $var=VALUE
  if [ "$1" = mnist ]; then
    env "$var=$2" OMP_NUM_THREADS=1 "$build/bin/mnist_cnn" --epochs 1 --max-steps 200 \
      --log-interval 1000000 --test-batch-size 1000 | ips
  else
    env "$var=$2" OMP_NUM_THREADS=2 "$build/bin/cifar_cnn" --model vit --dataset fashion-mnist \
      --augment 0 --max-steps 12 --no-eval --log-interval 100000 | ips
  fi
}
peer() {
  if [ "$1" = mnist ]; then
    OMP_NUM_THREADS=1 "$py" "$here/mnist_torch.py" --steps 200 | sed -n 's/^torch images\/s: \([0-9.]*\).*/\1/p'
  else
    "$py" "$here/zoo_torch.py" --model vit --steps 12 --threads 2 | sed -nE 's/^torch images\/s: ([0-9.]+)/\1/p'
  fi
}
echo "switch_ab: $var=$a against $var=$b, $(date -u +%F), $(nproc) cores ($(lscpu | sed -nE 's/^Model name: +//p')), torch $tv, $rounds rounds, medians"
printf '%-6s | %9s %9s %9s | %8s %8s\n' model "$a" "$b" torch "$a/$b" "$a/torch"
for m in "${models[@]}"; do
  ra="" rb="" t=""
  for r in $(seq "$rounds"); do
    ra+=" $(run "$m" "$a")"
    rb+=" $(run "$m" "$b")"
    t+=" $(peer "$m")"
    echo "round $r $m: $a$ra | $b$rb | torch$t" >&2
  done
  x=$(med "$ra") y=$(med "$rb") z=$(med "$t")
  printf '%-6s | %9.1f %9.1f %9.1f | %7.3fx %7.2fx\n' "$m" "$x" "$y" "$z" \
    "$(awk -v p="$x" -v q="$y" 'BEGIN { print p / q }')" "$(awk -v p="$x" -v q="$z" 'BEGIN { print p / q }')"
done
