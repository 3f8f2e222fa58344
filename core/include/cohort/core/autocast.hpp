// Mixed precision by scope, as torch.autocast: inside `cohort::autocast guard(device, DType::bf16)`
// the ops of the low-precision list compute in bf16 (or f16) on that device; every other op, the
// tensors' storage, the parameters, the gradients and the optimizer stay f32.
//
// The low-precision list (PyTorch's CPU and CUDA autocast lists, aten/src/ATen/autocast_mode.cpp,
// "lower_precision_fp"): convolution forward, backward data and backward filter, GEMM (Linear,
// matmul) and batched GEMM (attention). Everything else stays f32 as PyTorch's fp32 list keeps
// reductions, softmax / log-softmax, losses and norms: here those ops simply are not on the list.
//
// What "compute in bf16" means here: the op's inputs are rounded to bf16, multiplied and summed in
// f32 (oneDNN's and cuBLAS's bf16 kernels accumulate in f32), and the result is written as f32.
// PyTorch writes the result as bf16 and hands bf16 to the next op; cohort keeps activations in f32
// storage, so the next op reads an f32 (its own inputs are rounded again where it is on the list).
// Gradients are therefore f32 end to end, and DDP reduces f32 (DeepSpeed issue 3979's accuracy
// loss came from reducing bf16 gradients).
//
// Where a device cannot compute the type (the host without AVX-512 BF16 or AMX, f16 on a CPU, a
// case its vendor library declines), the op runs in f32 and says so once per device and type on
// stderr; with `AutocastMode::strict` it throws instead, naming the device, the type and why.
//
// The state is per thread (as torch.autocast's) and names one device: ops on other devices are not
// affected. Scopes nest; the destructor restores the enclosing scope's state.
#pragma once

#include "cohort/core/dtype.hpp"

namespace cohort {

class Device;

enum class AutocastMode { fallback, strict };

class autocast {
 public:
  // dtype bf16 or f16 (f32 turns autocast off inside the scope); anything else throws.
  autocast(Device& device, DType dtype, AutocastMode mode = AutocastMode::fallback);
  ~autocast();
  autocast(const autocast&) = delete;
  autocast& operator=(const autocast&) = delete;

 private:
  const Device* prev_device_;
  DType prev_dtype_;
  AutocastMode prev_mode_;
};

// This thread's compute type for list ops on `device`: bf16 / f16 inside a scope for it, else f32.
DType autocast_dtype(const Device& device);
AutocastMode autocast_mode();

// For backends: an op asked to compute in `dtype` on `device` runs in f32 because `why`. Prints
// "cohort: autocast <dtype> on <device>: <why>; <op> and the other listed ops run in f32" once per
// (device, dtype), or throws under AutocastMode::strict.
void autocast_fell_back(const Device& device, DType dtype, const char* op, const char* why);

}  // namespace cohort
