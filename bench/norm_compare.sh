#!/usr/bin/env bash
# Batch norm in training (forward + backward) at the zoo ResNet-50's shapes (bench/norm_shapes.txt)
# on the host next to the current PyTorch (.venv-peers), the two alternating over ROUNDS rounds.
# Prints per shape the median round's ms on each side and PyTorch's time / cohort's (above 1:
# cohort faster), then both sides weighed by how many layers of each shape one ResNet-50 step runs.
#
#   bench/norm_compare.sh [ROUNDS] [THREADS]      (default 3 rounds, 2 threads on each side)
set -euo pipefail
# shellcheck source=bench/cpu_line.sh
. "$(dirname "$0")/cpu_line.sh"  # the CPU the figures come from
root=$(cd "$(dirname "$0")/.." && pwd)
py=$root/.venv-peers/bin/python
[ -x "$py" ] || { echo "norm_compare: no $py (run tools/setup.sh --peers)" >&2; exit 2; }
[ -x "$root/build/bin/norm_bench" ] || { echo "norm_compare: build/bin/norm_bench not built" >&2; exit 2; }
rounds=${1:-3}
threads=${2:-2}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
for r in $(seq 1 "$rounds"); do
  OMP_NUM_THREADS=$threads "$root/build/bin/norm_bench" --threads "$threads" >"$out/cohort.$r"
  OMP_NUM_THREADS=$threads "$py" "$root/bench/norm_bench_torch.py" --threads "$threads" >"$out/torch.$r"
done
echo "norm_compare: $(date -u +%F), $(nproc) cores ($(lscpu | sed -nE 's/^Model name: +//p')), $threads thread(s) per side, $(head -1 "$out/torch.1" | cut -d' ' -f2), $rounds rounds, medians; ms = forward + backward"
python3 - "$out" "$rounds" "$root/bench/norm_shapes.txt" <<'PY'
import sys, statistics
out, rounds, shapes = sys.argv[1], int(sys.argv[2]), sys.argv[3]
def load(side):
    per = {}
    for r in range(1, rounds + 1):
        for line in open(f"{out}/{side}.{r}").read().splitlines()[1:]:
            name, ms = line.split()
            per.setdefault(name, []).append(float(ms))
    return {n: statistics.median(v) for n, v in per.items()}
c, t = load("cohort"), load("torch")
count = {l.split()[0]: int(l.split()[5]) for l in open(shapes) if l.strip() and not l.startswith("#")}
print(f"{'shape':<14} {'layers':>6} {'cohort ms':>10} {'torch ms':>10} {'torch/cohort':>13}")
for n in c:
    print(f"{n:<14} {count[n]:6d} {c[n]:10.3f} {t[n]:10.3f} {t[n] / c[n]:12.2f}x")
sc, st = sum(c[n] * count[n] for n in c), sum(t[n] * count[n] for n in c)
print(f"{'per step':<14} {sum(count.values()):6d} {sc:10.3f} {st:10.3f} {st / sc:12.2f}x")
PY
