#!/usr/bin/env bash
# examples/custom_ddp.cpp, the docs' custom-model DDP program, from the user's side:
#   1. it stays within 1.3x the lines of code of its PyTorch twin (examples/custom_ddp_torch.py;
#      blank and comment lines not counted on either side);
#   2. trained on 2 ranks over shm and over ucx it learns (test accuracy >= 80%) and both
#      backends end with the same weights digest;
#   3. started alone with a multi-process backend it refuses, saying how to launch.
# usage: test_custom_ddp.sh CUSTOM_DDP COHORTRUN SOURCE_DIR
set -uo pipefail
bin=$1 run=$2 src=$3
fail() { echo "FAIL: $*" >&2; exit 1; }
cpp=$(grep -v '^\s*//' "$src/examples/custom_ddp.cpp" | grep -cv '^\s*$')
py=$(grep -v '^\s*#' "$src/examples/custom_ddp_torch.py" | grep -cv '^\s*$')
echo "lines of code: custom_ddp.cpp $cpp, custom_ddp_torch.py $py"
[ $((cpp * 10)) -le $((py * 13)) ] || fail "custom_ddp.cpp has $cpp lines, more than 1.3 x $py"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work" || exit 1
declare -A digest
for backend in shm ucx; do
  out=$(COHORT_COMM=$backend OMP_NUM_THREADS=1 timeout 300 "$run" --nproc-per-node 2 --master-port 0 "$bin" 2>&1)
  rc=$?
  echo "$out" | tail -3
  if [ $rc -ne 0 ] && [ $backend = ucx ] && grep -q "not in this build" <<<"$out"; then
    echo "ucx not in this build: compared shm only"; continue
  fi
  [ $rc -eq 0 ] || fail "custom_ddp over $backend exited $rc"
  line=$(echo "$out" | grep -E 'test accuracy [0-9.]+%, weights [0-9a-f]{16}') || fail "no result line over $backend"
  acc=$(echo "$line" | sed -E 's/.*test accuracy ([0-9.]+)%.*/\1/')
  digest[$backend]=$(echo "$line" | sed -E 's/.*weights ([0-9a-f]{16}).*/\1/')
  awk -v a="$acc" 'BEGIN { exit !(a >= 80) }' || fail "accuracy $acc% over $backend is below 80%"
  [ -s custom_ddp.safetensors ] || fail "no checkpoint custom_ddp.safetensors over $backend"
done
if [ -n "${digest[ucx]:-}" ]; then
  [ "${digest[shm]}" = "${digest[ucx]}" ] || fail "shm ${digest[shm]} and ucx ${digest[ucx]} differ"
  echo "shm and ucx: the same weights ${digest[shm]}"
fi

out=$(env -u RANK -u WORLD_SIZE COHORT_COMM=shm "$bin" 2>&1)
rc=$?
echo "$out"
[ $rc -ne 0 ] || fail "COHORT_COMM=shm without a launcher exited 0"
grep -q "started alone" <<<"$out" || fail "the error does not say the process was started alone"
grep -q "cohortrun --nproc-per-node N" <<<"$out" || fail "the error does not say how to launch"
[ "$(echo "$out" | wc -l)" -eq 1 ] || fail "the error is not one line"
echo "PASS"
