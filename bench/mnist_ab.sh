#!/usr/bin/env bash
# The MNIST CNN from two builds side by side (A = e.g. the previous commit, B = this one), 1 rank x
# 1 thread and 2 ranks x 1 thread over shm, batch 64 per rank, alternating A and B for ROUNDS
# rounds, then the median images/s of each and the ratio B/A. With --epoch, each side also trains
# one whole epoch once (1 rank and 2 ranks) and prints its test accuracy.
#
#   bench/mnist_ab.sh A_BUILD B_BUILD [STEPS] [ROUNDS] [--epoch]
#
# A build copied away from its tree keeps working: A's own lib/ is put first on LD_LIBRARY_PATH
# (the binaries carry RUNPATH, which that variable overrides).
set -euo pipefail
# shellcheck source=bench/cpu_line.sh
. "$(dirname "$0")/cpu_line.sh"  # the CPU the figures come from
a="$1"; b="$2"; steps="${3:-150}"; rounds="${4:-3}"; epoch="${5:-}"
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1

run() {  # build ranks [extra mnist_cnn flags...] -> prints "images/s accuracy"
  local build="$1" ranks="$2"; shift 2
  local out launch=()
  [ "$ranks" -gt 1 ] && launch=("$build/bin/cohortrun" --nproc-per-node "$ranks")
  out=$(LD_LIBRARY_PATH="$build/lib" "${launch[@]}" "$build/bin/mnist_cnn" \
        $([ "$ranks" -gt 1 ] && echo --comm shm) --epochs 1 --log-interval 1000000 \
        --test-batch-size 1000 "$@" 2>&1)
  printf '%s %s\n' "$(sed -n 's/.*training throughput: \([0-9.]*\) images\/s.*/\1/p' <<<"$out" | head -1)" \
                   "$(sed -n 's/.*final test accuracy: \([0-9.]*\)%.*/\1/p' <<<"$out" | head -1)"
}
median() { sort -g | awk '{v[NR]=$1} END {print (NR%2 ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2)}'; }

declare -A ips
for r in $(seq 1 "$rounds"); do
  for ranks in 1 2; do
    for side in A B; do
      build=$([ "$side" = A ] && echo "$a" || echo "$b")
      v=$(run "$build" "$ranks" --max-steps "$steps" | cut -d' ' -f1)
      ips[$side$ranks]+="$v "
      echo "round $r: $side, $ranks rank(s): $v images/s" >&2
    done
  done
done
printf '%-40s %12s %12s %8s\n' "MNIST CNN, batch 64/rank, $steps steps" "A images/s" "B images/s" "B/A"
for ranks in 1 2; do
  ma=$(tr ' ' '\n' <<<"${ips[A$ranks]}" | grep . | median)
  mb=$(tr ' ' '\n' <<<"${ips[B$ranks]}" | grep . | median)
  printf '%-40s %12.1f %12.1f %8.3f\n' "$ranks rank(s) x 1 thread, median of $rounds" "$ma" "$mb" \
    "$(awk -v a="$ma" -v b="$mb" 'BEGIN{print b/a}')"
done
if [ "$epoch" = --epoch ]; then
  printf '%-40s %12s %12s\n' "one whole epoch" "A img/s acc" "B img/s acc"
  for ranks in 1 2; do
    ra=$(run "$a" "$ranks"); rb=$(run "$b" "$ranks")
    printf '%-40s %12s %12s\n' "$ranks rank(s) x 1 thread" "${ra// /\/}%" "${rb// /\/}%"
  done
fi
