#!/usr/bin/env bash
# The cost model end to end on hier across 2 simulated hosts x 2 ranks (COHORT_HOSTID per rank):
# cohort-bench --calibrate writes the model; --model prints every algorithm's prediction and the
# pick next to the measured rows; COHORT_HIER_ALGO=auto all-reduces by the model's pick with every
# result checked; the per-op terms come from hier and from ucx's three forced algorithms into one
# file; a model from another job
# size, a missing model, a bad COHORT_HIER_ALGO and calibrating a model-chosen hier are refused
# naming what is wrong.
#
#   test_hier_model.sh BIN_DIR AS_HOSTS_SH
set -uo pipefail
bin=$1 as_hosts=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail=0
run() {  # NP PER-HOST ARGS...: cohort-bench on NP ranks, PER-HOST ranks per simulated host
  local np=$1 per=$2
  shift 2
  COHORT_COMM=${COMM:-hier} timeout 120 "$bin/cohortrun" --nproc-per-node "$np" --master-port 0 \
    "$as_hosts" "$per" "$bin/cohort-bench" "$@" 2>&1
}
check() {  # NAME STATUS: ok or FAIL
  if [ "$2" = 0 ]; then echo "ok    $1"; else echo "FAIL  $1"; fail=1; fi
}

out=$(run 4 2 --calibrate "$work/m.txt")
grep -q "^world 4$" "$work/m.txt" && grep -q "^hosts 2$" "$work/m.txt" &&
  grep -q "^inter_beta_ns_per_byte [0-9.]*$" "$work/m.txt" &&
  [ "$(grep -c "^intra_us_at " "$work/m.txt")" = 11 ] &&
  [ "$(grep -c "^inter_us_at " "$work/m.txt")" = 11 ] &&
  [ "$(grep -c "^inter_shared_us_at " "$work/m.txt")" = 11 ] &&
  grep -q "^intra_us_at 8 " "$work/m.txt" && grep -q "^intra_us_at 16777216 " "$work/m.txt" &&
  grep -q "^inter_us_at 8 " "$work/m.txt" && grep -q "^inter_us_at 16777216 " "$work/m.txt" &&
  grep -q "^inter_shared_us_at 16 " "$work/m.txt" &&
  grep -q "^inter_shared_us_at 33554432 " "$work/m.txt"
rc=$?  # before the message's own command substitutions, which set $? again
check "--calibrate wrote the model ($(grep -c . "$work/m.txt") lines: 11 sizes per link; the shared inter-host link's at twice the bytes, 2 ranks crossing at once): $(grep alpha "$work/m.txt" | tr '\n' ' ')" $rc

# The per-op terms: hier measures hier_op_us (its all-reduce of one float per rank less its stages' times;
# negative when the links' exchanges alone cost more than those steps); --calibrate-op on flat
# ucx then adds each forced algorithm's term against the same links and keeps the rest.
hier_op=$(sed -n 's/^hier_op_us //p' "$work/m.txt")
[[ "$hier_op" =~ ^-?[0-9]+\.[0-9]{4}$ ]] && ! grep -qE "^(flat|ring|rd|rab)_op_us" "$work/m.txt" &&
  grep -q "hier_op_us from its all-reduce of one float per rank" "$work/m.txt"
check "--calibrate on hier: hier_op_us $hier_op, no flat term (not measured)" $?
links=$(grep -E "^(intra|inter)_" "$work/m.txt")
ops=""
for algo in rd ring rab; do
  out=$(COHORT_UCX_ALLREDUCE=$algo COMM=ucx run 4 2 --calibrate-op "$work/m.txt")
  ops="$ops $algo $(sed -n "s/^${algo}_op_us //p" "$work/m.txt")"
done
[[ "$ops" =~ ^\ rd\ -?[0-9.]+\ ring\ -?[0-9.]+\ rab\ -?[0-9.]+$ ]] && grep -q "^hier_op_us $hier_op$" "$work/m.txt" &&
  [ "$(grep -E "^(intra|inter)_" "$work/m.txt")" = "$links" ] &&
  grep -q "rab_op_us from ucx (--calibrate-op)" "$work/m.txt"
check "--calibrate-op on ucx with COHORT_UCX_ALLREDUCE=rd, ring, rab: op terms (us)$ops; links and hier_op_us kept" $?
out=$(COMM=ucx run 2 1 --calibrate-op "$work/m.txt")
[ $? -ne 0 ] && grep -q "calibrated on 4 ranks on 2 host(s); this job has 2 ranks" <<<"$out"
check "--calibrate-op on another job size is refused, naming both" $?
out=$(COHORT_HIER_ALGO=auto COHORT_COST_MODEL="$work/m.txt" run 4 2 --calibrate "$work/m2.txt")
[ $? -ne 0 ] && grep -q "picks per size: unset both" <<<"$out" && [ ! -e "$work/m2.txt" ]
check "--calibrate on hier choosing by a model is refused (it times no one algorithm)" $?

out=$(run 4 2 --model "$work/m.txt" -b 8 -e 4M -f 16 -n 3 -w 1)
rows=$(echo "$out" | grep -cE '^\[rank 0\] +[0-9]+ .* (ring|recursive_doubling|rabenseifner|hierarchical)$')
grep -q "Out of bounds values : 0 OK" <<<"$out" && [ "$rows" = 5 ]
check "--model: $rows rows with 4 predictions and a pick each" $?

out=$(COHORT_HIER_ALGO=auto COHORT_COST_MODEL="$work/m.txt" run 4 2 -b 8 -e 4M -f 16 -n 3 -w 1 -o avg)
grep -q "Out of bounds values : 0 OK" <<<"$out"
check "COHORT_HIER_ALGO=auto: the model's picks, every result right" $?

out=$(COHORT_HIER_ALGO=flat run 4 2 -b 8 -e 1M -f 64 -n 3 -w 1)
grep -q "Out of bounds values : 0 OK" <<<"$out"
check "COHORT_HIER_ALGO=flat: every result right" $?

out=$(run 2 1 --model "$work/m.txt" -b 8 -e 8)
[ $? -ne 0 ] && grep -q "calibrated on 4 ranks on 2 host(s); this job has 2 ranks on 2 host(s)" <<<"$out"
check "a model from another job size is refused, naming both" $?

out=$(COHORT_HIER_ALGO=auto run 4 2 -b 8 -e 8)
[ $? -ne 0 ] && grep -q "COHORT_HIER_ALGO=auto needs COHORT_COST_MODEL=FILE" <<<"$out"
check "auto without a model says how to make one" $?

out=$(COHORT_HIER_ALGO=fastest run 4 2 -b 8 -e 8)
[ $? -ne 0 ] && grep -q "COHORT_HIER_ALGO='fastest' must be hierarchical, flat or auto" <<<"$out"
check "a bad COHORT_HIER_ALGO is named" $?
exit $fail
