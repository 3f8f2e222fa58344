// Process-wide numeric modes that the vendor backends honour (cuDNN, cuBLAS). The host backend is
// always FP32 with FMA-free shared kernels and deterministic; these only change what a GPU may do.
//
// Both are read at every op, so a change applies to the next op enqueued. Initial values come from
// the environment when the process first asks: COHORT_ALLOW_TF32=1, COHORT_DETERMINISTIC=1.
#pragma once

namespace cohort {

// TF32 tensor-core math for f32 convolutions and GEMMs on GPUs that have it (Ampere and later):
// faster, with a 10-bit mantissa in the products. Off by default, so GPU results stay within the
// parity tolerances of the host's (PyTorch's torch.backends.cudnn.allow_tf32 defaults to on).
void set_allow_tf32(bool allow);
bool allow_tf32();

// Only algorithms whose results do not depend on scheduling (no atomics in cuDNN's convolution
// backward passes): the same inputs give bit-identical outputs run after run on one GPU. Off by
// default (cuDNN's fastest algorithm wins), as torch.use_deterministic_algorithms.
void set_deterministic_algorithms(bool on);
bool deterministic_algorithms();

}  // namespace cohort
