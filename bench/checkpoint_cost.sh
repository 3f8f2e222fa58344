#!/usr/bin/env bash
# What a checkpoint every N steps costs (docs/benchmarks/ddp.md "Checkpoint cost"): the same 2-rank
# job with and without --checkpoint-every N, alternating rounds, median training images/s of each
# and their ratio; and per save, how long training was blocked (the copy of weights and optimizer
# state into host memory, plus any wait for the previous write) and how long the write took in the
# background. Then one run whose rank 1 is SIGKILLed under cohortrun --max-restarts 1, for
# cohortrun's "training again N s after rank 1 died" line.
#   bench/checkpoint_cost.sh [ROUNDS] [MNIST_STEPS] [RESNET50_STEPS]    (default 3 300 100)
set -uo pipefail
# shellcheck source=bench/cpu_line.sh
. "$(dirname "$0")/cpu_line.sh"  # the CPU the figures come from
rounds=${1:-3} msteps=${2:-300} rsteps=${3:-100} every=50
root=$(cd "$(dirname "$0")/.." && pwd)
bin=$root/build/bin
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export OMP_NUM_THREADS=1
cpu=$(sed -n 's/^model name\s*: //p' /proc/cpuinfo | head -1)
flags=$(grep -m1 '^flags' /proc/cpuinfo | grep -oE 'avx512[a-z_0-9]*|amx[a-z_0-9]*|avx2' | sort -u | tr '\n' ' ')
echo "checkpoint_cost: $(date -u +%F) on $(getconf _NPROCESSORS_ONLN) cores ($cpu; $flags), 2 ranks x 1 thread, shm;"
echo "  every $every steps, $rounds alternating rounds, medians; disk: $(df -h "$work" | awk 'NR == 2 { print $1 }')"
median() { printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
ips_of() { sed -n 's/.*training throughput: \([0-9.]*\) images\/s.*/\1/p' "$1" | tail -n1; }
# Mean blocked and background ms over the saves of a log ("training blocked X ms ... written in Y ms").
saves_of() {
  sed -n 's/.*(\([0-9.]* MB\)): training blocked \([0-9.]*\) ms .* written in \([0-9.]*\) ms.*/\1 \2 \3/p' "$1" |
    awk '{ n++; mb = $1 " " $2; b += $3; w += $4; if ($3 > bmax) bmax = $3 }
         END { if (n) printf "%d saves of %s: blocked %.1f ms mean (max %.1f), background %.0f ms mean", n, mb, b / n, bmax, w / n }'
}
measure() {  # name, program args...
  local name=$1
  shift
  local off=() on=()
  for r in $(seq 1 "$rounds"); do
    "$bin/cohortrun" --nproc-per-node 2 --master-port 0 "$@" >"$work/$name.off.$r.log" 2>&1 ||
      { echo "FAIL $name (no checkpoints), round $r"; tail -n 3 "$work/$name.off.$r.log"; return; }
    rm -rf "$work/ck"
    "$bin/cohortrun" --nproc-per-node 2 --master-port 0 "$@" --checkpoint-dir "$work/ck" \
      --checkpoint-every $every >"$work/$name.on.$r.log" 2>&1 ||
      { echo "FAIL $name (checkpoints), round $r"; tail -n 3 "$work/$name.on.$r.log"; return; }
    off+=("$(ips_of "$work/$name.off.$r.log")")
    on+=("$(ips_of "$work/$name.on.$r.log")")
  done
  local mo mn
  mo=$(median "${off[@]}")
  mn=$(median "${on[@]}")
  printf '%-34s none %s img/s (median %s) | every %d: %s (median %s) | ratio %s, cost %s%%\n' "$name" \
    "${off[*]}" "$mo" "$every" "${on[*]}" "$mn" \
    "$(awk -v a="$mn" -v b="$mo" 'BEGIN { printf "%.3f", a / b }')" \
    "$(awk -v a="$mn" -v b="$mo" 'BEGIN { printf "%.1f", 100 * (1 - a / b) }')"
  echo "  $(saves_of "$work/$name.on.$rounds.log")"
}
measure "mnist_cnn ($msteps steps, Adadelta)" "$bin/mnist_cnn" --comm shm --epochs 1 \
  --max-steps "$msteps" --log-interval 100000 --test-batch-size 1000
measure "resnet50 ($rsteps steps x 8, Adam)" "$bin/resnet50_tinyimagenet" --comm shm --synthetic \
  --no-eval --batch-size 8 --max-steps "$rsteps" --log-interval 100000

# Death to training again, as cohortrun reports it.
. "$root/tests/launch/kill_rank.sh"
rm -rf "$work/ck"
"$bin/cohortrun" --nproc-per-node 2 --master-port 0 --max-restarts 1 "$bin/mnist_cnn" --comm shm \
  --epochs 1 --max-steps 200 --log-interval 1 --test-batch-size 1000 --checkpoint-dir "$work/ck" \
  --checkpoint-every $every >"$work/kill.log" 2>&1 &
job=$!
for _ in $(seq 1 600); do grep -q "step 120/200" "$work/kill.log" 2>/dev/null && break; sleep 0.05; done
for p in $(own_mnist_pids); do
  grep -qx RANK=1 < <(tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null) && { kill -9 "$p"; break; }
done
wait "$job"
echo "mnist_cnn, rank 1 SIGKILLed at step ~120 under cohortrun --max-restarts 1 (exit $?):"
grep -E "^cohortrun: (rank|training again)" "$work/kill.log" | sed 's/^/  /'
