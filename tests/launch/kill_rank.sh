# kill_rank_check LABEL JOB_PID LOG RANK_VAR: once the job's log shows training (at most 60 s),
# SIGKILLs this test's mnist_cnn process whose environment has RANK_VAR=1 (rank 1 as the launcher
# numbers it), then requires the job (JOB_PID, a child of the caller) to end non-zero within 5 s.
# Prints one "ok" or "FAIL" line; returns 0 or 1. Sourced by the launcher tests.
#
# "This test's" processes: another suite on the same machine runs mnist_cnn too (its examples, its
# own launcher tests), and must neither be killed nor counted here. Sourcing this file exports
# COHORT_TEST_JOB, a name of this test's own; every job started afterwards carries it in its
# environment through the launchers (cohortrun, srun, torchrun; mpirun is given -x), and
# own_mnist_pids lists only the mnist_cnn processes that carry it.
export COHORT_TEST_JOB="$(basename "$0" .sh).$$"

own_mnist_pids() {
  local p
  for p in $(pgrep -x mnist_cnn); do
    # The braces: a process gone meanwhile makes the redirection itself fail, quietly.
    grep -qxF "COHORT_TEST_JOB=$COHORT_TEST_JOB" < <({ tr '\0' '\n' <"/proc/$p/environ"; } 2>/dev/null) &&
      echo "$p"
  done
}

kill_rank_check() {
  local label=$1 job=$2 log=$3 var=$4 victim="" p t0 rc dt guard
  for _ in $(seq 1 300); do
    grep -q "loss" "$log" 2>/dev/null && break
    sleep 0.2
  done
  for p in $(own_mnist_pids); do
    grep -qx "$var=1" < <(tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null) && { victim=$p; break; }
  done
  if [ -z "$victim" ]; then
    echo "FAIL  $label: no mnist_cnn with $var=1 found"
    kill -9 "$job" 2>/dev/null
    return 1
  fi
  # The test's own limit. Its output goes nowhere, and its sleep is stopped below: a sleep left
  # holding the test's stdout would keep ctest waiting for the full minute.
  ( sleep 60; kill -9 "$job" 2>/dev/null ) >/dev/null 2>&1 &
  guard=$!
  t0=$(date +%s.%N)
  kill -9 "$victim"
  wait "$job"
  rc=$?
  dt=$(echo "$(date +%s.%N) - $t0" | bc)
  pkill -P "$guard" 2>/dev/null
  kill "$guard" 2>/dev/null
  own_mnist_pids | xargs -r kill -9 2>/dev/null  # leave nothing behind, whatever the launcher did
  if [ "$rc" -ne 0 ] && [ "$(echo "$dt < 5" | bc)" = 1 ]; then
    printf 'ok    %s: rank 1 (pid %s) killed, the job ended with exit %s after %.2f s\n' "$label" "$victim" "$rc" "$dt"
    return 0
  fi
  printf 'FAIL  %s: rank 1 killed, the job ended with exit %s after %.2f s (want non-zero within 5 s)\n' "$label" "$rc" "$dt"
  return 1
}

# signal_at LOG STEP RANK SIG: once LOG shows "step STEP/$steps" (the caller's $steps: the job's
# --max-steps), sends SIG to this test's mnist_cnn whose RANK is RANK and prints its pid; the
# elastic tests' fault injection.
signal_at() {
  local log=$1 step=$2 rank=$3 sig=$4 p
  for _ in $(seq 1 1200); do
    grep -q "step $step/$steps" "$log" 2>/dev/null && break
    sleep 0.05
  done
  for p in $(own_mnist_pids); do
    if grep -qx "RANK=$rank" < <(tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null); then
      kill "-$sig" "$p"
      echo "$p"
      return 0
    fi
  done
  echo "no rank $rank to signal" >&2
  return 1
}
