#!/usr/bin/env bash
# Builds the libFuzzer targets (tests/fuzz/) with clang into build-fuzz/ and runs each for a
# bounded time, starting from the committed seed corpus. Fails when a target finds a crash, a
# leak, undefined behaviour or a hang; the input is then saved as build-fuzz/findings/<target>/.
#
#   tools/fuzz.sh [SECONDS_PER_TARGET]     (default 60; CI runs it from .ci/run)
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-60}
command -v clang++ >/dev/null || { echo "fuzz: clang++ missing (tools/setup.sh installs clang)"; exit 1; }
san="-fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer"
cmake -S . -B build-fuzz -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1 -DNDEBUG" \
  -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ -DCOHORT_ENABLE_CUDA=OFF \
  -DCOHORT_BUILD_TESTS=OFF -DCOHORT_BUILD_BENCH=OFF -DCOHORT_BUILD_EXAMPLES=OFF -DCOHORT_FUZZ=ON \
  -DCMAKE_CXX_FLAGS="$san" -DCMAKE_C_FLAGS="$san" \
  -DCMAKE_EXE_LINKER_FLAGS="-fsanitize=address,undefined" \
  -DCMAKE_SHARED_LINKER_FLAGS="-fsanitize=address,undefined" >build-fuzz.log 2>&1 ||
  { cat build-fuzz.log; exit 1; }
cmake --build build-fuzz --target fuzz_idx fuzz_cifar fuzz_safetensors fuzz_store fuzz_image >>build-fuzz.log 2>&1 ||
  { tail -n 40 build-fuzz.log; exit 1; }
# One target per CPU at a time (libFuzzer is single-threaded): the same seconds per target, CI's
# wall time divided by the CPUs (5 targets x 30 s took 150 s one at a time on 2 cores).
fuzz_one() {  # fuzz_one TARGET: runs it, writes build-fuzz/fuzz_TARGET.{log,verdict}
  local t=$1 work=build-fuzz/corpus/$1 findings=build-fuzz/findings/$1
  mkdir -p "$work" "$findings"
  # -timeout: one input taking longer than 10 s is a hang; -rss_limit_mb bounds memory.
  if ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
     build-fuzz/bin/fuzz_$t -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 \
       -artifact_prefix="$findings/" -print_final_stats=1 "$work" "tests/fuzz/corpus/$t" \
       >"build-fuzz/fuzz_$t.log" 2>&1; then
    local runs cov
    runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "build-fuzz/fuzz_$t.log")
    cov=$(grep -o 'cov: [0-9]*' "build-fuzz/fuzz_$t.log" | tail -n1)
    echo "fuzz $t: ok, $runs inputs in ${secs} s, $cov, corpus $(ls "$work" | wc -l) files" \
      >"build-fuzz/fuzz_$t.verdict"
  else
    { echo "fuzz $t: FAILED (inputs in $findings/):"
      grep -E "ERROR|SUMMARY|abort|threw" "build-fuzz/fuzz_$t.log" | head -n 20; } \
      >"build-fuzz/fuzz_$t.verdict"
    return 1
  fi
}
jobs_at_once=$(nproc 2>/dev/null || echo 1)
targets=(idx cifar safetensors store image)
status=0
for ((i = 0; i < ${#targets[@]}; i += jobs_at_once)); do
  pids=()
  for t in "${targets[@]:i:jobs_at_once}"; do
    fuzz_one "$t" &
    pids+=($!)
  done
  for p in "${pids[@]}"; do wait "$p" || status=1; done
done
for t in "${targets[@]}"; do cat "build-fuzz/fuzz_$t.verdict"; done
exit $status
