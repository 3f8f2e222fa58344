#!/usr/bin/env bash
# A model that does not fit a rank's memory under DDP trains under ZeRO stage 3 (issue 54): with
# the host allocator capped at 250 MiB per process (COHORT_HOST_MEMORY_LIMIT), ResNet-50 + Adam
# at 4 ranks fails under DDP (parameters 90 MiB + Adam's 180 MiB, the gradients besides in the
# communicator's buckets) with the allocator's out-of-memory error naming the cap, and trains
# under --zero-stage 3 (16P/n = 90 MiB a rank, 176 MiB at a step's peak); a cap that is no size
# is refused by name.
# usage: test_memory_cap.sh ZERO_MEMORY COHORTRUN
set -uo pipefail
bench=$1 run=$2
fail() { echo "FAIL: $*" >&2; exit 1; }
launch() {  # launch STAGE: the bench's 3 steps at 4 ranks under the cap
  COHORT_HOST_MEMORY_LIMIT=250M COHORT_COMM=shm OMP_NUM_THREADS=1 timeout 120 \
    "$run" --nproc-per-node 4 --master-port 0 --kill-grace 2 "$bench" resnet50 "$1" 2>&1
}
out=$(launch 0)
rc=$?
[ $rc != 0 ] || fail "DDP under a 250 MiB cap exited 0: $out"
grep -q "out of memory on host (limited to 262144000 bytes by COHORT_HOST_MEMORY_LIMIT)" <<<"$out" ||
  fail "DDP under the cap: no out-of-memory error naming it: $out"
out=$(launch 3) || fail "--zero-stage 3 under a 250 MiB cap exited $?: $out"
rows=$(grep -c "| resnet50 | 4 | ZeRO-3 |" <<<"$out")
[ "$rows" = 4 ] || fail "--zero-stage 3: $rows of 4 ranks reported: $out"
out=$(COHORT_HOST_MEMORY_LIMIT=lots "$bench" resnet50 0 2>&1)
rc=$?
[ $rc = 1 ] && grep -q "COHORT_HOST_MEMORY_LIMIT='lots' is not a memory size" <<<"$out" ||
  fail "COHORT_HOST_MEMORY_LIMIT=lots: exit $rc, $out"
echo "ok: ResNet-50 + Adam at 4 ranks under a 250 MiB cap: DDP out of memory, ZeRO stage 3 trains"
