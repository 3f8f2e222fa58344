#!/usr/bin/env bash
# One command for a GPU machine's first contact: build cohort with CUDA, check it on the GPU, print
# one table (docs/GPU.md).
#
#   tools/gpu_check.sh [--stage LIST | --window N] [--fresh] [--deps DIR|none] [--build DIR]
#                      [--summary FILE] [--steps N]
#
#   --stage LIST    comma-separated stages, run in the order below whatever the order given
#                   (default all):
#                     build     configure and build with CUDA (for this GPU only: native)   570 s
#                     ctest     `ctest -L gpu`; a gpu test that did not run is a FAIL          570 s
#                     parity    the op parity table on cuda                                      90 s
#                     sanitize  compute-sanitizer memcheck and racecheck over the GPU tests    570 s
#                     mnist     one epoch of mnist_cnn on cuda and on the host, direct (0.5 pt) 240 s
#                     ddp       2 ranks sharing the GPU over shm (mnist_cnn, resnet9)          150 s
#                     zoo       every zoo model a few steps on cuda, ResNet-50 also bf16, f16   240 s
#                     nccl      1-rank nccl: mnist_cnn and the np1 nccl ctest entries          150 s
#                     speed     images/s and per-layer times against PyTorch on this GPU
#                               (MNIST f32; attention vs F.sdpa at the ViT's shapes;
#                               ResNet-50 f32 and --amp f16 against autocast),
#                               nccl against nccl-tests when its source was carried           420 s
#   --fresh         start a new table (--stage all always does)
#   --deps DIR      Debian packages carried by `tools/gpu_deps.sh download DIR` (default .gpu when
#                   it exists; none: do not look): unpacked into DIR/prefix, CMAKE_PREFIX_PATH
#   --build DIR     build folder (default build-gpu)
#   --summary FILE  where the table goes as well as stdout (default BUILD/gpu_check.txt)
#   --steps N       steps of the timed MNIST runs of the speed stage (default 300)
#   --window N      one of the three prepared calls of a short GPU window (docs/GPU.md, "A window
#                   in three calls"): its stages, tighter limits and a total under 5 minutes,
#                   ordered by what a window must learn first (instead of --stage):
#                     1  parity,zoo (COHORT_CUDNN_LOG=1: every cuDNN decline logged; the zoo's
#                        f16 row prints its ratio to f32)                          60 + 150, 200 s
#                     2  ctest,mnist,ddp,nccl (ctest -L gpu with the fused-route rows) 90 + 120
#                        + 60 + 60, 240 s
#                     3  speed (a variant stops at its first failed round)                  240 s
#                   A GPU_CHECK_LIMIT_<STAGE> or GPU_CHECK_TOTAL_S set by the caller still wins.
#
# Each stage runs under its time limit (right column; GPU_CHECK_LIMIT_<STAGE>=S overrides, e.g.
# GPU_CHECK_LIMIT_MNIST=300), each command in it under `timeout`, and one invocation stops
# starting commands after GPU_CHECK_TOTAL_S (default 1500 s = 25 min). A command that runs out of
# time is a FAIL row naming the limit it hit; every stage runs whatever failed before it. Rows go
# to BUILD/gpu_check.rows: a stage run again replaces its rows, so stages run one by one (each
# call under the 10 minutes a remote command may take) build one table, printed whole after every
# invocation. GPU_CHECK_CMAKE_ARGS adds configure arguments (e.g. a compiler launcher).
#
# Without a GPU (nvidia-smi lists none) it runs the build stage only, says so, and exits 0 when the
# build passed (CI's check that the CUDA build configures and links). Exit status 1 when a row of
# this invocation is a FAIL; 2 for bad usage.
# shellcheck disable=SC2317  # the stage functions are called as "stage_$s"
set -uo pipefail
cd "$(dirname "$0")/.." || exit 2
# shellcheck source=tools/gpu_check_lib.sh
. tools/gpu_check_lib.sh

all_stages=(build ctest parity sanitize mnist ddp zoo nccl speed)
declare -A default_limit=([build]=570 [ctest]=570 [parity]=90 [sanitize]=570 [mnist]=240
                          [ddp]=150 [zoo]=240 [nccl]=150 [speed]=420)
usage_error() { echo "gpu_check.sh: $*" >&2; exit 2; }

deps=""
[ -d .gpu/debs ] && deps=.gpu
build="build-gpu"
summary=""
steps=300
stage_arg=all
stage_given=0
window=""
fresh=0
while [ $# -gt 0 ]; do
  case "$1" in
    --stage|--deps|--build|--summary|--steps|--window)
      [ $# -ge 2 ] || usage_error "$1 needs a value (see --help)"
      case "$1" in
        --stage) stage_arg=$2; stage_given=1 ;;
        --window) window=$2 ;;
        --deps) deps=$2; [ "$deps" = none ] && deps="" ;;
        --build) build=$2 ;;
        --summary) summary=$2 ;;
        --steps) steps=$2 ;;
      esac
      shift 2 ;;
    --fresh) fresh=1; shift ;;
    -h|--help) awk 'NR > 1 && /^# shellcheck/ { exit } NR > 1' "$0"; exit 0 ;;
    *) usage_error "unknown argument '$1' (see --help)" ;;
  esac
done
[[ "$steps" =~ ^[1-9][0-9]*$ ]] || usage_error "--steps '$steps' is not a positive whole number"
# The prepared calls of a short window (--help): stages, limits, total; the caller's variables win.
if [ -n "$window" ]; then
  [ "$stage_given" = 0 ] || usage_error "--window and --stage together: a window names its stages"
  case "$window" in
    1) stage_arg=parity,zoo; window_limits=(parity=60 zoo=150); window_total=200
       export COHORT_CUDNN_LOG=${COHORT_CUDNN_LOG:-1} ;;
    2) stage_arg=ctest,mnist,ddp,nccl; window_limits=(ctest=90 mnist=120 ddp=60 nccl=60)
       window_total=240 ;;
    3) stage_arg=speed; window_limits=(speed=240); window_total=240 ;;
    *) usage_error "--window '$window': the prepared calls are 1, 2 and 3" ;;
  esac
  for l in "${window_limits[@]}"; do default_limit[${l%%=*}]=${l#*=}; done
  GPU_CHECK_TOTAL_S=${GPU_CHECK_TOTAL_S:-$window_total}
  echo "== window $window: stages $stage_arg, limits ${window_limits[*]}, total ${GPU_CHECK_TOTAL_S} s"
fi
declare -A want=()
IFS=, read -r -a asked <<<"$stage_arg"
[ ${#asked[@]} -gt 0 ] || usage_error "--stage '' names no stage (${all_stages[*]}, all)"
for s in "${asked[@]}"; do
  if [ "$s" = all ]; then
    for a in "${all_stages[@]}"; do want[$a]=1; done
    fresh=1
  elif [ -n "${default_limit[$s]:-}" ]; then
    want[$s]=1
  else
    names="${all_stages[*]}"
    usage_error "--stage: unknown stage '$s' in '$stage_arg' (${names// /, }, all)"
  fi
done
declare -A limit=()
for s in "${all_stages[@]}"; do
  var=GPU_CHECK_LIMIT_$(echo "$s" | tr '[:lower:]' '[:upper:]')
  limit[$s]=${!var:-${default_limit[$s]}}
  [[ "${limit[$s]}" =~ ^[1-9][0-9]*$ ]] || usage_error "$var='${limit[$s]}' is not a positive number of seconds"
done
total_limit=${GPU_CHECK_TOTAL_S:-1500}
[[ "$total_limit" =~ ^[1-9][0-9]*$ ]] || usage_error "GPU_CHECK_TOTAL_S='$total_limit' is not a positive number of seconds"
total_deadline=$(( $(date +%s) + total_limit ))

summary=${summary:-$build/gpu_check.txt}
mkdir -p "$build" || usage_error "--build '$build': cannot create it"
rows_file="$build/gpu_check.rows"
[ "$fresh" = 1 ] && rm -f "$rows_file"
bin="$build/bin"
failed=0

# ---- rows: the current stage's index and name label them ----
stage=gpu; stage_idx=0; stage_limit=0; stage_deadline=$total_deadline
row() {  # CHECK RESULT DETAIL [SECONDS]
  gc_row_add "$rows_file" "$stage_idx" "$stage" "$1" "$2" "${4:-}" "$3"
  [ "$2" = FAIL ] && failed=1
  printf '== %-34s %-8s %s\n' "$1" "$2" "$3"
}

# run_capped CAP LOG CMD...: CMD under `timeout`, output to LOG, for at most CAP seconds and no
# later than the stage's and the invocation's limits. Sets rc, secs and why (empty, or "timed out
# after S s (<the limit it hit>)", or "not started: ... used up").
run_capped() {
  local cap=$1 log=$2 now lim left
  shift 2
  now=$(date +%s)
  lim=$cap; limit_why="its own $cap s limit"
  left=$(( stage_deadline - now ))
  if [ "$left" -lt "$lim" ]; then lim=$left; limit_why="the $stage stage's ${stage_limit} s limit"; fi
  left=$(( total_deadline - now ))
  if [ "$left" -lt "$lim" ]; then lim=$left; limit_why="this invocation's ${total_limit} s limit, GPU_CHECK_TOTAL_S"; fi
  why=""; secs=0
  if [ "$lim" -lt 1 ]; then
    rc=125; why="not started: $limit_why used up"
    echo "$why" >"$log"
    return
  fi
  timeout -k 10 "$lim" "$@" >"$log" 2>&1
  rc=$?
  secs=$(( $(date +%s) - now ))
  if [ "$rc" -eq 124 ] || { [ "$rc" -eq 137 ] && [ "$secs" -ge "$lim" ]; }; then
    why="timed out after $lim s ($limit_why)"
  fi
}
need() {  # CHECK BINARY...: a FAIL row and false when one was not built
  local check=$1 b
  shift
  for b in "$@"; do
    [ -x "$bin/$b" ] || { row "$check" FAIL "not built: $bin/$b (run the build stage)"; return 1; }
  done
}
acc_of() { sed -n 's/.*final test accuracy: \([0-9.]*\)%.*/\1/p' "$1" | tail -n1; }
ips_of() { sed -n 's/.*training throughput: \([0-9.]*\) images\/s.*/\1/p' "$1" | tail -n1; }

gc_rows_clear "$rows_file" gpu  # this invocation's machine, driver and dependencies

# ---- dependencies (every invocation: the run-time library path too) ----
cmake_args=(-G Ninja -DCMAKE_BUILD_TYPE=Release -DCOHORT_ENABLE_CUDA=ON)
# A build made on another machine and carried (tools/gpu_deps.sh bundle): unpacked here, and the
# source folder it was configured in made to exist (a link to this checkout), because its programs'
# run paths and ctest's files name it.
if [ -n "$deps" ] && [ -f "$deps/build.tar.xz" ] && [ ! -d "$bin" ]; then
  if tar -C "$(dirname "$build")" -xJf "$deps/build.tar.xz" && [ -d "$bin" ]; then
    src=$(sed -n 's/^CMAKE_HOME_DIRECTORY:INTERNAL=//p' "$build/CMakeCache.txt")
    if [ -n "$src" ] && [ "$src" != "$PWD" ] && [ ! -e "$src" ]; then
      mkdir -p "$(dirname "$src")" && ln -s "$PWD" "$src" ||
        row "carried build" FAIL "cannot link $src (where it was built) to $PWD"
    elif [ -n "$src" ] && [ "$src" != "$PWD" ] && [ "$(cd "$src" && pwd -P)" != "$(pwd -P)" ]; then
      row "carried build" FAIL "$src, where it was built, is another folder here: its tests would run that one"
    fi
  else
    row "carried build" FAIL "$deps/build.tar.xz does not hold $build/bin"
  fi
fi
if [ -n "$deps" ]; then
  if [ -d "$deps/prefix" ] || tools/gpu_deps.sh unpack "$deps" >/dev/null; then
    prefix="$(cd "$deps/prefix" && pwd)"
    lib="$prefix/usr/lib/x86_64-linux-gnu"
    cmake_args+=("-DCMAKE_PREFIX_PATH=$prefix/usr")
    export LD_LIBRARY_PATH="$lib:$lib/openblas-pthread${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    data="$prefix/usr/share/datasets/fashion-mnist"
  else
    row "unpack $deps" FAIL "tools/gpu_deps.sh unpack $deps failed"
  fi
fi
[ -d "${data:-}" ] || data=/usr/share/datasets/fashion-mnist
# cuDNN and NCCL from the pip wheels when the toolkit does not have them.
cuda_home=${CUDA_HOME:-/usr/local/cuda}
for pkg in cudnn nccl; do
  var=$(echo "$pkg" | tr '[:lower:]' '[:upper:]')_ROOT
  if [ -z "${!var:-}" ] && [ ! -e "$cuda_home/include/$pkg.h" ]; then
    root=$(python3 -c "import nvidia.$pkg as m; print(list(m.__path__)[0])" 2>/dev/null) || root=""
    if [ -n "$root" ]; then
      export "$var=$root"
      export LD_LIBRARY_PATH="$root/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    fi
  fi
  [ -n "${!var:-}" ] && cmake_args+=("-D$var=${!var}")
done
# The toolkit's run-time libraries, and the wheels' (cudart and cuBLAS in nvidia/cu13): a carried
# build was linked against another machine's toolkit.
wheel_cuda=$(python3 -c "import nvidia, os; print(os.path.join(list(nvidia.__path__)[0], 'cu13', 'lib'))" 2>/dev/null) || wheel_cuda=""
for d in "$cuda_home/lib64" "$wheel_cuda"; do
  [ -n "$d" ] && [ -d "$d" ] && export LD_LIBRARY_PATH="${LD_LIBRARY_PATH:+$LD_LIBRARY_PATH:}$d"
done
# shellcheck disable=SC2206
[ -n "${GPU_CHECK_CMAKE_ARGS:-}" ] && cmake_args+=(${GPU_CHECK_CMAKE_ARGS})

# ---- the GPU, its driver and the toolkit ----
gpu_name=$(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null | head -n1)
gpus=$( (nvidia-smi -L 2>/dev/null || true) | grep -c '^GPU')
driver_version=$(echo "$gpu_name" | awk -F', *' '{ print $2 }')
driver_cuda=$(nvidia-smi 2>/dev/null | grep -oE 'CUDA Version: *[0-9.]+' | head -n1 | grep -oE '[0-9.]+$')
nvcc_bin=$(command -v nvcc 2>/dev/null || echo "$cuda_home/bin/nvcc")
nvcc_version=$("$nvcc_bin" --version 2>/dev/null | sed -n 's/.*release [0-9.]*, V\([0-9.]*\).*/\1/p' | head -n1)
toolkit_line="toolkit: ${nvcc_version:+nvcc $nvcc_version ($nvcc_bin)}"
[ -n "$nvcc_version" ] || toolkit_line="toolkit: no nvcc (PATH, $cuda_home/bin)"
if [ -n "$gpu_name" ]; then
  gpu_line="gpu: $gpu_name ($gpus visible); driver ${driver_version:-?}, driver's CUDA ${driver_cuda:-?}; $toolkit_line"
  cmake_args+=(-DCMAKE_CUDA_ARCHITECTURES=native)  # this GPU only: the build is several times shorter
else
  gpu_line="gpu: none (nvidia-smi found none); $toolkit_line"
fi

if [ -n "$gpu_name" ]; then
  row "GPU" info "$gpu_name; $gpus visible"
  # The CUDA 13 runtime refuses a driver whose CUDA is older (cudaErrorInsufficientDriver): then
  # every GPU test skips (GPU review G3).
  tk=$(echo "$nvcc_version" | cut -d. -f1,2)
  if [ -z "$driver_cuda" ] || [ -z "$tk" ]; then
    row "driver CUDA >= toolkit" FAIL "driver's CUDA '${driver_cuda:-?}' or nvcc's '${nvcc_version:-?}' unknown"
  elif gc_version_at_least "$driver_cuda" "$tk"; then
    row "driver CUDA >= toolkit" ok "driver $driver_version runs CUDA $driver_cuda; toolkit $nvcc_version"
  else
    row "driver CUDA >= toolkit" FAIL "driver $driver_version runs CUDA $driver_cuda, older than the toolkit's $tk: the runtime will report cudaErrorInsufficientDriver"
  fi
fi

# ---- stages ----
stage_build() {
  run_capped "${limit[build]}" "$build/configure.log" cmake -S . -B "$build" "${cmake_args[@]}"
  local t=$secs
  if [ "$rc" -ne 0 ]; then
    tail -n 30 "$build/configure.log"
    row "configure (CUDA)" FAIL "${why:-exit $rc}; see $build/configure.log" "$t"
    return
  fi
  # -k 0: every target that can build does, so one failure leaves the others' checks to run.
  run_capped "${limit[build]}" "$build/build.log" cmake --build "$build" -j"$(nproc)" -- -k 0
  t=$(( t + secs ))
  local cuda
  cuda=$(grep -m1 'CUDA: ' "$build/configure.log" | sed 's/^-- *//')
  if [ "$rc" -eq 0 ]; then
    row "configure + build (CUDA)" ok "$cuda" "$t"
  else
    tail -n 30 "$build/build.log"
    local first
    first=$(grep -m1 -E 'error|FAILED' "$build/build.log" | cut -c1-150)
    row "configure + build (CUDA)" FAIL "${why:-exit $rc}${first:+; first error: $first}; see $build/build.log" "$t"
  fi
}

stage_ctest() {
  local log="$build/ctest_gpu.log" v res detail reason
  run_capped "${limit[ctest]}" "$log" ctest --test-dir "$build" -L gpu --output-on-failure
  v=$(gc_ctest_verdict "$log" "$gpus")
  res=${v%%$'\t'*}; detail=${v#*$'\t'}
  if [[ "$detail" == *"skipped with a GPU present"* ]]; then
    reason=$(grep -m1 -i 'skipped: ' "$build/Testing/Temporary/LastTest.log" 2>/dev/null | cut -c1-200)
    [ -n "$reason" ] && detail="$detail; first reason: $reason"
  fi
  if [ -n "$why" ]; then
    row "ctest -L gpu" FAIL "$why; so far: $detail; see $log" "$secs"
  elif [ "$res" = ok ] && [ "$rc" -ne 0 ]; then
    row "ctest -L gpu" FAIL "ctest exit $rc; $detail; see $log" "$secs"
  else
    row "ctest -L gpu" "$res" "$detail; see $log" "$secs"
  fi
}

stage_parity() {
  need "parity table on cuda" test_parity || return
  local log="$build/parity_cuda.log"
  run_capped "${limit[parity]}" "$log" "$bin/test_parity" --device cuda
  if [ -n "$why" ]; then row "parity table on cuda" FAIL "$why; see $log" "$secs"; return; fi
  case $rc in
    0) row "parity table on cuda" ok "$(tail -n1 "$log")" "$secs" ;;
    77) row "parity table on cuda" FAIL "skipped although a GPU is present: $(head -n1 "$log")" "$secs" ;;
    *) row "parity table on cuda" FAIL "exit $rc: $(tail -n1 "$log"); see $log" "$secs" ;;
  esac
}

# san TOOL NAME CAP [VAR=VALUE...] BINARY ARGS...: one compute-sanitizer run, one row.
san() {
  local tool=$1 name=$2 cap=$3 envs=() v res detail log
  shift 3
  while [[ "$1" == *=* ]]; do envs+=("$1"); shift; done
  need "$tool $name" "$1" || return
  log="$build/sanitize_${tool}_$name.log"
  local b="$bin/$1"
  shift
  run_capped "$cap" "$log" env "${envs[@]}" "$cs" --tool "$tool" --error-exitcode 1 "$b" "$@"
  if [ -n "$why" ]; then row "$tool $name" FAIL "$why; see $log" "$secs"; return; fi
  v=$(gc_sanitizer_verdict "$log" "$rc")
  res=${v%%$'\t'*}; detail=${v#*$'\t'}
  [ "$res" = ok ] || detail="$detail; see $log"
  row "$tool $name" "$res" "$detail" "$secs"
}
stage_sanitize() {
  cs=$(command -v compute-sanitizer 2>/dev/null || true)
  [ -n "$cs" ] || { [ -x "$cuda_home/bin/compute-sanitizer" ] && cs="$cuda_home/bin/compute-sanitizer"; }
  if [ -z "$cs" ]; then
    row "compute-sanitizer" FAIL "not found in PATH nor $cuda_home/bin (it ships with the CUDA toolkit)"
    return
  fi
  # Smallest first. memcheck: the math modes and batched GEMM (cuDNN, cuBLAS); every op of the
  # table; a training loop through the staged DataLoader; DDP's GPU path on one rank. racecheck
  # (shared-memory hazards: ours have none, cuDNN's, cuBLAS's and CUB's do) is slower: the two
  # smallest, which between them run cuDNN, cuBLAS and a training step's Thrust reductions.
  # COHORT_TEST_NO_OOM: the two tests leave out their deliberate out-of-memory case, whose failed
  # cudaMalloc memcheck reports as an API error (plain ctest runs it).
  san memcheck cuda_modes 90 COHORT_TEST_NO_OOM=1 test_cuda_modes
  san memcheck parity 150 test_parity --device cuda
  san memcheck memory_cuda 90 COHORT_TEST_NO_OOM=1 test_memory_cuda
  san memcheck ddp_equivalence 60 COHORT_TEST_DEVICE=cuda COHORT_COMM=self \
    cohort_parallel_tests '--test-case=equivalence*'
  san racecheck cuda_modes 90 COHORT_TEST_NO_OOM=1 test_cuda_modes
  san racecheck memory_cuda 90 COHORT_TEST_NO_OOM=1 test_memory_cuda
}

stage_mnist() {
  need "mnist 1 epoch cuda vs host" mnist_cnn || return
  local lc="$build/mnist_cuda.log" lh="$build/mnist_host.log" rc_c rc_h why_c why_h t acc_c acc_h
  run_capped 120 "$lc" "$bin/mnist_cnn" --device cuda --epochs 1 --data "$data" --log-interval 100000
  rc_c=$rc; why_c=$why; t=$secs
  # The host reference convolves directly: its Winograd rounds differently, and one epoch with
  # other rounding lands up to ~0.8 points away (88.33% vs cuda's 89.15% on 2026-11-27, while
  # direct gave 88.74% vs 88.92%), which is the algorithm's spread, not a cuda fault.
  run_capped "${limit[mnist]}" "$lh" env COHORT_HOST_CONV_ALGO=direct \
    "$bin/mnist_cnn" --device host --epochs 1 --data "$data" --log-interval 100000
  rc_h=$rc; why_h=$why; t=$(( t + secs ))
  acc_c=$(acc_of "$lc"); acc_h=$(acc_of "$lh")
  if [ -n "$why_c$why_h" ]; then
    row "mnist 1 epoch cuda vs host" FAIL "${why_c:+cuda: $why_c; }${why_h:+host: $why_h; }see $lc, $lh" "$t"
  elif [ "$rc_c" -ne 0 ] || [ "$rc_h" -ne 0 ] || [ -z "$acc_c" ] || [ -z "$acc_h" ]; then
    row "mnist 1 epoch cuda vs host" FAIL "exit $rc_c / $rc_h, accuracy '${acc_c}' / '${acc_h}'; see $lc, $lh" "$t"
  elif awk -v a="$acc_c" -v b="$acc_h" 'BEGIN { d = a - b; exit !(d <= 0.5 && d >= -0.5) }'; then
    row "mnist 1 epoch cuda vs host" ok "test accuracy $acc_c% vs $acc_h% (within 0.5 points); $(ips_of "$lc") vs $(ips_of "$lh") images/s" "$t"
  else
    row "mnist 1 epoch cuda vs host" FAIL "test accuracy $acc_c% vs $acc_h%: more than 0.5 points apart" "$t"
  fi
}

ddp_row() {  # CHECK LOG: a 2-rank run's row from rc / why and its "identical weights" line
  if [ -n "$why" ]; then row "$1" FAIL "$why; see $2" "$secs"
  elif [ "$rc" -eq 0 ] && grep -q "ranks hold identical weights: yes" "$2"; then
    row "$1" ok "$(grep -m1 'identical weights' "$2" | sed 's/^.*(//; s/)$//'); $(ips_of "$2") images/s" "$secs"
  else
    row "$1" FAIL "exit $rc; see $2" "$secs"
  fi
}
stage_ddp() {
  need "2 ranks on one GPU, shm" cohortrun mnist_cnn cifar_cnn || return
  run_capped 75 "$build/ddp_shm_cuda.log" "$bin/cohortrun" --nproc-per-node 2 --master-port 0 \
    "$bin/mnist_cnn" --device cuda --comm shm --epochs 1 --max-steps 100 --data "$data" --log-interval 100000
  ddp_row "mnist 2 ranks on one GPU, shm" "$build/ddp_shm_cuda.log"
  run_capped 75 "$build/zoo_ddp_shm_cuda.log" "$bin/cohortrun" --nproc-per-node 2 --master-port 0 \
    "$bin/cifar_cnn" --device cuda --comm shm --model resnet9 --dataset fashion-mnist --data "$data" \
    --max-steps 50 --log-interval 100000
  ddp_row "resnet9 2 ranks on one GPU, shm" "$build/zoo_ddp_shm_cuda.log"
}

# How the last run_capped run ended, for a row that got no figure from it: the time limit, the
# signal that killed it (a crash prints nothing of its own), or its exit status; then the log's
# last line.
how_ended() {  # LOG
  local end
  if [ -n "$why" ]; then end=$why
  elif [ "$rc" -gt 128 ]; then end="killed by SIG$(kill -l $((rc - 128)) 2>/dev/null || echo "$((rc - 128))") (exit $rc)"
  else end="exit $rc"
  fi
  echo "$end, last line: $(tail -n1 "$1" 2>/dev/null | cut -c1-100)"
}

stage_zoo() {  # every model of docs/MODELS.md trains a few steps; ResNet-50 also under autocast
  need "zoo on cuda" cifar_cnn || return
  local m log amp name ips f32_ips="" vs
  for m in cnn_a cnn_b resnet9 resnet50 resnet50:bf16 resnet50:f16 vit; do
    amp=off; name=$m
    case $m in *:*) amp=${m#*:}; m=${m%%:*}; name="$m amp $amp";; esac
    log="$build/zoo_${m}_$amp.log"
    run_capped 60 "$log" "$bin/cifar_cnn" --device cuda --model "$m" --synthetic --synthetic-size 256 \
      --batch-size 32 --max-steps 8 --log-interval 1 --test-batch-size 64 --amp "$amp"
    if [ -z "$why" ] && [ "$rc" -eq 0 ] && grep -q "final test accuracy" "$log"; then
      ips=$(ips_of "$log")
      # Under autocast its images/s beside the f32 row's: an f16 run that finishes inside the cap
      # at a tenth of f32's speed (the GradScaler's old one-thread check) is no fix (review 2, H3).
      vs=""
      [ "$m" = resnet50 ] && [ "$amp" = off ] && f32_ips=$ips
      if [ "$amp" != off ] && [ -n "$f32_ips" ] && [ -n "$ips" ]; then
        vs=" ($(awk -v a="$ips" -v b="$f32_ips" 'BEGIN { printf "%.2f", a / b }')x the f32 row's)"
      fi
      row "zoo $name on cuda" ok "$(grep -oE 'loss [0-9.]+' "$log" | head -n1) -> $(grep -oE 'loss [0-9.]+' "$log" | tail -n1); $ips images/s$vs" "$secs"
    else
      row "zoo $name on cuda" FAIL "$(how_ended "$log"); see $log" "$secs"
    fi
  done
}

stage_nccl() {
  local log="$build/nccl_np1_mnist.log" names v res detail
  if need "mnist 1 rank nccl" cohortrun mnist_cnn; then
    # cohortrun with one rank: the world a job of one GPU gets (RANK=0, WORLD_SIZE=1, a store).
    run_capped 80 "$log" "$bin/cohortrun" --nproc-per-node 1 --master-port 0 "$bin/mnist_cnn" \
      --device cuda --comm nccl --epochs 1 --max-steps 100 --data "$data" --log-interval 100000
    if [ -n "$why" ]; then
      row "mnist 1 rank nccl" FAIL "$why; see $log" "$secs"
    elif [ "$rc" -eq 0 ] && grep -q '(nccl' "$log" && grep -q "final test accuracy" "$log"; then
      row "mnist 1 rank nccl" ok "100 steps, test accuracy $(acc_of "$log")%, $(ips_of "$log") images/s" "$secs"
    else
      row "mnist 1 rank nccl" FAIL "exit $rc$(grep -q '(nccl' "$log" || echo ', no nccl communicator in the log'); see $log" "$secs"
    fi
  fi
  # The world-size-1 nccl entries of ctest (conformance, DDP on cuda), with the ctest stage's rules.
  names=$(ctest --test-dir "$build" -N 2>/dev/null | sed -n 's/^ *Test *#[0-9]*: \([^ ]*nccl[^ ]*_np1\)$/\1/p' | paste -sd'|')
  if [ -z "$names" ]; then
    row "ctest nccl np1" FAIL "no *nccl*_np1 entry in ctest -N (NCCL not in this build? see $build/configure.log)"
    return
  fi
  log="$build/ctest_nccl_np1.log"
  run_capped "${limit[nccl]}" "$log" ctest --test-dir "$build" -R "^($names)\$" --output-on-failure
  v=$(gc_ctest_verdict "$log" "$gpus")
  res=${v%%$'\t'*}; detail=${v#*$'\t'}
  if [ -n "$why" ]; then res=FAIL; detail="$why; so far: $detail"; fi
  row "ctest nccl np1" "$res" "${names//|/, }: $detail; see $log" "$secs"
}

# The median of a list of figures ("" for none).
med() {
  # shellcheck disable=SC2086  # split the list of figures
  printf '%s\n' $1 | sort -g | awk '{ v[NR] = $1 } END { print (NR ? v[int((NR + 1) / 2)] : "") }'
}
# A speed row: cohort's figure MINE over the peer's THEIRS against TARGET (ok at or above it);
# FAIL, with MISSING's figures, when either is absent.
speed_row() {  # CHECK MINE THEIRS TARGET DETAIL MISSING
  local ratio res=ok
  if [ -z "$2" ] || [ -z "$3" ]; then
    row "$1" FAIL "no figure ($6)"
    return
  fi
  ratio=$(awk -v c="$2" -v t="$3" 'BEGIN { printf "%.2f", c / t }')
  awk -v r="$ratio" -v g="$4" 'BEGIN { exit !(r >= g) }' || res=FAIL
  row "$1" "$res" "cohort $2 / torch $3 = ${ratio}x ($5; target >= $4)"
}

# The sum of conv_bench's (or its torch peer's) three columns over every shape row, "" if none.
conv_sum() { awk 'NF == 4 && $2 ~ /^[0-9.]+$/ { s += $2 + $3 + $4; n++ } END { if (n) printf "%.3f", s }' "$1"; }

stage_speed() {
  local tv t c ips_t="" ips_c="" round lt lc
  run_capped 60 "$build/torch_check.log" python3 -c \
    'import torch, sys; print(torch.__version__); sys.exit(0 if torch.cuda.is_available() else 1)'
  if [ "$rc" -ne 0 ]; then
    row "mnist images/s vs torch" skipped "python3 has no torch with CUDA${why:+ ($why)}: $(tail -n1 "$build/torch_check.log" | cut -c1-120)"
  elif need "mnist images/s vs torch" mnist_cnn; then
    tv=$(head -n1 "$build/torch_check.log")
    for round in 1 2 3; do  # alternate the two sides; medians below
      lt="$build/speed_torch_$round.log"; lc="$build/speed_cohort_$round.log"
      run_capped 60 "$lt" python3 bench/mnist_torch.py --device cuda --steps "$steps" --data "$data"
      t=$(sed -n 's/^torch images\/s: \([0-9.]*\).*/\1/p' "$lt")
      run_capped 60 "$lc" "$bin/mnist_cnn" --device cuda --epochs 1 --max-steps "$steps" --data "$data" \
        --log-interval 100000 --test-batch-size 1000
      c=$(ips_of "$lc")
      ips_t="$ips_t $t"; ips_c="$ips_c $c"
    done
    speed_row "mnist images/s vs torch $tv" "$(med "$ips_c")" "$(med "$ips_t")" 1.0 \
      "batch 64, $steps steps, median of 3" "cohort:$ips_c torch:$ips_t; see $build/speed_*.log"
    # Per layer, forward + backward, against the same layers in PyTorch on this GPU.
    if need "layers_bench vs torch" layers_bench; then
      run_capped 120 "$build/layers_bench_cuda.log" "$bin/layers_bench" --device cuda --python python3 --rounds 3
      if [ -z "$why" ] && [ "$rc" -eq 0 ]; then
        row "layers_bench vs torch (model)" info "$(awk '$1 == "model" { print "cohort " $2 " ms, torch " $3 " ms, " $4 " (lower is faster)" }' "$build/layers_bench_cuda.log"); table in $build/layers_bench_cuda.log" "$secs"
      else
        row "layers_bench vs torch" FAIL "${why:-exit $rc}; see $build/layers_bench_cuda.log" "$secs"
      fi
    fi
    # Attention at the ViT's shapes against F.scaled_dot_product_attention and
    # nn.MultiheadAttention on this GPU (bench/attention_bench.cpp and its torch peer; issue 34):
    # info, since cohort's CUDA attention is the shared fused items, not a tuned kernel.
    if need "attention vs torch sdpa" attention_bench; then
      local la="$build/attention_cuda.log" lt2="$build/attention_cuda_torch.log" ac at ac_end=""
      run_capped 60 "$la" "$bin/attention_bench" --device cuda --min-time 0.5
      ac=$(awk '$1 == "sdpa" { s = $2 } $1 == "mha_fused" { m = $2 } END { if (s != "") print s, m }' "$la")
      [ -n "$ac" ] || ac_end=$(how_ended "$la")
      run_capped 60 "$lt2" python3 bench/attention_bench_torch.py --device cuda --min-time 0.5
      at=$(awk '$1 == "sdpa" { s = $2 } $1 == "mha" { m = $2 } END { if (s != "") print s, m }' "$lt2")
      if [ -n "$ac" ] && [ -n "$at" ]; then
        row "attention vs torch sdpa (ViT shapes)" info "$(awk -v c="$ac" -v t="$at" 'BEGIN {
          split(c, a, " "); split(t, b, " ");
          printf "sdpa op: cohort %.3f ms, torch %.3f ms, %.2fx; MultiheadAttention: cohort %.3f ms, torch %.3f ms, %.2fx (torch time / cohort time)",
                 a[1], b[1], b[1] / a[1], a[2], b[2], b[2] / a[2] }'); see $la, $lt2"
      else
        row "attention vs torch sdpa (ViT shapes)" FAIL "no figure (cohort: ${ac:-${ac_end:-none}}; torch: ${at:-$(how_ended "$lt2")}); see $la, $lt2"
      fi
    fi
    # Mixed precision (issue 33): ResNet-50 with --amp f16 (autocast + GradScaler) against PyTorch's
    # torch.autocast("cuda", torch.float16) + GradScaler, same batch and steps; f32 beside both.
    if need "resnet50 amp f16 vs torch" cifar_cnn; then
      local amp_log amp_end="" f16_failed=0
      declare -A amp_c=() amp_t=()
      for round in 1 2 3; do
        for amp in off f16; do
          # A cohort f16 round without a figure ends the f16 rounds: the next ones would fail
          # alike and spend the window's minutes (GPU review 2, H3).
          [ "$amp" = f16 ] && [ "$f16_failed" = 1 ] && continue
          amp_log="$build/speed_amp_${amp}_$round"
          run_capped 90 "$amp_log.torch.log" python3 bench/zoo_torch.py --model resnet50 --device cuda \
            --steps 40 --amp "$amp" --data "$data"
          amp_t[$amp]="${amp_t[$amp]:-} $(sed -n 's/^torch images\/s: \([0-9.]*\).*/\1/p' "$amp_log.torch.log")"
          run_capped 90 "$amp_log.cohort.log" "$bin/cifar_cnn" --device cuda --model resnet50 \
            --dataset fashion-mnist --data "$data" --augment 0 --max-steps 40 --no-eval --log-interval 100000 --amp "$amp"
          c=$(ips_of "$amp_log.cohort.log")
          amp_c[$amp]="${amp_c[$amp]:-} $c"
          [ -n "$c" ] || amp_end="${amp_end:-}; cohort $amp round $round: $(how_ended "$amp_log.cohort.log")"
          if [ -z "$c" ] && [ "$amp" = f16 ]; then
            f16_failed=1
            [ "$round" -lt 3 ] && amp_end="$amp_end; f16 rounds $((round + 1))-3 not run"
          fi
        done
      done
      speed_row "resnet50 amp f16 vs torch autocast+GradScaler" "$(med "${amp_c[f16]}")" \
        "$(med "${amp_t[f16]}")" 0.9 \
        "f32: cohort $(med "${amp_c[off]}"), torch $(med "${amp_t[off]}"); batch 64, 40 steps, median of 3" \
        "cohort:${amp_c[f16]:-} torch:${amp_t[f16]:-}${amp_end:-}; see $build/speed_amp_*.log"
    fi
    # cuDNN's algorithm choice: heuristics (the default) against benchmark mode
    # (COHORT_CUDNN_BENCHMARK=1, cudnnFind*Ex timing), beside PyTorch's default and its
    # cudnn.benchmark, over bench/conv_shapes.txt (20 calls per synchronisation). Info: which
    # default serves users is read from this row.
    if need "conv cudnn benchmark vs torch" conv_bench; then
      # Each run's end (exit status, time limit) is read right after it: how_ended reads $rc and
      # $why, which the next run_capped replaces.
      local lcb="$build/conv_bench_cuda" cb_h cb_b tb_h tb_b e_ch e_cb e_th e_tb
      run_capped 90 "$lcb.heuristic.log" "$bin/conv_bench" --device cuda --pipelined 20 --min-time 0.05
      cb_h=$(conv_sum "$lcb.heuristic.log"); e_ch=$(how_ended "$lcb.heuristic.log")
      COHORT_CUDNN_BENCHMARK=1 run_capped 90 "$lcb.benchmark.log" "$bin/conv_bench" --device cuda \
        --pipelined 20 --min-time 0.05
      cb_b=$(conv_sum "$lcb.benchmark.log"); e_cb=$(how_ended "$lcb.benchmark.log")
      run_capped 90 "$lcb.torch.log" python3 bench/conv_bench_torch.py --device cuda --pipelined 20 --min-time 0.05
      tb_h=$(conv_sum "$lcb.torch.log"); e_th=$(how_ended "$lcb.torch.log")
      run_capped 90 "$lcb.torch_benchmark.log" python3 bench/conv_bench_torch.py --device cuda \
        --pipelined 20 --min-time 0.05 --cudnn-benchmark
      tb_b=$(conv_sum "$lcb.torch_benchmark.log"); e_tb=$(how_ended "$lcb.torch_benchmark.log")
      if [ -n "$cb_h" ] && [ -n "$cb_b" ] && [ -n "$tb_h" ] && [ -n "$tb_b" ]; then
        row "conv cudnn benchmark vs torch" info "$(awk -v ch="$cb_h" -v cb="$cb_b" -v th="$tb_h" -v tb="$tb_b" 'BEGIN {
          printf "ms summed over the shapes (fwd + bwd data + bwd filter): heuristics cohort %s, torch %s (%.2fx); benchmark cohort %s, torch %s (%.2fx) (torch time / cohort time)",
                 ch, th, th / ch, cb, tb, tb / cb }'); see $lcb.*.log"
      else
        row "conv cudnn benchmark vs torch" FAIL "no figure (cohort heuristics ${cb_h:-$e_ch}; benchmark ${cb_b:-$e_cb}; torch ${tb_h:-$e_th}; torch benchmark ${tb_b:-$e_tb}); see $lcb.*.log"
      fi
    fi
  fi
  # nccl against NVIDIA's nccl-tests on the same GPUs (when its source was carried).
  local nccl_tests=${NCCL_TESTS_SRC:-${deps:+$deps/nccl-tests}} worst log="$build/nccl_compare.log"
  if [ -n "$nccl_tests" ] && [ -f "$nccl_tests/src/all_reduce.cu" ]; then
    run_capped "${limit[speed]}" "$log" bench/nccl_compare.sh --nccl-tests "$nccl_tests" --build "$build"
    if [ -n "$why" ] || [ "$rc" -ne 0 ]; then
      row "nccl vs nccl-tests" FAIL "${why:-exit $rc}; see $log" "$secs"
    else
      # Sizes from 64 MiB: the "win" ratio (nccl-tests time / cohort time), target >= 0.90.
      worst=$(awk -F'|' '$1 + 0 >= 67108864 { split($5, r, " "); print r[2] }' "$log" | sort -g | head -n1)
      if [ -n "$worst" ]; then
        res=ok
        awk -v r="$worst" 'BEGIN { exit !(r >= 0.90) }' || res=FAIL
        row "nccl vs nccl-tests (>= 64 MiB)" "$res" "worst time ratio $worst (target >= 0.90); table in $log" "$secs"
      else
        row "nccl vs nccl-tests" info "$(tail -n1 "$log")" "$secs"
      fi
    fi
  else
    row "nccl vs nccl-tests" skipped "no nccl-tests source (carry it: tools/gpu_deps.sh download .gpu --nccl-tests SRC)"
  fi
}

idx=0
for s in "${all_stages[@]}"; do
  idx=$(( idx + 1 ))
  [ -n "${want[$s]:-}" ] || continue
  if [ "$s" != build ] && [ -z "$gpu_name" ]; then
    continue  # one "no GPU" row below
  fi
  stage=$s; stage_idx=$idx; stage_limit=${limit[$s]}
  gc_rows_clear "$rows_file" "$s"
  t0=$(date +%s)
  stage_deadline=$(( t0 + stage_limit ))
  echo "== stage $s (limit $stage_limit s)"
  "stage_$s"
  echo "== stage $s: $(( $(date +%s) - t0 )) s"
done
if [ -z "$gpu_name" ]; then
  stage=gpu; stage_idx=0
  skipped_stages=""
  for s in "${all_stages[@]}"; do
    [ "$s" != build ] && [ -n "${want[$s]:-}" ] && skipped_stages="$skipped_stages $s"
  done
  row "GPU" skipped "no GPU (nvidia-smi found none)${skipped_stages:+: not run:$skipped_stages}"
fi

# ---- the table: every stage's latest rows ----
{
  echo "cohort gpu_check, commit $(git rev-parse --short HEAD 2>/dev/null || echo unknown), $(date -u '+%Y-%m-%d %H:%M UTC') on $(hostname 2>/dev/null || uname -n)"
  echo "$gpu_line"
  gc_table "$rows_file"
  awk -F'\t' '{ n[$4]++ } END { printf "rows: %d ok, %d FAIL, %d skipped (not run), %d info", n["ok"], n["FAIL"], n["skipped"], n["info"] }' "$rows_file"
  if [ -n "$gpu_name" ]; then
    missing=""
    for s in "${all_stages[@]}"; do
      awk -F'\t' -v s="$s" '$2 == s { f = 1 } END { exit !f }' "$rows_file" || missing="$missing $s"
    done
    echo "${missing:+; stages not run yet:$missing}"
  else
    echo
  fi
} | tee "$summary"
exit "$failed"
