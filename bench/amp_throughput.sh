#!/usr/bin/env bash
# Mixed precision on the host (issue 33): training images/s with --amp bf16 against cohort's own f32
# and against PyTorch's torch.autocast("cpu", dtype=torch.bfloat16) (.venv-peers), same model, same
# data (Fashion-MNIST; padded to 3x32x32 for the zoo), same batch (64), in one run:
#   mnist          mnist_cnn, 1 thread        vs  bench/mnist_torch.py [--amp bf16] (1 thread)
#   zoo models     cifar_cnn, THREADS threads  vs  bench/zoo_torch.py --threads THREADS [--amp bf16]
# The four sides (cohort f32, cohort bf16, torch f32, torch bf16) alternate over ROUNDS rounds; the
# table prints medians, cohort bf16 / cohort f32 (target >= 1.5 for ResNet9 and ResNet-50) and
# cohort bf16 / torch bf16 (target >= 1.0). Prints the CPU's bf16 flags first: without AVX-512 BF16
# or AMX, --amp bf16 runs in f32 (cohort-doctor's amp line) and the table says so.
#
#   bench/amp_throughput.sh [ROUNDS] [THREADS] [MODELS...]   (default 3 rounds, 2 threads,
#                                                             mnist resnet9 resnet50)
# AMP_STEPS=N overrides every model's step count (the defaults below keep a run short).
set -euo pipefail
# shellcheck source=bench/cpu_line.sh
. "$(dirname "$0")/cpu_line.sh"  # the CPU the figures come from
root=$(cd "$(dirname "$0")/.." && pwd)
py=$root/.venv-peers/bin/python
[ -x "$py" ] || { echo "amp_throughput: no $py (run tools/setup.sh --peers)" >&2; exit 2; }
rounds=${1:-3}
threads=${2:-2}
shift 2 || shift $# || true
models=("$@")
[ ${#models[@]} -eq 0 ] && models=(mnist resnet9 resnet50)
declare -A steps=([mnist]=200 [cnn_a]=60 [cnn_b]=12 [resnet9]=6 [resnet50]=6 [vit]=12)
bin=$root/build/bin
data=/usr/share/datasets/fashion-mnist
tv=$("$py" -c 'import torch; print(torch.__version__)')
med() { printf '%s\n' $1 | sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
cohort_ips() { sed -nE 's/.*training throughput: ([0-9.]+) images\/s.*/\1/p' | tail -n1; }
torch_ips() { sed -nE 's/^torch images\/s: ([0-9.]+).*/\1/p'; }
flags=$(grep -o -w -E 'avx512_bf16|amx_bf16|amx_tile|avx512_fp16' /proc/cpuinfo | sort -u | paste -sd' ')
echo "amp_throughput: $(date -u +%F), $(nproc) cores ($(lscpu | sed -nE 's/^Model name: +//p')), bf16 flags: ${flags:-none}; torch $tv; $rounds rounds, medians, batch 64"
"$bin/cohort-doctor" 2>/dev/null | grep -E '^(ok|WARN) +amp' || true
printf '%-9s %7s %6s | %9s %9s %9s %9s | %11s %11s %10s\n' model threads steps "cohort32" "cohort16" "torch32" "torch16" "c16/c32" "c16/t16" "t16/t32"
for m in "${models[@]}"; do
  s=${AMP_STEPS:-${steps[$m]:-10}}
  c32="" c16="" t32="" t16=""
  th=$threads
  [ "$m" = mnist ] && th=1  # the PyTorch example's peer runs one thread
  for r in $(seq "$rounds"); do
    for amp in off bf16; do
      if [ "$m" = mnist ]; then
        c=$(OMP_NUM_THREADS=1 "$bin/mnist_cnn" --epochs 1 --max-steps "$s" --data "$data" --log-interval 100000 --amp "$amp" | cohort_ips)
        t=$(OMP_NUM_THREADS=1 "$py" "$root/bench/mnist_torch.py" --steps "$s" --data "$data" --amp "$amp" | torch_ips)
      else
        c=$(OMP_NUM_THREADS=$th "$bin/cifar_cnn" --model "$m" --dataset fashion-mnist --augment 0 --max-steps "$s" --no-eval --log-interval 100000 --amp "$amp" | cohort_ips)
        t=$("$py" "$root/bench/zoo_torch.py" --model "$m" --steps "$s" --threads "$th" --amp "$amp" | torch_ips)
      fi
      if [ "$amp" = off ]; then c32="$c32 $c"; t32="$t32 $t"; else c16="$c16 $c"; t16="$t16 $t"; fi
    done
  done
  a=$(med "$c32") b=$(med "$c16") c=$(med "$t32") d=$(med "$t16")
  ratio() { awk -v x="$1" -v y="$2" 'BEGIN { printf "%.2fx", x / y }'; }
  printf '%-9s %7s %6s | %9.1f %9.1f %9.1f %9.1f | %11s %11s %10s\n' "$m" "$th" "$s" "$a" "$b" "$c" "$d" \
    "$(ratio "$b" "$a")" "$(ratio "$b" "$d")" "$(ratio "$d" "$c")"
done
