#!/usr/bin/env bash
# Debian's oneDNN against Intel's PyPI builds on the MNIST CNN's kernels (issue 34, "measure
# before choosing"), pinned to one core (taskset), ROUNDS alternating rounds:
#   2.6.3  Debian's libdnnl-dev (what cohort links);
#   3.2.0  onednn-cpu-gomp / onednn-devel-cpu-gomp 2023.2.0 (GNU OpenMP, no other dependency);
#   3.13.2 onednn 2026.1.0, a SYCL build: it needs Intel's runtimes (dpcpp-cpp-rt 2026.2.0 and
#          what it pulls, about 500 MB) and runs its CPU kernels on the OpenCL CPU device; built
#          against 3.2's headers (the 3.x C API is stable; the wheel has no headers).
# The wheels are downloaded with pip into CACHE (default ~/.cache/cohort-onednn-ab), once.
#
#   bench/onednn_ab/run.sh [ROUNDS]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
rounds=${1:-2}
cache=${CACHE:-$HOME/.cache/cohort-onednn-ab}
mkdir -p "$cache"
cd "$cache"
get() {  # DIR PIP-ARGS...: the wheels, unpacked into DIR/x
  local dir=$1
  shift
  [ -d "$dir/x" ] && return 0
  pip download -q "$@" -d "$dir"
  for w in "$dir"/*.whl; do python3 -m zipfile -e "$w" "$dir/x"; done
}
get v32 --no-deps onednn-cpu-gomp==2023.2.0 onednn-devel-cpu-gomp==2023.2.0
get v313 --no-deps onednn==2026.1.0
get rt dpcpp-cpp-rt==2026.2.0
inc32=$(dirname "$(find v32/x -name dnnl.hpp | head -n1)")
lib32=$(dirname "$(find v32/x -name 'libdnnl.so.3' | head -n1)")
lib313=$(dirname "$(find v313/x -name 'libdnnl.so.3' | head -n1)")
rtlibs=$(find rt/x -type d -path '*data/lib' | tr '\n' ':')
ocl=$(find rt/x -name libintelocl.so | head -n1)
g++ -O2 -std=c++17 "$here/onednn_ab.cpp" -o ab_v2 -ldnnl
g++ -O2 -std=c++17 -I"$inc32" "$here/onednn_ab.cpp" -o ab_v3 -L"$lib32" -l:libdnnl.so.3 -fopenmp
export OMP_NUM_THREADS=1
echo "oneDNN A/B: $(date -u +%F), $(lscpu | sed -nE 's/^Model name: +//p'), one core (taskset -c 0)"
for r in $(seq "$rounds"); do
  echo "-- round $r"
  taskset -c 0 ./ab_v2
  LD_LIBRARY_PATH=$lib32 taskset -c 0 ./ab_v3
  OCL_ICD_FILENAMES=$cache/$ocl ONEAPI_DEVICE_SELECTOR=opencl:cpu LD_LIBRARY_PATH=$lib313:$rtlibs \
    taskset -c 0 ./ab_v3 2>&1 | grep -v '^onednn_verbose'
done
