// Process-wide numeric modes that the vendor backends honour (cuDNN, cuBLAS). The host backend is
// always FP32 with FMA-free shared kernels and deterministic; these only change what a GPU may do.
//
// Each is read at every op, so a change applies to the next op enqueued. Initial values come from
// the environment when the process first asks: COHORT_ALLOW_TF32, COHORT_DETERMINISTIC and
// COHORT_CUDNN_BENCHMARK, each 1 (on) or 0 (off, the default when unset); any other value is an
// error (cohort::Error naming the variable and the value) at the first op that reads it.
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

// cuDNN convolution algorithms chosen by timing them (cudnnFindConvolution*AlgorithmEx) the first
// time each shape runs, rather than by cuDNN's heuristics: as torch.backends.cudnn.benchmark. The
// first step of each shape is slower; which algorithm wins may change from run to run, and with it
// the rounding (use deterministic_algorithms() too for repeatable bits). Off by default, as in
// PyTorch. The other modes' rules still apply to what the timing may pick.
void set_cudnn_benchmark(bool on);
bool cudnn_benchmark();

// The setting an environment variable of the modes above gives: unset or empty -> `unset`, "1"
// -> true, "0" -> false; anything else throws cohort::Error naming the variable and its value.
// (What the modes read on first use; cohort-doctor reports all three.)
bool math_mode_from_env(const char* name, bool unset = false);

}  // namespace cohort
