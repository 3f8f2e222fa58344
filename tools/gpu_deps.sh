#!/usr/bin/env bash
# Carries cohort's Debian dependencies to a GPU machine that has the CUDA toolkit but no Debian
# packages and no network (docs/GPU.md):
#
#   tools/gpu_deps.sh download [DIR] [--nccl-tests SRC]
#                                      on this machine: apt-get download the .deb files into
#                                      DIR/debs; with --nccl-tests, also a copy of NVIDIA's
#                                      nccl-tests source tree SRC (a checkout or `git archive` of
#                                      github.com/NVIDIA/nccl-tests) into DIR/nccl-tests, for
#                                      bench/nccl_compare.sh there
#   tools/gpu_deps.sh unpack [DIR]     on the GPU machine: unpack them into DIR/prefix and print the
#                                      variables a build needs (tools/gpu_check.sh does this itself)
#   tools/gpu_deps.sh bundle [DIR] [BUILD]
#                                      on this machine, instead of download: the run-time packages
#                                      only, plus BUILD (default build, a CUDA build made here; its
#                                      architectures must include sm_90: the default without a
#                                      GPU, 90, does; checked in its build.ninja) packed as
#                                      DIR/build.tar.xz, so the GPU machine spends none of its
#                                      minutes compiling. tools/gpu_check.sh unpacks it there when
#                                      BUILD/bin is missing; run its stages but build.
#
# DIR defaults to .gpu (add `/.gpu/` to .git/info/exclude so it never gets committed). Unpacking
# uses `dpkg -x` where dpkg exists and `ar` + `tar` otherwise, and recreates the links Debian makes
# with update-alternatives (libblas.so.3, liblapack.so.3, libopenblas.so.0), which no .deb holds.
# Everything else tools/gpu_check.sh's stages use is on the GPU machine already: the toolkit (nvcc,
# compute-sanitizer), cuDNN and NCCL (pip wheels), PyTorch with CUDA.
set -euo pipefail

cmd=${1:-}
dir=${2:-.gpu}

# Build-time (-dev) and run-time packages of every library the build links, and the libraries
# those link in turn (ldd of Kokkos Kernels, oneDNN and UCX on Debian 12).
packages=(
  libtrilinos-kokkos-13.2 libtrilinos-kokkos-dev
  libtrilinos-kokkos-kernels-13.2 libtrilinos-kokkos-kernels-dev
  libopenblas0 libopenblas0-pthread libopenblas-dev libopenblas-pthread-dev
  libgfortran5 libquadmath0
  libdnnl2 libdnnl-dev ocl-icd-libopencl1
  libucx0 libucx-dev libnuma1
  dataset-fashion-mnist                 # the data of mnist_cnn (about 30 MB)
  doctest-dev libcli11-dev nlohmann-json3-dev
  zlib1g zlib1g-dev
  libjpeg62-turbo                       # the data loader's JPEG decoding (libcohort_data)
)
# What a carried build needs at run time (bundle): the packages above without the -dev ones.
runtime_packages=()
for p in "${packages[@]}"; do
  case "$p" in *-dev) ;; *) runtime_packages+=("$p") ;; esac
done
# The device tool carries at most 64 MiB with the working tree (about 5 MiB).
bundle_limit=$((58 * 1024 * 1024))

case "$cmd" in
  download)
    mkdir -p "$dir/debs"
    (cd "$dir/debs" && apt-get download "${packages[@]}")
    du -sh "$dir/debs"
    if [ "${3:-}" = "--nccl-tests" ]; then
      [ -f "${4:-}/src/all_reduce.cu" ] || { echo "gpu_deps.sh: ${4:-} is not an nccl-tests source tree" >&2; exit 1; }
      rm -rf "$dir/nccl-tests" && mkdir -p "$dir/nccl-tests"
      tar -C "$4" --exclude=.git --exclude=build -cf - . | tar -C "$dir/nccl-tests" -xf -
      du -sh "$dir/nccl-tests"
    fi
    ;;
  bundle)
    build=${3:-build}
    [ -x "$build/bin/test_parity" ] && [ -f "$build/lib/libcohort_cuda.so" ] ||
      { echo "gpu_deps.sh: $build has no CUDA build (cmake --preset default with CUDA found, then build)" >&2; exit 1; }
    # The H100 and H200 are sm_90: the build must hold sm_90 machine code (or PTX of 90 or older,
    # which the driver compiles at load time), else every kernel fails with "no kernel image".
    archs=$(grep -o 'generate-code=arch=compute_[0-9a-z]*,code=[^ ]*' "$build/build.ninja" | sort -u | tr '\n' ' ')
    grep -Eq 'sm_90a?[],]|[[,]compute_(75|80|86|87|88|89|90)[],]' <<<"$archs" ||
      { echo "gpu_deps.sh: $build is compiled for ${archs:-no CUDA architecture}, without sm_90 (H100/H200): configure it with -DCMAKE_CUDA_ARCHITECTURES=90 (or a list holding 90) and build again" >&2; exit 1; }
    rm -rf "$dir/debs" "$dir/prefix" && mkdir -p "$dir/debs"
    (cd "$dir/debs" && apt-get download "${runtime_packages[@]}")
    # Programs, libraries, CMakeCache.txt (its source path) and ctest's files and working folders;
    # no objects, static libraries or ninja state.
    tar -C "$(dirname "$build")" -cJf "$dir/build.tar.xz" --exclude='*.o' --exclude='*.a' \
      --exclude=CMakeFiles --exclude='.ninja*' --exclude=Testing --exclude='gpu_check.*' --exclude='*.log' \
      --exclude="$(basename "$build")/bin/mpi_allreduce_bench" "$(basename "$build")"
    size=$(du -sb "$dir" | cut -f1)
    echo "gpu_deps.sh: $dir holds $((size / 1024 / 1024)) MiB (debs and $build packed)"
    [ "$size" -le "$bundle_limit" ] ||
      { echo "gpu_deps.sh: $dir is over $((bundle_limit / 1024 / 1024)) MiB: the device tool would refuse it" >&2; exit 1; }
    ;;
  unpack)
    [ -d "$dir/debs" ] || { echo "gpu_deps.sh: no $dir/debs (run 'tools/gpu_deps.sh download' first)" >&2; exit 1; }
    prefix="$(cd "$dir" && pwd)/prefix"
    mkdir -p "$prefix"
    for deb in "$dir"/debs/*.deb; do
      if command -v dpkg >/dev/null; then
        dpkg -x "$deb" "$prefix"
      else
        tmp=$(mktemp -d)
        abs=$(readlink -f "$deb")
        (cd "$tmp" && ar x "$abs" && tar -xf data.tar.* -C "$prefix")
        rm -rf "$tmp"
      fi
    done
    lib="$prefix/usr/lib/x86_64-linux-gnu"
    ln -sf openblas-pthread/libblas.so.3 "$lib/libblas.so.3"
    ln -sf openblas-pthread/liblapack.so.3 "$lib/liblapack.so.3"
    ln -sf "$(basename "$(ls "$lib"/openblas-pthread/libopenblasp-r*.so | head -n1)")" \
      "$lib/openblas-pthread/libopenblas.so.0"
    ln -sf openblas-pthread/libopenblas.so.0 "$lib/libopenblas.so.0"
    echo "CMAKE_PREFIX_PATH=$prefix/usr"
    echo "LD_LIBRARY_PATH=$lib:$lib/openblas-pthread"
    ;;
  *)
    sed -n '2,11p' "$0" >&2
    exit 2
    ;;
esac
