#!/usr/bin/env bash
# test_cuda_arch.sh SOURCE_DIR: the CUDA architectures configure picks and refuses
# (cmake/CohortOptions.cmake): `90` without a GPU, `native` where nvidia-smi lists one (a fake
# nvidia-smi; configure then fails at CMake's own native detection, after saying what it
# chose), and an entry nvcc does not know (72, sm_90) fails at configure naming it. Skips (77)
# without nvcc. Configures scratch trees without tests, examples or benchmarks (seconds each).
set -uo pipefail
src=$1
nvcc=${CUDACXX:-/usr/local/cuda/bin/nvcc}
[ -x "$nvcc" ] || { echo "no nvcc at $nvcc: skipped"; exit 77; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail=0
configure() {  # configure NAME [ARGS...]: output in $work/NAME.log, status returned
  local name=$1
  shift
  cmake -S "$src" -B "$work/$name" -G Ninja -DCOHORT_ENABLE_CUDA=ON -DCMAKE_CUDA_COMPILER="$nvcc" \
    -DCOHORT_BUILD_TESTS=OFF -DCOHORT_BUILD_EXAMPLES=OFF -DCOHORT_BUILD_BENCH=OFF "$@" \
    >"$work/$name.log" 2>&1
}
expect() {  # expect WHAT PATTERN LOG
  if grep -Eq -- "$2" "$3"; then
    echo "ok: $1"
  else
    echo "FAIL: $1: no line matches '$2' in:"
    tail -n 20 "$3"
    fail=1
  fi
}
# nvidia-smi as on a machine without a GPU (it fails) and as on one with a GPU (COHORT_NVIDIA_SMI
# is the program configure asks; whatever this machine has is not used).
printf '#!/bin/sh\necho "NVIDIA-SMI has failed because it could not communicate with the NVIDIA driver." >&2\nexit 9\n' >"$work/smi_none"
printf '#!/bin/sh\n[ "$1" = -L ] && echo "GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-0)"\n' >"$work/smi_gpu"
chmod +x "$work/smi_none" "$work/smi_gpu"

if configure none -DCOHORT_NVIDIA_SMI="$work/smi_none"; then
  expect "no GPU: sm_90 only" 'CUDA architectures: 90 \(no GPU seen' "$work/none.log"
else
  echo "FAIL: configure without a GPU failed:"; tail -n 20 "$work/none.log"; fail=1
fi
configure fake_gpu -DCOHORT_NVIDIA_SMI="$work/smi_gpu"
expect "nvidia-smi lists a GPU: native" 'CUDA architectures: native \(native: nvidia-smi lists a GPU\)' \
  "$work/fake_gpu.log"
for bad in "80-real;72" "sm_90"; do
  name=bad_${bad//[^a-z0-9]/_}
  if configure "$name" "-DCMAKE_CUDA_ARCHITECTURES=$bad"; then
    echo "FAIL: CMAKE_CUDA_ARCHITECTURES=$bad configured"; fail=1
  else
    entry=${bad##*;}
    expect "CMAKE_CUDA_ARCHITECTURES=$bad refused, naming '$entry'" \
      "CMAKE_CUDA_ARCHITECTURES entry '$entry' is not an architecture" "$work/$name.log"
  fi
done
exit $fail
