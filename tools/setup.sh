#!/usr/bin/env bash
# Installs the Debian packages cohort needs, skipping what is already there. Idempotent; safe to run
# before every build. Run as root (or with sudo available).
#
#   tools/setup.sh            what the library, its examples and the main job need (README's first
#                             command)
#   tools/setup.sh --tests    also what the test suite needs: the launchers it runs cohort under
#                             (Open MPI, a one-node Slurm, network namespaces), clang's libFuzzer,
#                             matplotlib (README's test command; CI)
#   tools/setup.sh --peers    also the test packages and the peers the side-by-side benchmarks
#                             compare against (PyTorch 1.13 CPU, Open MPI, Gloo) and .venv-peers/,
#                             a virtual environment with the current torch, torchvision,
#                             safetensors and tensorboard, and torch-tb-profiler 0.4.3 (the PyTorch
#                             profiler plugin, for --profile-dir) from PyPI (the CUDA build: about
#                             5.5 GB, 1.5 min here)
#
# The CUDA toolkit (nvcc, cuBLAS, cuDNN, NCCL) is not a Debian package: it is used from
# /usr/local/cuda when present, and the CUDA backend is simply left out of the build when not.
set -euo pipefail

packages=(
  cmake ninja-build g++ pkg-config
  libtrilinos-kokkos-dev libtrilinos-kokkos-kernels-dev  # host execution (Kokkos Serial)
  libdnnl-dev                                            # host GEMM (oneDNN sgemm)
  libopenblas-dev                                        # the GEMM peer in bench/gemm_bench
  doctest-dev                                            # unit tests (configured by default)
  libucx-dev ucx-utils                                   # UCX communicator backend
  zlib1g-dev dataset-fashion-mnist                       # IDX data (gzip) and the real data set
  libjpeg62-turbo-dev                                    # TinyImageNet and image folders: JPEG (libjpeg-turbo)
  libpng-dev                                             # image folders: PNG
  nlohmann-json3-dev libcli11-dev
  python3                                                # configure: the docs' snippets
)
tests=(
  python3-matplotlib                                     # tools/plot_metrics.py, plot_swap.py
  python3-pil python3-numpy                              # tools/make_image_folder.py
  openmpi-bin iproute2 bc                                # launcher tests: mpirun, netns hosts
  slurm-wlm munge                                        # launcher tests: a one-node Slurm
  clang libclang-rt-14-dev                               # libFuzzer targets (tools/fuzz.sh)
)
peers=(python3-torch python3-torchvision libopenmpi-dev openmpi-bin libgloo-dev)

want_venv=0
for arg in "$@"; do
  case "$arg" in
    --tests) packages+=("${tests[@]}") ;;
    --peers) packages+=("${tests[@]}" "${peers[@]}"); want_venv=1 ;;
    -h|--help) sed -n '2,17p' "$0"; exit 0 ;;
    *) echo "setup.sh: unknown argument '$arg' (known: --tests, --peers, --help)" >&2; exit 2 ;;
  esac
done

missing=()
for p in "${packages[@]}"; do
  if ! grep -q "install ok installed" < <(dpkg-query -W -f='${Status}' "$p" 2>/dev/null); then
    missing+=("$p")
  fi
done

# The peers' virtual environment (PyPI, never the system python): what torchrun tests and the
# PyTorch benchmarks use. Made once; kept when torch already imports there.
peers_venv() {
  [ "$want_venv" = 1 ] || return 0
  local venv
  venv="$(cd "$(dirname "$0")/.." && pwd)/.venv-peers"
  if [ -x "$venv/bin/python" ] && "$venv/bin/python" -c 'import torch, torchvision, safetensors, tensorboard, torch_tb_profiler' 2>/dev/null; then
    echo "setup.sh: $venv has torch $("$venv/bin/python" -c 'import torch; print(torch.__version__)')"
    return 0
  fi
  echo "setup.sh: making $venv (torch, torchvision, safetensors, tensorboard, torch-tb-profiler from PyPI)"
  # torch-tb-profiler is pinned: its reader is what tests/train/test_profile_trace.py checks against.
  python3 -m venv "$venv" && "$venv/bin/pip" install --quiet torch torchvision safetensors tensorboard \
    torch-tb-profiler==0.4.3
}

if [ ${#missing[@]} -eq 0 ]; then
  echo "setup.sh: all ${#packages[@]} packages present"
  peers_venv
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
peers_venv
echo "setup.sh: done"
