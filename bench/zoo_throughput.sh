#!/usr/bin/env bash
# Training throughput of every zoo model on the host against the current PyTorch (.venv-peers),
# same model, same data (Fashion-MNIST padded to 3x32x32), batch 64 per rank, Adam:
#   1 rank:  cohort cifar_cnn (2 threads: this machine's cores)  vs  bench/zoo_torch.py --threads 2
#   2 ranks: cohortrun x 2, shm, DDP (1 thread each)             vs  zoo_torch.py --nproc 2 (gloo DDP)
# The sides alternate over ROUNDS rounds; the table prints medians and cohort / torch.
# Both count every step's images over the timed steps (the first step's warm-up included on both
# sides; data loading excluded on PyTorch's, prefetched on cohort's).
#
#   bench/zoo_throughput.sh [ROUNDS] [MODELS...]     (default 3, all models)
set -euo pipefail
# shellcheck source=bench/cpu_line.sh
. "$(dirname "$0")/cpu_line.sh"  # the CPU the figures come from
root=$(cd "$(dirname "$0")/.." && pwd)
py=$root/.venv-peers/bin/python
[ -x "$py" ] || { echo "zoo_throughput: no $py (run tools/setup.sh --peers)" >&2; exit 2; }
rounds=${1:-3}
shift || true
models=("$@")
[ ${#models[@]} -eq 0 ] && models=(cnn_a cnn_b resnet9 resnet50 vit)
declare -A steps=([cnn_a]=60 [cnn_b]=12 [resnet9]=6 [resnet50]=6 [vit]=12)
bin=$root/build/bin
tv=$("$py" -c 'import torch; print(torch.__version__)')
med() { printf '%s\n' $1 | sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
cohort_ips() { sed -nE 's/.*training throughput: ([0-9.]+) images\/s.*/\1/p' | tail -n1; }
torch_ips() { sed -nE 's/^torch images\/s: ([0-9.]+)/\1/p'; }

echo "zoo_throughput: $(date -u +%F), $(nproc) cores ($(lscpu | sed -nE 's/^Model name: +//p')), torch $tv, $rounds rounds, medians"
printf '%-9s %6s | %10s %10s %7s | %10s %10s %7s\n' model steps "1r cohort" "1r torch" ratio "2r cohort" "2r torch" ratio
for m in "${models[@]}"; do
  s=${steps[$m]:-10}
  c1="" t1="" c2="" t2=""
  for r in $(seq "$rounds"); do
    common=(--model "$m" --dataset fashion-mnist --augment 0 --max-steps "$s" --no-eval --log-interval 100000)
    c1="$c1 $(OMP_NUM_THREADS=2 "$bin/cifar_cnn" "${common[@]}" | cohort_ips)"
    t1="$t1 $("$py" "$root/bench/zoo_torch.py" --model "$m" --steps "$s" --threads 2 | torch_ips)"
    c2="$c2 $(OMP_NUM_THREADS=1 "$bin/cohortrun" --nproc-per-node 2 --master-port 0 "$bin/cifar_cnn" "${common[@]}" --comm shm | cohort_ips)"
    t2="$t2 $("$py" "$root/bench/zoo_torch.py" --model "$m" --steps "$s" --threads 1 --nproc 2 | torch_ips)"
  done
  a=$(med "$c1") b=$(med "$t1") c=$(med "$c2") d=$(med "$t2")
  printf '%-9s %6s | %10.1f %10.1f %6.2fx | %10.1f %10.1f %6.2fx\n' "$m" "$s" "$a" "$b" \
    "$(awk -v x="$a" -v y="$b" 'BEGIN { print x / y }')" "$c" "$d" "$(awk -v x="$c" -v y="$d" 'BEGIN { print x / y }')"
done
