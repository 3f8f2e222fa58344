#!/usr/bin/env bash
# tools/gpu_check.sh's verdicts and table on a machine without a GPU, in seconds, building nothing:
#
#   tests/tools/test_gpu_check.sh SOURCE_DIR
#
# 1. The verdict functions (tools/gpu_check_lib.sh) against canned ctest and compute-sanitizer
#    logs: gpu tests that skipped (exit 77) are a FAIL counted as not run, never as passed (GPU
#    review G3), nccl entries with more ranks than GPUs are not run but not a FAIL, "Not Run" and
#    Timeout are failures, a log with no test is a FAIL.
# 2. gpu_check.sh end to end with fakes on PATH (nvidia-smi, nvcc, cmake, ctest, compute-sanitizer,
#    python3) and fake programs in the build folder: without a GPU it builds only and exits 0
#    (what CI relies on); with one, a run where every gpu test skipped, one stage times out and
#    compute-sanitizer is missing keeps going through every stage, prints the driver's and the
#    toolkit's versions, and exits 1; stages run one by one add to one table and replace their own
#    rows; the three prepared window calls (--window 1-3) run their stages under their limits; an
#    old driver is a FAIL; bad usage exits 2 naming the argument.
set -uo pipefail
src=${1:?usage: test_gpu_check.sh SOURCE_DIR}
src=$(cd "$src" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
pass() { echo "ok    $1"; }
fail() { echo "FAIL  $1"; fails=$((fails + 1)); }
expect() {  # NAME PATTERN FILE: FILE has a line matching the extended regex PATTERN
  if grep -qE -- "$2" "$3"; then pass "$1"; else fail "$1: no line matching /$2/ in $3:"; sed 's/^/      /' "$3"; fi
}
expect_not() {
  if grep -qE -- "$2" "$3"; then fail "$1: a line matches /$2/ in $3:"; sed 's/^/      /' "$3"; else pass "$1"; fi
}
expect_rc() {  # NAME WANT GOT
  if [ "$2" = "$3" ]; then pass "$1 (exit $3)"; else fail "$1: exit $3, expected $2"; fi
}

# ---- canned ctest logs (ctest 3.25's format) ----
ctest_line() {  # I N NAME STATUS
  printf '    Start %2d: %s\n%d/%d Test #%d: %s %s %s   0.50 sec\n' "$1" "$3" "$1" "$2" "$1" "$3" \
    "$(printf '%*s' $((40 - ${#3})) '' | tr ' ' .)" "$4"
}
gpu_tests=(parity_cuda cuda_modes memory_cuda parallel_ddp_cuda_shm_np2 parallel_ddp_cuda_nccl_np1
           parallel_ddp_cuda_nccl_np2 conformance_nccl_np1 conformance_nccl_np2 conformance_nccl_np3
           conformance_nccl_np4 some_other_np3)
# Every test skipped: ctest itself says 100% passed (the false green of G3).
{
  echo "Test project /b"
  i=0
  for t in "${gpu_tests[@]}"; do i=$((i + 1)); ctest_line $i 11 "$t" "***Skipped"; done
  printf '\n100%% tests passed, 0 tests failed out of 11\n\nThe following tests did not run:\n'
  i=0
  for t in "${gpu_tests[@]}"; do i=$((i + 1)); printf '\t %2d - %s (Skipped)\n' $i "$t"; done
} >"$tmp/all_skipped.log"
# On one GPU: everything passes except the nccl entries that need 2-4 GPUs.
{
  echo "Test project /b"
  i=0
  for t in "${gpu_tests[@]}"; do
    i=$((i + 1))
    case $t in *nccl_np[234]) s="***Skipped" ;; *) s="  Passed" ;; esac
    ctest_line $i 11 "$t" "$s"
  done
  printf '\n100%% tests passed, 0 tests failed out of 11\n\nThe following tests did not run:\n'
  printf '\t  6 - parallel_ddp_cuda_nccl_np2 (Skipped)\n\t  8 - conformance_nccl_np2 (Skipped)\n'
  printf '\t  9 - conformance_nccl_np3 (Skipped)\n\t 10 - conformance_nccl_np4 (Skipped)\n'
} >"$tmp/one_gpu_ok.log"
# A failure, a missing executable, a timeout, and a skip that is not about GPU count.
{
  echo "Test project /b"
  ctest_line 1 5 parity_cuda "  Passed"
  ctest_line 2 5 cuda_modes "***Failed"
  ctest_line 3 5 memory_cuda "***Not Run"
  ctest_line 4 5 parallel_ddp_cuda_shm_np2 "***Timeout"
  ctest_line 5 5 conformance_nccl_np1 "***Skipped"
  printf '\n20%% tests passed, 3 tests failed out of 5\n\nThe following tests did not run:\n'
  printf '\t  5 - conformance_nccl_np1 (Skipped)\n\nThe following tests FAILED:\n'
  printf '\t  2 - cuda_modes (Failed)\n\t  3 - memory_cuda (Not Run)\n\t  4 - parallel_ddp_cuda_shm_np2 (Timeout)\n'
} >"$tmp/mixed.log"
printf 'Test project /b\nNo tests were found!!!\n' >"$tmp/none.log"

# ---- 1. the verdicts ----
# shellcheck source=tools/gpu_check_lib.sh
. "$src/tools/gpu_check_lib.sh"
gc_ctest_verdict "$tmp/all_skipped.log" 1 >"$tmp/v"
expect "all skipped: FAIL, 0 passed, 11 not run" $'^FAIL\t0 passed, 0 failed, 11 not run' "$tmp/v"
expect "all skipped: the skips on one GPU named" 'skipped with a GPU present: parity_cuda, cuda_modes, memory_cuda, parallel_ddp_cuda_shm_np2, parallel_ddp_cuda_nccl_np1, conformance_nccl_np1, some_other_np3;' "$tmp/v"
gc_ctest_verdict "$tmp/all_skipped.log" 4 >"$tmp/v"
expect "all skipped on 4 GPUs: every nccl entry is a skip" 'skipped with a GPU present: .*conformance_nccl_np4' "$tmp/v"
gc_ctest_verdict "$tmp/one_gpu_ok.log" 1 >"$tmp/v"
expect "one GPU: ok, nccl np2-4 not run, not failed" $'^ok\t7 passed, 0 failed, 4 not run \\(need more GPUs than the 1 here: parallel_ddp_cuda_nccl_np2, conformance_nccl_np2, conformance_nccl_np3, conformance_nccl_np4\\)' "$tmp/v"
gc_ctest_verdict "$tmp/mixed.log" 1 >"$tmp/v"
expect "mixed: Not Run and Timeout are failures" $'^FAIL\t1 passed, 3 failed, 1 not run \\(skipped with a GPU present: conformance_nccl_np1\\); failed: cuda_modes \\(Failed\\), memory_cuda \\(Not Run\\), parallel_ddp_cuda_shm_np2 \\(Timeout\\)' "$tmp/v"
gc_ctest_verdict "$tmp/none.log" 1 >"$tmp/v"
expect "no tests: FAIL" $'^FAIL\tno test ran \\(ctest: No tests were found\\)' "$tmp/v"
gc_ctest_verdict "$tmp/absent.log" 1 >"$tmp/v"
expect "no log: FAIL" $'^FAIL\tno ctest log' "$tmp/v"

printf 'x\n========= ERROR SUMMARY: 0 errors\n' >"$tmp/san_ok.log"
printf '========= Invalid __global__ read of size 4 bytes\n=========     at k()\n========= ERROR SUMMARY: 2 errors\n' >"$tmp/san_bad.log"
printf '========= RACECHECK SUMMARY: 0 hazards displayed (0 errors, 0 warnings)\n' >"$tmp/race_ok.log"
printf 'skipped: cohort: no CUDA device\n========= ERROR SUMMARY: 0 errors\n' >"$tmp/san_77.log"
gc_sanitizer_verdict "$tmp/san_ok.log" 0 >"$tmp/v"; expect "memcheck clean: ok" $'^ok\tERROR SUMMARY: 0 errors' "$tmp/v"
gc_sanitizer_verdict "$tmp/race_ok.log" 0 >"$tmp/v"; expect "racecheck clean: ok" $'^ok\tRACECHECK SUMMARY: 0 hazards' "$tmp/v"
gc_sanitizer_verdict "$tmp/san_bad.log" 1 >"$tmp/v"; expect "memcheck errors: FAIL naming the first" $'^FAIL\texit 1; ERROR SUMMARY: 2 errors; first: Invalid __global__ read' "$tmp/v"
gc_sanitizer_verdict "$tmp/san_77.log" 77 >"$tmp/v"; expect "skipped under the sanitizer: FAIL" $'^FAIL\tthe test skipped \\(exit 77\\)' "$tmp/v"
gc_sanitizer_verdict "$tmp/empty" 0 >"$tmp/v"; expect "no summary: FAIL" $'^FAIL\texit 0 but no sanitizer summary' "$tmp/v"
if gc_version_at_least 13.0 13.0 && gc_version_at_least 12.10 12.9 && ! gc_version_at_least 12.4 13.0; then
  pass "version comparison (13.0 >= 13.0, 12.10 >= 12.9, 12.4 < 13.0)"
else
  fail "version comparison"
fi

# ---- 2. end to end, with fakes ----
fake=$tmp/fakebin
mkdir -p "$fake"
calls=$tmp/calls
mk() { cat >"$1"; chmod +x "$1"; }
mk "$fake/nvidia-smi" <<'EOF'
#!/bin/bash
[ "${FAKE_GPU:-0}" = 1 ] || { echo "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver." >&2; exit 9; }
case "${1:-}" in
  --query-gpu=*) echo "NVIDIA H100 80GB HBM3, 580.82.07, 81559 MiB" ;;
  -L) echo "GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-fake)" ;;
  *) echo "| NVIDIA-SMI 580.82.07    Driver Version: 580.82.07    CUDA Version: ${FAKE_DRIVER_CUDA:-13.0}     |" ;;
esac
EOF
mk "$fake/nvcc" <<'EOF'
#!/bin/bash
printf 'nvcc: NVIDIA (R) Cuda compiler driver\nCuda compilation tools, release 13.0, V13.0.88\n'
EOF
mk "$fake/cmake" <<EOF
#!/bin/bash
echo "cmake \$*" >>"$calls"
if [ "\$1" = --build ]; then echo "[1/1] Linking"; exit \${FAKE_BUILD_RC:-0}; fi
echo "--   CUDA: 1 - nvcc 13.0.88 at fake, archs native"
EOF
mk "$fake/ctest" <<EOF
#!/bin/bash
echo "ctest \$*" >>"$calls"
case " \$* " in
  *" -N "*) printf 'Test project /b\n  Test  #5: parallel_ddp_cuda_nccl_np1\n  Test  #7: conformance_nccl_np1\n  Test  #8: conformance_nccl_np2\n' ;;
  *" -L gpu "*) cat "\$FAKE_CTEST_LOG" ;;
  *" -R "*) printf 'Test project /b\n1/2 Test #5: parallel_ddp_cuda_nccl_np1 .....   Passed    1.00 sec\n2/2 Test #7: conformance_nccl_np1 .....   Passed    1.00 sec\n\n100%% tests passed, 0 tests failed out of 2\n' ;;
esac
EOF
mk "$tmp/compute-sanitizer" <<'EOF'
#!/bin/bash
while [ "${1#--}" != "$1" ]; do shift 2; done
"$@"; rc=$?
echo "========= ERROR SUMMARY: 0 errors"
exit $rc
EOF
mk "$fake/python3" <<'EOF'
#!/bin/bash
[ "${FAKE_TORCH:-0}" = 1 ] || { echo "ModuleNotFoundError: No module named 'torch'"; exit 1; }
case "$1" in
  -c) echo "2.9.0+cu130" ;;
  */attention_bench_torch.py) printf 'sdpa 0.500\nmha 1.200\n' ;;
  */conv_bench_torch.py)
    echo "threads 1 path torch-2.9.0 cuda pipelined 20"
    case " $* " in
      *" --cudnn-benchmark "*) printf 'a 0.5000 0.5000 0.5000\nb 0.2500 0.2500 0.2500\n' ;;
      *) printf 'a 1.0000 1.0000 1.0000\nb 1.0000 1.0000 1.0000\n' ;;
    esac ;;
  *) echo "torch images/s: 20000.0" ;;
esac
EOF
build=$tmp/build
mkdir -p "$build/bin"
for b in test_parity test_cuda_modes test_memory_cuda cohort_parallel_tests; do
  mk "$build/bin/$b" <<'EOF'
#!/bin/bash
echo "all ops match"
EOF
done
mk "$build/bin/mnist_cnn" <<'EOF'
#!/bin/bash
# FAKE_MNIST_CUDA_SLEEP: the whole epoch on cuda (the mnist stage's run, no --max-steps) hangs.
case " $* " in *" --device cuda "*) a=87.40 ;; *) a=87.22 ;; esac
case " $* " in *" --device cuda "*" --max-steps "*) ;; *" --device cuda "*) sleep "${FAKE_MNIST_CUDA_SLEEP:-0}" ;; esac
case " $* " in *" --comm nccl "*) echo "cohort mnist_cnn: ... | 1 rank (nccl) x batch 64" ;; esac
case " $* " in *" --comm "*) echo "ranks hold identical weights: yes (digest abc123)" ;; esac
echo "final test accuracy: $a%  training throughput: 25000.0 images/s"
EOF
mk "$build/bin/cifar_cnn" <<'EOF'
#!/bin/bash
# FAKE_AMP_F16_CRASH: a run with --amp f16 prints its schedule line and dies of SIGSEGV.
# FAKE_CALLS: each call's arguments appended to that file.
[ -n "${FAKE_CALLS:-}" ] && echo "cifar_cnn $* (COHORT_CUDNN_LOG=${COHORT_CUDNN_LOG:-})" >>"$FAKE_CALLS"
if [ -n "${FAKE_AMP_F16_CRASH:-}" ]; then
  case " $* " in *" --amp f16 "*) echo "amp f16 with a GradScaler"; kill -SEGV $$ ;; esac
fi
printf 'step 1 loss 2.30\nstep 8 loss 1.90\n'
case " $* " in *" --comm "*) echo "ranks hold identical weights: yes (digest def456)" ;; esac
echo "final test accuracy: 20.00%  training throughput: 9000.0 images/s"
EOF
mk "$build/bin/cohortrun" <<'EOF'
#!/bin/bash
while [ "${1#--}" != "$1" ]; do shift 2; done
exec "$@"
EOF
mk "$build/bin/attention_bench" <<'EOF'
#!/bin/bash
printf 'sdpa 0.250\nmha_fused 1.500\nmha_unfused 2.000\n'
EOF
mk "$build/bin/conv_bench" <<'EOF'
#!/bin/bash
echo "threads 1 path cuda pipelined 20"
if [ "${COHORT_CUDNN_BENCHMARK:-0}" = 1 ]; then
  printf 'a 0.5000 0.5000 0.5000\nb 0.5000 0.5000 0.5000\n'
else
  printf 'a 1.0000 2.0000 3.0000\nb 0.5000 0.5000 0.5000\n'
fi
EOF
mk "$build/bin/layers_bench" <<'EOF'
#!/bin/bash
echo "model 1.50 1.20 1.25x"
EOF
gc="$src/tools/gpu_check.sh"
at=(--deps none --build "$build")
check() {  # [VAR=VALUE...] COMMAND ARGS... with the fakes first on PATH: output in $tmp/out and
           # $tmp/err, exit status in $rc, the fake cmake's and ctest's calls in $calls
  : >"$calls"
  env -u CUDNN_ROOT -u NCCL_ROOT -u GPU_CHECK_TOTAL_S PATH="$fake:/usr/bin:/bin" CUDA_HOME="$tmp/nocuda" \
    "$@" >"$tmp/out" 2>"$tmp/err"
  rc=$?
}

# No GPU (CI): the build stage alone, exit 0, "no GPU"; ctest never called; not built for native.
check FAKE_GPU=0 "$gc" "${at[@]}"
expect_rc "no GPU: exit 0" 0 "$rc"
expect "no GPU: the build row is ok" '^build +configure \+ build \(CUDA\) +ok .*CUDA: 1' "$tmp/out"
expect "no GPU: one row says why nothing else ran" '^gpu +GPU +skipped +no GPU \(nvidia-smi found none\): not run: ctest parity sanitize mnist ddp zoo nccl speed' "$tmp/out"
expect "no GPU: the header names the toolkit" '^gpu: none \(nvidia-smi found none\); toolkit: nvcc 13.0.88' "$tmp/out"
expect_not "no GPU: ctest not run" '^ctest' "$calls"
expect_not "no GPU: not built for native" 'ARCHITECTURES=native' "$calls"
expect "no GPU: the table is in the summary file" '^build +configure \+ build' "$build/gpu_check.txt"
check FAKE_GPU=0 FAKE_BUILD_RC=1 "$gc" "${at[@]}"
expect_rc "no GPU, build broken: exit 1" 1 "$rc"
expect "no GPU, build broken: FAIL row" '^build +configure \+ build \(CUDA\) +FAIL +[0-9]+ +exit 1; see ' "$tmp/out"
check FAKE_GPU=0 "$gc" --deps "$tmp/no-such-deps" --build "$build" --stage build
expect_rc "carried dependencies that do not unpack: exit 1" 1 "$rc"
expect "carried dependencies that do not unpack: FAIL row" "^gpu +unpack $tmp/no-such-deps +FAIL" "$tmp/out"

# A GPU where every gpu test skipped, mnist's cuda run outlives its stage's limit, and
# compute-sanitizer is missing: every stage still runs, exit 1.
t0=$(date +%s)
check FAKE_GPU=1 FAKE_CTEST_LOG="$tmp/all_skipped.log" FAKE_MNIST_CUDA_SLEEP=30 GPU_CHECK_LIMIT_MNIST=2 \
  GPU_CHECK_CMAKE_ARGS="-DX=1 -DY=2" "$gc" "${at[@]}"
expect_rc "GPU, all skipped: exit 1" 1 "$rc"
took=$(( $(date +%s) - t0 ))
if [ "$took" -lt 20 ]; then pass "the timed-out stage was cut at its limit ($took s)"; else fail "the run took $took s"; fi
expect "header: driver, its CUDA and the toolkit" '^gpu: NVIDIA H100 80GB HBM3, 580.82.07, 81559 MiB \(1 visible\); driver 580.82.07, driver.s CUDA 13.0; toolkit: nvcc 13.0.88' "$tmp/out"
expect "driver CUDA 13.0 >= toolkit 13.0: ok" '^gpu +driver CUDA >= toolkit +ok' "$tmp/out"
expect "built for native" '^cmake -S \. .*-DCMAKE_CUDA_ARCHITECTURES=native' "$calls"
expect "GPU_CHECK_CMAKE_ARGS passed to cmake" '^cmake -S \. .* -DX=1 -DY=2( |$)' "$calls"
expect "G3: all skipped is a FAIL counting them as not run" '^ctest +ctest -L gpu +FAIL .*0 passed, 0 failed, 11 not run \(skipped with a GPU present: parity_cuda, ' "$tmp/out"
expect "timeout: a FAIL row naming the limit" "^mnist +mnist 1 epoch cuda vs host +FAIL .*cuda: timed out after 2 s \\(the mnist stage's 2 s limit\\); host: not started: the mnist stage's 2 s limit used up" "$tmp/out"
expect "missing compute-sanitizer: FAIL" '^sanitize +compute-sanitizer +FAIL +not found' "$tmp/out"
expect "keeps going: parity after the ctest FAIL" '^parity +parity table on cuda +ok' "$tmp/out"
expect "keeps going: ddp after the mnist timeout" '^ddp +mnist 2 ranks on one GPU, shm +ok .*digest abc123' "$tmp/out"
expect "keeps going: zoo" '^zoo +zoo vit on cuda +ok +[0-9]+ +loss 2.30 -> loss 1.90' "$tmp/out"
expect "keeps going: 1-rank nccl mnist" '^nccl +mnist 1 rank nccl +ok' "$tmp/out"
expect "1-rank nccl ctest entries found and run" '^nccl +ctest nccl np1 +ok .*parallel_ddp_cuda_nccl_np1, conformance_nccl_np1: 2 passed' "$tmp/out"
expect "keeps going: speed (no torch: skipped)" '^speed +mnist images/s vs torch +skipped +python3 has no torch' "$tmp/out"
expect "footer counts FAIL rows" '^rows: [0-9]+ ok, 3 FAIL, 2 skipped \(not run\), 1 info$' "$tmp/out"

# Stages one by one: each call replaces its own rows and keeps the others'.
cp "$tmp/compute-sanitizer" "$fake/compute-sanitizer"
check FAKE_GPU=1 FAKE_CTEST_LOG="$tmp/all_skipped.log" "$gc" "${at[@]}" --stage all
check FAKE_GPU=1 FAKE_CTEST_LOG="$tmp/one_gpu_ok.log" "$gc" "${at[@]}" --stage ctest
expect_rc "--stage ctest alone, now passing: exit 0" 0 "$rc"
expect "--stage ctest: the new ctest row" '^ctest +ctest -L gpu +ok .*7 passed, 0 failed, 4 not run \(need more GPUs than the 1 here' "$tmp/out"
expect_not "--stage ctest: the old ctest row is gone" '^ctest .*FAIL' "$tmp/out"
expect "--stage ctest: the other stages' rows kept" '^mnist +mnist 1 epoch cuda vs host +ok +[0-9]+ +test accuracy 87.40% vs 87.22%' "$tmp/out"
check FAKE_GPU=1 "$gc" "${at[@]}" --stage sanitize,parity
expect_rc "--stage sanitize,parity: exit 0" 0 "$rc"
expect "sanitize: memcheck row" '^sanitize +memcheck parity +ok .*ERROR SUMMARY: 0 errors' "$tmp/out"
expect "sanitize: racecheck row" '^sanitize +racecheck cuda_modes +ok' "$tmp/out"
expect "sanitize: the parallel tests on cuda" '^sanitize +memcheck ddp_equivalence +ok' "$tmp/out"
expect "stages print in stage order" '^parity' <(grep -E '^(parity|sanitize)' "$tmp/out" | head -n1)
expect "the ctest row of the earlier call is still there" '^ctest +ctest -L gpu +ok' "$tmp/out"
expect "the table is whole: no stage missing" '^rows: [0-9]+ ok, 0 FAIL, 2 skipped \(not run\), [0-9]+ info$' "$tmp/out"
check FAKE_GPU=1 FAKE_TORCH=1 "$gc" "${at[@]}" --stage speed
expect "speed against torch" '^speed +mnist images/s vs torch 2.9.0\+cu130 +ok +[0-9]* +cohort 25000.0 / torch 20000.0 = 1.25x' "$tmp/out"
expect "speed: attention against torch's sdpa" '^speed +attention vs torch sdpa \(ViT shapes\) +info +sdpa op: cohort 0.250 ms, torch 0.500 ms, 2.00x; MultiheadAttention: cohort 1.500 ms, torch 1.200 ms, 0.80x' "$tmp/out"
expect "speed: cuDNN's heuristics and benchmark mode beside torch's" '^speed +conv cudnn benchmark vs torch +info +ms summed over the shapes \(fwd \+ bwd data \+ bwd filter\): heuristics cohort 7.500, torch 6.000 \(0.80x\); benchmark cohort 3.000, torch 2.250 \(0.75x\)' "$tmp/out"
check FAKE_GPU=1 FAKE_AMP_F16_CRASH=1 "$gc" "${at[@]}" --stage zoo
expect "zoo: resnet50 under bf16 trains" '^zoo +zoo resnet50 amp bf16 on cuda +ok' "$tmp/out"
expect "zoo: a crash says how the run ended" '^zoo +zoo resnet50 amp f16 on cuda +FAIL +[0-9]+ +killed by SIGSEGV \(exit 139\), last line: amp f16 with a GradScaler; see ' "$tmp/out"
expect "zoo: the f32 row is separate" '^zoo +zoo resnet50 on cuda +ok' "$tmp/out"
expect "zoo: an autocast row's images/s beside the f32 row's" '^zoo +zoo resnet50 amp bf16 on cuda +ok +[0-9]+ +.* 9000.0 images/s \(1.00x the f32 row.s\)' "$tmp/out"
# The speed stage's f16 rounds stop at the first without a figure (GPU review 2, H3): one cohort
# f16 run, not three, and the row says so.
: >"$tmp/calls"
check FAKE_GPU=1 FAKE_TORCH=1 FAKE_AMP_F16_CRASH=1 FAKE_CALLS="$tmp/calls" "$gc" "${at[@]}" --stage speed
f16_runs=$(grep -c -- '--model resnet50 .*--amp f16' "$tmp/calls")
if [ "$f16_runs" = 1 ]; then pass "speed: one cohort f16 round after a crash"
else fail "speed: $f16_runs cohort f16 rounds after a crash, expected 1"; fi
expect "speed: the f16 row says the later rounds did not run" '^speed +resnet50 amp f16 vs torch autocast\+GradScaler +FAIL .*round 1: killed by SIGSEGV.*f16 rounds 2-3 not run' "$tmp/out"
check FAKE_GPU=1 "$gc" "${at[@]}" --stage mnist --fresh
expect "--fresh: a new table lists the stages not run yet" 'stages not run yet: build ctest parity sanitize ddp zoo nccl speed$' "$tmp/out"

# The three prepared calls of a short window (docs/GPU.md): each runs its stages alone under its
# own limits and total, window 1 with every cuDNN decline logged; together they fill the table but
# for build and sanitize.
: >"$tmp/calls"
check FAKE_GPU=1 FAKE_CALLS="$tmp/calls" "$gc" "${at[@]}" --window 1 --fresh
expect_rc "--window 1: exit 0" 0 "$rc"
expect "--window 1: says its stages, limits and total" '^== window 1: stages parity,zoo, limits parity=60 zoo=150, total 200 s$' "$tmp/out"
expect "--window 1: the parity row" '^parity ' "$tmp/out"
expect "--window 1: the f16 zoo row with its ratio" '^zoo +zoo resnet50 amp f16 on cuda +ok .*x the f32 row.s\)' "$tmp/out"
expect "--window 1: the zoo runs log cuDNN's declines" 'amp f16 .*\(COHORT_CUDNN_LOG=1\)$' "$tmp/calls"
expect_not "--window 1: no other stage ran" '^(ctest|mnist|ddp|nccl|speed|sanitize) ' "$tmp/out"
check FAKE_GPU=1 FAKE_CTEST_LOG="$tmp/one_gpu_ok.log" "$gc" "${at[@]}" --window 2
expect_rc "--window 2: exit 0" 0 "$rc"
expect "--window 2: says its stages" '^== window 2: stages ctest,mnist,ddp,nccl, limits ctest=90 mnist=120 ddp=60 nccl=60, total 240 s$' "$tmp/out"
expect "--window 2: the ctest row" '^ctest +ctest -L gpu +ok' "$tmp/out"
expect "--window 2: window 1's rows kept" '^zoo +zoo resnet50 on cuda +ok' "$tmp/out"
check FAKE_GPU=1 FAKE_TORCH=1 "$gc" "${at[@]}" --window 3
expect_rc "--window 3: exit 1 (the fakes' f16 row is below its 0.9x target)" 1 "$rc"
expect "--window 3: the speed rows" '^speed +mnist images/s vs torch' "$tmp/out"
expect "--window 3: only build and sanitize not run" 'stages not run yet: build sanitize$' "$tmp/out"
check "$gc" --window 1 --stage zoo
expect_rc "--window with --stage" 2 "$rc"; expect "--window with --stage named" '^gpu_check.sh: --window and --stage together' "$tmp/err"
check "$gc" --window 4
expect_rc "--window 4" 2 "$rc"; expect "--window 4 named" "^gpu_check.sh: --window '4': the prepared calls are 1, 2 and 3" "$tmp/err"

# An old driver: the likeliest reason for G3's skips, a FAIL of its own.
check FAKE_GPU=1 FAKE_DRIVER_CUDA=12.4 "$gc" "${at[@]}" --stage parity
expect_rc "old driver: exit 1" 1 "$rc"
expect "old driver: FAIL row" '^gpu +driver CUDA >= toolkit +FAIL +driver 580.82.07 runs CUDA 12.4, older than the toolkit.s 13.0' "$tmp/out"

# Bad usage: exit 2, naming the argument.
check "$gc" --stage bogus
expect_rc "--stage bogus" 2 "$rc"; expect "--stage bogus named" "unknown stage 'bogus'" "$tmp/err"
check "$gc" --stage
expect_rc "--stage without a value" 2 "$rc"; expect "--stage without a value named" '^gpu_check.sh: --stage needs a value' "$tmp/err"
check "$gc" --steps x
expect_rc "--steps x" 2 "$rc"; expect "--steps x named" "^gpu_check.sh: --steps 'x'" "$tmp/err"
check GPU_CHECK_LIMIT_CTEST=soon "$gc" --stage ctest
expect_rc "GPU_CHECK_LIMIT_CTEST=soon" 2 "$rc"; expect "GPU_CHECK_LIMIT_CTEST named" "GPU_CHECK_LIMIT_CTEST='soon'" "$tmp/err"
check "$gc" --frobnicate
expect_rc "unknown option" 2 "$rc"; expect "unknown option named" "unknown argument '--frobnicate'" "$tmp/err"

echo "$fails failure(s)"
[ "$fails" -eq 0 ]
