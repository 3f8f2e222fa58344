#!/usr/bin/env bash
# test_nccl_no_gpu.sh BENCH HAVE_NCCL: asking for the nccl backend on a machine without a GPU (or
# in a build without NCCL) must end at once, with a non-zero status and an error that says why and
# which backends this group can use instead. Tried both ways a user asks: --comm nccl and
# COHORT_COMM=nccl, one rank. Exits 77 (skipped) where a GPU is visible and nccl actually ran.
set -uo pipefail
bench=$1
have_nccl=$2
if [ "$have_nccl" = 1 ]; then
  want="communicator backend 'nccl' from (the argument|COHORT_COMM) is not available for rank 0 of 1 .*: no GPU visible to this process \(.*\) \(available for this group: self, shm"
else
  want="communicator backend 'nccl' from (the argument|COHORT_COMM) is not in this build \(this library was built without NCCL/CUDA; available in this build: "
fi
status=0
for how in flag env; do
  unset COHORT_COMM MASTER_ADDR MASTER_PORT LOCAL_RANK LOCAL_WORLD_SIZE
  export RANK=0 WORLD_SIZE=1
  start=$(date +%s)
  if [ $how = flag ]; then
    out=$("$bench" --comm nccl -b 8 -e 8 -n 1 -w 0 2>&1)
  else
    out=$(COHORT_COMM=nccl "$bench" -b 8 -e 8 -n 1 -w 0 2>&1)
  fi
  rc=$?
  elapsed=$(( $(date +%s) - start ))
  echo "--- $how (exit status $rc, ${elapsed} s):"
  echo "$out"
  if [ $rc -eq 0 ] && grep -q "backend nccl" <<<"$out"; then
    echo "skipped: a GPU is visible and nccl ran"
    exit 77
  fi
  if [ $rc -eq 0 ]; then echo "FAILED: exit status 0"; status=1; fi
  if ! grep -Eq -- "$want" <<<"$out"; then echo "FAILED: no line matches: $want"; status=1; fi
  if [ $elapsed -gt 10 ]; then echo "FAILED: took ${elapsed} s, not at once"; status=1; fi
done
exit $status
