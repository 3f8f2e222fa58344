#!/bin/sh
# A stand-in training program for test_cohort_swap.sh: rank 0 writes the run report cohort-swap
# reads, with figures the test controls through the environment (the backend entries'
# +VAR=VALUE): FAKE_DIGEST, FAKE_BACKEND, FAKE_WORLD, FAKE_SAME, FAKE_VARY, FAKE_EXIT; images/s is
# 100 x this cell's run number (a counter file per backend in FAKE_DIR), so medians are known.
echo "host=${COHORT_HOSTID:-none} comm=$COHORT_COMM"
[ -n "$FAKE_EXIT" ] && { echo "failing on purpose" >&2; exit "$FAKE_EXIT"; }
[ "$RANK" = 0 ] || exit 0
[ -n "$FAKE_NO_REPORT" ] && exit 0
f="$FAKE_DIR/count_${COHORT_COMM}_${WORLD_SIZE}"
n=$(( $(cat "$f" 2>/dev/null || echo 0) + 1 ))
echo "$n" > "$f"
d=${FAKE_DIGEST:-d1g3st}
[ -n "$FAKE_VARY" ] && d="$d$n"
cat > "$COHORT_RUN_REPORT" <<JSON
{"backend": "${FAKE_BACKEND:-$COHORT_COMM}", "world_size": ${FAKE_WORLD:-$WORLD_SIZE},
 "steps": 5, "images_per_s": $((100 * n)), "step_ms": 10, "comm_ms": 2.5, "overlap_ms": 1,
 "final_loss": 0.5, "deterministic": true, "digest": "$d",
 "weights_identical": ${FAKE_SAME:-true}}
JSON
