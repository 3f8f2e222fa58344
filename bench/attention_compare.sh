#!/usr/bin/env bash
# Attention at the ViT's shapes (batch 64, 65 tokens, E = 256, 8 heads), forward + backward,
# cohort (bench/attention_bench.cpp) next to PyTorch (bench/attention_bench_torch.py), alternating
# for ROUNDS rounds in one run; prints each row's median over the rounds and the ratios
# PyTorch time / cohort time (above 1: cohort faster). PyTorch is .venv-peers' (tools/setup.sh
# --peers) when it exists, else Debian's; PYTHON=... picks another.
#
#   bench/attention_compare.sh [BUILD_DIR] [ROUNDS] [THREADS]
set -euo pipefail
# shellcheck source=bench/cpu_line.sh
. "$(dirname "$0")/cpu_line.sh"  # the CPU the figures come from
build="${1:-build}"
rounds="${2:-3}"
threads="${3:-1}"
here="$(cd "$(dirname "$0")" && pwd)"
py="${PYTHON:-$here/../.venv-peers/bin/python}"
[ -x "$py" ] || py=/usr/bin/python3
export OMP_NUM_THREADS="$threads" OPENBLAS_NUM_THREADS="$threads"
tv=$("$py" -c 'import torch; print(torch.__version__)')
declare -A c t
for r in $(seq 1 "$rounds"); do
  while read -r name ms; do c[$name]+=" $ms"; done < <("$build/bin/attention_bench" --threads "$threads")
  while read -r name ms; do t[$name]+=" $ms"; done < <("$py" "$here/attention_bench_torch.py" --threads "$threads")
  echo "round $r: cohort sdpa${c[sdpa]} fused${c[mha_fused]} unfused${c[mha_unfused]} | torch sdpa${t[sdpa]} mha${t[mha]}" >&2
done
med() { printf '%s\n' $1 | sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
echo "attention_compare: $(date -u +%F), $(lscpu | sed -nE 's/^Model name: +//p'), $threads thread(s), torch $tv, $rounds rounds, medians (ms, forward + backward)"
printf '%-34s %10s %10s %8s\n' "row" "cohort" "torch" "ratio"
row() {  # label, cohort row, torch row
  local a b
  a=$(med "${c[$2]}") b=$(med "${t[$3]}")
  printf '%-34s %10.2f %10.2f %7.2fx\n' "$1" "$a" "$b" "$(awk -v x="$a" -v y="$b" 'BEGIN { print y / x }')"
}
row "sdpa op vs F.sdpa" sdpa sdpa
row "MultiheadAttention, fused" mha_fused mha
row "MultiheadAttention, unfused" mha_unfused mha
