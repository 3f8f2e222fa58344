// What cudnn_state.hpp and the family files (conv2d.cpp, norm.cpp, softmax_loss.cpp) does with the status of a cuDNN execute call (convolution, bias gradient,
// batch norm, softmax), as a plain function of the status number so that a CPU test can check it
// against cudnn_graph.h's values (review finding G6). cuDNN 9 reports CUDNN_STATUS_NOT_SUPPORTED
// (3000) or a sub-code 3001-3014 from an execute call when the chosen engine cannot run here (a
// runtime-compiled engine without NVRTC, too little shared memory, an architecture mismatch, ...):
// the case is then not covered, which cudnn.hpp answers with "false" (try the next algorithm,
// else the shared kernels), never with an exception. Every other failure throws.
#pragma once

namespace cohort::cuda::seams {

enum class StatusAction : int {
  done,     // CUDNN_STATUS_SUCCESS
  decline,  // not supported: drop this algorithm / let the shared kernels run the case
  fail,     // anything else: throw (COHORT_CHECK_CUDNN)
};

StatusAction execute_status_action(int status);

// cudnnConvolutionBiasActivationForward (conv2d.cpp's fused forward, never run on a GPU when it was
// written): as execute_status_action, and a BAD_PARAM status (2000-2999) declines too. cuDNN
// documents combinations the fused call refuses that way (an activation its algorithm lacks, z or
// bias descriptors it will not take); the plain convolution and the bias + ReLU pass then compute
// the same op, so declining costs speed, never a result. An INTERNAL_ERROR status (4000-4999: a
// runtime-compiled engine that failed to build, an allocation inside cuDNN) declines as well
// (GPU review 2, Q2): the fused call is only an optimisation of what the plain route computes, and
// that route reports its own error if the cause is not the fusion. EXECUTION_FAILED (5xxx) and the
// rest still fail the op.
StatusAction fused_status_action(int status);

}  // namespace cohort::cuda::seams
