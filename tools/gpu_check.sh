#!/usr/bin/env bash
# One command for a GPU machine: build cohort with CUDA and check it on the GPU (docs/GPU.md).
#
#   tools/gpu_check.sh [--deps DIR] [--build DIR] [--summary FILE] [--steps N]
#
#   --deps DIR      Debian packages carried by `tools/gpu_deps.sh download DIR` (default .gpu when it
#                   exists): unpacked into DIR/prefix and used as CMAKE_PREFIX_PATH
#   --build DIR     build folder (default build-gpu)
#   --summary FILE  where the summary table goes as well as stdout (default BUILD/gpu_check.txt)
#   --steps N       steps of the timed MNIST runs (default 300)
#
# Steps: configure and build with CUDA (cuDNN and NCCL from the CUDA toolkit, CUDNN_ROOT /
# NCCL_ROOT, or the pip wheels nvidia-cudnn-cu13 / nvidia-nccl-cu13 that python3 can import); then,
# on a GPU: every ctest test labelled gpu, the op parity table on cuda, the zoo models for a few
# steps each (and ResNet9 on 2 ranks sharing the GPU), one epoch of mnist_cnn on
# cuda and on the host (test accuracy within 0.5 points), 2 ranks sharing the GPU over shm, and
# training images/s and per-layer times against PyTorch on the same GPU when python3 has torch
# with CUDA, and the nccl all-reduce against nccl-tests when its source was carried
# (DIR/nccl-tests, or NCCL_TESTS_SRC; bench/nccl_compare.sh). Without a GPU it stops after the build, says so, and exits 0. Exit status 1 when any
# check failed.
set -uo pipefail
cd "$(dirname "$0")/.."

deps=""
[ -d .gpu/debs ] && deps=.gpu
build=build-gpu
summary=""
steps=300
while [ $# -gt 0 ]; do
  case "$1" in
    --deps) deps="$2"; shift 2 ;;
    --build) build="$2"; shift 2 ;;
    --summary) summary="$2"; shift 2 ;;
    --steps) steps="$2"; shift 2 ;;
    -h|--help) sed -n '2,18p' "$0"; exit 0 ;;
    *) echo "gpu_check.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
summary=${summary:-$build/gpu_check.txt}
mkdir -p "$build"
rows=()
failed=0
row() {  # check, result (ok / FAIL / skipped / info), detail
  rows+=("$(printf '%-34s %-8s %s' "$1" "$2" "$3")")
  [ "$2" = FAIL ] && failed=1
  printf '== %-34s %-8s %s\n' "$1" "$2" "$3"
}
finish() {
  {
    echo "cohort gpu_check $(date -u '+%Y-%m-%d %H:%M UTC') on $(hostname)"
    echo "commit: $(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
    [ -n "${gpu_name:-}" ] && echo "gpu: $gpu_name"
    printf '%-34s %-8s %s\n' check result detail
    printf '%s\n' "${rows[@]}"
  } | tee "$summary"
  exit "$failed"
}

# ---- dependencies ----
cmake_args=(-G Ninja -DCMAKE_BUILD_TYPE=Release -DCOHORT_ENABLE_CUDA=ON)
if [ -n "$deps" ]; then
  [ -d "$deps/prefix" ] || tools/gpu_deps.sh unpack "$deps" >/dev/null || { row "unpack $deps" FAIL ""; finish; }
  prefix="$(cd "$deps/prefix" && pwd)"
  lib="$prefix/usr/lib/x86_64-linux-gnu"
  cmake_args+=("-DCMAKE_PREFIX_PATH=$prefix/usr")
  export LD_LIBRARY_PATH="$lib:$lib/openblas-pthread${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  data="$prefix/usr/share/datasets/fashion-mnist"
fi
[ -d "${data:-}" ] || data=/usr/share/datasets/fashion-mnist
# cuDNN and NCCL from the pip wheels when the toolkit does not have them.
for pkg in cudnn nccl; do
  var=$(echo "$pkg" | tr a-z A-Z)_ROOT
  if [ -z "${!var:-}" ] && [ ! -e "/usr/local/cuda/include/$pkg.h" ]; then
    root=$(python3 -c "import nvidia.$pkg as m; print(list(m.__path__)[0])" 2>/dev/null) || root=""
    if [ -n "$root" ]; then
      export "$var=$root"
      export LD_LIBRARY_PATH="$root/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    fi
  fi
  [ -n "${!var:-}" ] && cmake_args+=("-D$var=${!var}")
done

gpu_name=$(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null | head -n1)
if [ -n "$gpu_name" ]; then
  cmake_args+=(-DCMAKE_CUDA_ARCHITECTURES=native)  # this GPU only: the build is several times shorter
fi

# ---- build ----
t0=$(date +%s)
if cmake -S . -B "$build" "${cmake_args[@]}" >"$build/configure.log" 2>&1 &&
   cmake --build "$build" -j"$(nproc)" >"$build/build.log" 2>&1; then
  row "configure + build (CUDA)" ok "$(( $(date +%s) - t0 )) s; $(grep -m1 'CUDA: ' "$build/configure.log" | sed 's/^-- *//')"
else
  tail -n 30 "$build/configure.log" "$build/build.log" 2>/dev/null
  row "configure + build (CUDA)" FAIL "see $build/configure.log and $build/build.log"
  finish
fi
if [ -z "$gpu_name" ]; then
  row "GPU" skipped "no GPU (nvidia-smi found none): built only"
  failed=0
  finish
fi
row "GPU" info "$gpu_name"
bin="$build/bin"

# ---- tests labelled gpu ----
if ctest --test-dir "$build" -L gpu --output-on-failure --timeout 600 >"$build/ctest_gpu.log" 2>&1; then
  row "ctest -L gpu" ok "$(grep -E 'tests passed' "$build/ctest_gpu.log" | tail -n1)"
else
  row "ctest -L gpu" FAIL "$(grep -E 'tests passed|tests failed' "$build/ctest_gpu.log" | tail -n1); see $build/ctest_gpu.log"
fi

# ---- parity table on cuda ----
"$bin/test_parity" --device cuda >"$build/parity_cuda.log" 2>&1
rc=$?
case $rc in
  0) row "parity table on cuda" ok "$(tail -n1 "$build/parity_cuda.log")" ;;
  77) row "parity table on cuda" FAIL "skipped although a GPU is present: $(head -n1 "$build/parity_cuda.log")" ;;
  *) row "parity table on cuda" FAIL "$(tail -n1 "$build/parity_cuda.log"); see $build/parity_cuda.log" ;;
esac

# ---- one epoch of MNIST on cuda and on the host ----
acc_of() { sed -n 's/.*final test accuracy: \([0-9.]*\)%.*/\1/p' "$1" | tail -n1; }
ips_of() { sed -n 's/.*training throughput: \([0-9.]*\) images\/s.*/\1/p' "$1" | tail -n1; }
"$bin/mnist_cnn" --device cuda --epochs 1 --data "$data" --log-interval 100000 >"$build/mnist_cuda.log" 2>&1
rc_c=$?
"$bin/mnist_cnn" --device host --epochs 1 --data "$data" --log-interval 100000 >"$build/mnist_host.log" 2>&1
rc_h=$?
acc_c=$(acc_of "$build/mnist_cuda.log"); acc_h=$(acc_of "$build/mnist_host.log")
if [ $rc_c -eq 0 ] && [ $rc_h -eq 0 ] && [ -n "$acc_c" ] && [ -n "$acc_h" ]; then
  if awk -v a="$acc_c" -v b="$acc_h" 'BEGIN { d = a - b; exit !(d <= 0.5 && d >= -0.5) }'; then
    row "mnist 1 epoch cuda vs host" ok "accuracy $acc_c% vs $acc_h%; $(ips_of "$build/mnist_cuda.log") vs $(ips_of "$build/mnist_host.log") images/s"
  else
    row "mnist 1 epoch cuda vs host" FAIL "accuracy $acc_c% vs $acc_h% (more than 0.5 points apart)"
  fi
else
  row "mnist 1 epoch cuda vs host" FAIL "exit $rc_c / $rc_h; see $build/mnist_cuda.log, $build/mnist_host.log"
fi

# ---- two ranks sharing the GPU over shm ----
"$bin/cohortrun" --nproc-per-node 2 "$bin/mnist_cnn" --device cuda --comm shm --epochs 1 \
  --max-steps 100 --data "$data" --log-interval 100000 >"$build/ddp_shm_cuda.log" 2>&1
rc=$?
if [ $rc -eq 0 ] && grep -q "ranks hold identical weights: yes" "$build/ddp_shm_cuda.log"; then
  row "2 ranks on one GPU, shm" ok "$(grep -m1 'identical weights' "$build/ddp_shm_cuda.log" | sed 's/^.*(//; s/)$//'); $(ips_of "$build/ddp_shm_cuda.log") images/s"
else
  row "2 ranks on one GPU, shm" FAIL "exit $rc; see $build/ddp_shm_cuda.log"
fi

# ---- the model zoo on cuda: every model trains a few steps (docs/MODELS.md) ----
for m in cnn_a cnn_b resnet9 resnet50 vit; do
  "$bin/cifar_cnn" --device cuda --model "$m" --synthetic --synthetic-size 256 --batch-size 32 \
    --max-steps 8 --log-interval 1 --test-batch-size 64 >"$build/zoo_$m.log" 2>&1
  rc=$?
  if [ $rc -eq 0 ] && grep -q "final test accuracy" "$build/zoo_$m.log"; then
    row "zoo $m on cuda" ok "$(grep -oE 'loss [0-9.]+' "$build/zoo_$m.log" | head -n1) -> $(grep -oE 'loss [0-9.]+' "$build/zoo_$m.log" | tail -n1); $(ips_of "$build/zoo_$m.log") images/s"
  else
    row "zoo $m on cuda" FAIL "exit $rc; see $build/zoo_$m.log"
  fi
done
"$bin/cohortrun" --nproc-per-node 2 "$bin/cifar_cnn" --device cuda --comm shm --model resnet9 \
  --dataset fashion-mnist --data "$data" --max-steps 50 --log-interval 100000 >"$build/zoo_ddp_shm_cuda.log" 2>&1
rc=$?
if [ $rc -eq 0 ] && grep -q "ranks hold identical weights: yes" "$build/zoo_ddp_shm_cuda.log"; then
  row "resnet9 2 ranks on one GPU, shm" ok "$(ips_of "$build/zoo_ddp_shm_cuda.log") images/s"
else
  row "resnet9 2 ranks on one GPU, shm" FAIL "exit $rc; see $build/zoo_ddp_shm_cuda.log"
fi

# ---- training speed against PyTorch on the same GPU ----
if python3 -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null; then
  tv=$(python3 -c 'import torch; print(torch.__version__)')
  ips_t=""; ips_c=""
  for round in 1 2 3; do  # alternate the two sides; medians below
    t=$(python3 bench/mnist_torch.py --device cuda --steps "$steps" --data "$data" 2>>"$build/torch.log" |
        sed -n 's/^torch images\/s: \([0-9.]*\).*/\1/p')
    c=$("$bin/mnist_cnn" --device cuda --epochs 1 --max-steps "$steps" --data "$data" \
        --log-interval 100000 --test-batch-size 1000 2>>"$build/torch.log" |
        sed -n 's/.*training throughput: \([0-9.]*\) images\/s.*/\1/p')
    ips_t="$ips_t $t"; ips_c="$ips_c $c"
  done
  med() { printf '%s\n' $1 | sort -g | awk '{ v[NR] = $1 } END { print (NR ? v[int((NR + 1) / 2)] : "") }'; }
  mt=$(med "$ips_t"); mc=$(med "$ips_c")
  if [ -n "$mt" ] && [ -n "$mc" ]; then
    ratio=$(awk -v c="$mc" -v t="$mt" 'BEGIN { printf "%.2f", c / t }')
    res=ok
    awk -v r="$ratio" 'BEGIN { exit !(r >= 1.0) }' || res=FAIL
    row "mnist images/s vs torch $tv" "$res" "cohort $mc / torch $mt = ${ratio}x (batch 64, $steps steps, median of 3; target >= 1.0)"
  else
    row "mnist images/s vs torch $tv" FAIL "no figure (cohort:$ips_c torch:$ips_t); see $build/torch.log"
  fi
  # Per layer, forward + backward, against the same layers in PyTorch on this GPU.
  if "$bin/layers_bench" --device cuda --python python3 --rounds 3 >"$build/layers_bench_cuda.log" 2>&1; then
    row "layers_bench vs torch (model)" info "$(awk '$1 == "model" { print "cohort " $2 " ms, torch " $3 " ms, " $4 " (lower is faster)" }' "$build/layers_bench_cuda.log"); table in $build/layers_bench_cuda.log"
  else
    row "layers_bench vs torch" FAIL "see $build/layers_bench_cuda.log"
  fi
else
  row "mnist images/s vs torch" skipped "python3 has no torch with CUDA"
fi

# ---- nccl against NVIDIA's nccl-tests on the same GPUs (when its source was carried) ----
nccl_tests=${NCCL_TESTS_SRC:-${deps:+$deps/nccl-tests}}
if [ -n "$nccl_tests" ] && [ -f "$nccl_tests/src/all_reduce.cu" ]; then
  if bench/nccl_compare.sh --nccl-tests "$nccl_tests" --build "$build" >"$build/nccl_compare.log" 2>&1; then
    # Sizes from 64 MiB: the "win" ratio (nccl-tests time / cohort time), target >= 0.90.
    worst=$(awk -F'|' '$1 + 0 >= 67108864 { split($5, r, " "); print r[2] }' "$build/nccl_compare.log" | sort -g | head -n1)
    if [ -n "$worst" ]; then
      res=ok
      awk -v r="$worst" 'BEGIN { exit !(r >= 0.90) }' || res=FAIL
      row "nccl vs nccl-tests (>= 64 MiB)" "$res" "worst time ratio $worst (target >= 0.90); table in $build/nccl_compare.log"
    else
      row "nccl vs nccl-tests" info "$(tail -n1 "$build/nccl_compare.log")"
    fi
  else
    row "nccl vs nccl-tests" FAIL "see $build/nccl_compare.log"
  fi
else
  row "nccl vs nccl-tests" skipped "no nccl-tests source (carry it: tools/gpu_deps.sh download .gpu --nccl-tests SRC)"
fi
finish
