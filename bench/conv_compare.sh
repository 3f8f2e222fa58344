#!/usr/bin/env bash
# The host's convolution paths next to the current PyTorch, per shape of bench/conv_shapes.txt:
# cohort with oneDNN's primitives (the default), cohort with the shared per-image im2col + GEMM
# (COHORT_HOST_CONV=im2col), and PyTorch (.venv-peers: its CPU convolutions are oneDNN too), each
# forward + backward data + backward filter. The three sides alternate over ROUNDS rounds; the
# table prints the median round's total ms per side and PyTorch's time / cohort's (above 1: cohort
# faster), and which cohort path is faster.
#
#   bench/conv_compare.sh [ROUNDS] [THREADS]      (default 3 rounds, 1 thread on every side)
set -euo pipefail
# shellcheck source=bench/cpu_line.sh
. "$(dirname "$0")/cpu_line.sh"  # the CPU the figures come from
root=$(cd "$(dirname "$0")/.." && pwd)
py=$root/.venv-peers/bin/python
[ -x "$py" ] || { echo "conv_compare: no $py (run tools/setup.sh --peers)" >&2; exit 2; }
rounds=${1:-3}
threads=${2:-1}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
for r in $(seq 1 "$rounds"); do
  COHORT_HOST_CONV=onednn "$root/build/bin/conv_bench" --threads "$threads" >"$out/onednn.$r"
  COHORT_HOST_CONV=im2col "$root/build/bin/conv_bench" --threads "$threads" >"$out/im2col.$r"
  OMP_NUM_THREADS=$threads "$py" "$root/bench/conv_bench_torch.py" --threads "$threads" >"$out/torch.$r"
  echo "conv_compare: round $r done" >&2
done
tv=$(head -1 "$out/torch.1" | sed 's/.*path torch-//')
echo "conv_compare: $(date -u +%F), $(nproc) cores ($(lscpu | sed -nE 's/^Model name: +//p')), $threads thread(s) per side (cohort: $(head -1 "$out/onednn.1" | cut -d' ' -f2)), torch $tv, $rounds rounds, median round; ms = forward + backward data + backward filter"
python3 - "$out" "$rounds" <<'PY'
import sys, statistics
out, rounds = sys.argv[1], int(sys.argv[2])
def load(side):
    per = {}
    for r in range(1, rounds + 1):
        for line in open(f"{out}/{side}.{r}").read().splitlines()[1:]:
            name, f, d, w = line.split()
            per.setdefault(name, []).append((float(f), float(d), float(w)))
    return {n: [statistics.median(x[i] for x in v) for i in range(3)] for n, v in per.items()}
o, i, t = load("onednn"), load("im2col"), load("torch")
print(f"{'shape':<20} {'oneDNN ms':>10} {'im2col ms':>10} {'torch ms':>10} {'torch/oneDNN':>13} {'torch/im2col':>13}  faster cohort path   (oneDNN fwd/bwd-data/bwd-filter vs torch's)")
for n in o:
    so, si, st = sum(o[n]), sum(i[n]), sum(t[n])
    parts = "/".join(f"{t[n][k] / o[n][k]:.2f}" for k in range(3))
    print(f"{n:<20} {so:10.2f} {si:10.2f} {st:10.2f} {st / so:12.2f}x {st / si:12.2f}x  {'oneDNN' if so <= si else 'im2col':<18}  {parts}")
PY
