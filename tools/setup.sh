#!/usr/bin/env bash
# Installs every Debian package cohort needs to build and test, skipping what is already there.
# Idempotent; safe to run before every build. Run as root (or with sudo available).
#
#   tools/setup.sh            build + test dependencies
#   tools/setup.sh --peers    also the peers the side-by-side benchmarks compare against
#                             (PyTorch 1.13 CPU, Open MPI, Gloo)
#
# The CUDA toolkit (nvcc, cuBLAS, cuDNN, NCCL) is not a Debian package: it is used from
# /usr/local/cuda when present, and the CUDA backend is simply left out of the build when not.
set -euo pipefail

packages=(
  cmake ninja-build g++ pkg-config
  libtrilinos-kokkos-dev libtrilinos-kokkos-kernels-dev  # host execution (Kokkos Serial)
  libdnnl-dev                                            # host GEMM (oneDNN sgemm)
  libopenblas-dev                                        # the GEMM peer in bench/gemm_bench
  doctest-dev                                            # unit tests
  libucx-dev ucx-utils                                   # UCX communicator backend
  zlib1g-dev dataset-fashion-mnist                       # IDX data (gzip) and the real data set
  nlohmann-json3-dev libcli11-dev
  python3 python3-matplotlib                             # tools/plot_metrics.py
  openmpi-bin iproute2 bc                                # launcher tests: mpirun, netns hosts
  slurm-wlm munge                                        # launcher tests: a one-node Slurm
)
peers=(python3-torch libopenmpi-dev openmpi-bin libgloo-dev)

for arg in "$@"; do
  case "$arg" in
    --peers) packages+=("${peers[@]}") ;;
    -h|--help) sed -n '2,11p' "$0"; exit 0 ;;
    *) echo "setup.sh: unknown argument '$arg' (known: --peers, --help)" >&2; exit 2 ;;
  esac
done

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "setup.sh: all ${#packages[@]} packages present"
  exit 0
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || { echo "setup.sh: need root or sudo to install: ${missing[*]}" >&2; exit 1; }
  SUDO=sudo
fi
echo "setup.sh: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
echo "setup.sh: done"
