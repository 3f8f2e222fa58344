# Sourced by the A/B benchmarks (sync_bn_compare.sh, zero_compare.sh): alternating rounds of two
# runs of the same job and the medians of their images/s.
#
#   ab_rounds ROUNDS NAME_A NAME_B FUNC_A FUNC_B   runs FUNC_A and FUNC_B ROUNDS times each, A
#                                                  first in odd rounds, B first in even ones; each
#                                                  function prints one images/s figure; then prints
#                                                  both lists, their medians and B / A
#   throughput                                     filter: the Trainer's "training throughput"
throughput() { sed -n 's/.*training throughput: \([0-9.]*\) images\/s.*/\1/p'; }
ab_rounds() {
  local rounds=$1 name_a=$2 name_b=$3 run_a=$4 run_b=$5 r a=() b=()
  for r in $(seq 1 "$rounds"); do
    if [ $((r % 2)) = 1 ]; then
      a+=("$($run_a)"); b+=("$($run_b)")
    else
      b+=("$($run_b)"); a+=("$($run_a)")
    fi
  done
  python3 - "$name_a" "$name_b" "${a[*]}" "${b[*]}" <<'PY'
import statistics, sys
na, nb = sys.argv[1], sys.argv[2]
a = [float(x) for x in sys.argv[3].split()]
b = [float(x) for x in sys.argv[4].split()]
w = max(len(na), len(nb))
print(f"{na:<{w}} images/s: {' '.join(f'{x:.1f}' for x in a)}  median {statistics.median(a):.1f}")
print(f"{nb:<{w}} images/s: {' '.join(f'{x:.1f}' for x in b)}  median {statistics.median(b):.1f}")
print(f"{nb} / {na}: {statistics.median(b) / statistics.median(a):.2f}x")
PY
}
