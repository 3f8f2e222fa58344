// Which GPU a rank uses: local rank i takes visible GPU i, the rule cohort::device("cuda") follows
// (cuda:i with i = local rank mod count), so the communicator and the rank's tensors are on the
// same GPU. NCCL needs one GPU per rank; this file says, without a store, why a rank has none:
// no GPU visible, or fewer GPUs than ranks on this host. Two ranks given the same GPU through
// CUDA_VISIBLE_DEVICES are only visible across ranks: setup.cpp compares PCI bus ids.
#include <cstdlib>
#include <string>

#include "cuda/cuda_device.hpp"
#include "nccl/context.hpp"

namespace cohort::comm::nccl::detail {

GpuChoice choose_gpu(const ProcessGroupInfo& info) {
  GpuChoice c;
  std::string why;
  c.visible = cuda::factory().count(&why);
  if (c.visible == 0) {
    c.why_not = "no GPU visible to this process (" + why + ")";
    return c;
  }
  const int local = info.local_rank, local_size = info.local_world_size;
  if (c.visible >= local_size) {
    c.device = local;
    return c;
  }
  const char* narrowed = std::getenv("CUDA_VISIBLE_DEVICES");
  if (narrowed && *narrowed) {
    // Each rank may see a different GPU (Slurm's --gpus-per-task does this): take local rank mod
    // visible, as cohort::device does; setup.cpp fails if two ranks end up on one GPU.
    c.device = local % c.visible;
    return c;
  }
  c.why_not = "fewer GPUs than ranks on this host: " + std::to_string(c.visible) + " GPU" +
              (c.visible == 1 ? "" : "s") + " visible for " + std::to_string(local_size) +
              " local ranks, so local rank " + std::to_string(local) + " would share cuda:" +
              std::to_string(local % c.visible) +
              " with another rank (duplicate GPU; NCCL needs one GPU per rank)";
  return c;
}

}  // namespace cohort::comm::nccl::detail
