// cuDNN's share of the CUDA device's op table: whole-batch convolutions (forward, backward data,
// backward filter), batch normalisation in training, softmax and log-softmax. op_table.cu routes
// those calls here and runs everything cuDNN does not cover on the shared families. The handle is
// cudnn.cpp; each family's calls are in the file named after it (conv2d.cpp, norm.cpp,
// softmax_loss.cpp).
//
// Internal header, free of CUDA types (cudnn_state.hpp holds the handle and descriptors).
//
// Each entry point returns false, having enqueued nothing, when cuDNN does not cover the case: an
// extent or element count beyond cuDNN's 32-bit descriptors, batch norm outside training (the
// contract also writes the running statistics into save_mean / save_invstd then, which cuDNN's
// inference call does not), no convolution algorithm that satisfies the math modes and the
// workspace cap, or an execute call that answers CUDNN_STATUS_NOT_SUPPORTED* (after every ranked
// convolution algorithm was tried). Every argument of every call comes from seams/cudnn_*.hpp,
// plain values that tests/vendor checks on the CPU.
//
// Which API: cuDNN 9's legacy calls (cudnnConvolutionForward, cudnnBatchNormalization*,
// cudnnSoftmax*), deprecated but shipped and documented, rather than the graph (backend) API. The
// graph API without cudnn_frontend (absent from every machine here) takes about ten descriptor
// objects and attribute calls per convolution, and none of it can be run on this machine to check;
// the legacy calls are the ones PyTorch drove for years, with known semantics. docs/GPU.md says
// more, and where the graph API would pay off (fused conv + bias + activation).
//
// Numerics: f32 in, f32 accumulation. TF32 only when cohort::allow_tf32(); only deterministic
// algorithms when cohort::deterministic_algorithms() (cohort/core/math_mode.hpp). Convolutions
// under autocast: bf16 / f16 in and out, f32 accumulation, tensor-core math (ConvLowp below).
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "cohort/backend/op_calls.hpp"
#include "cuda/seams/cudnn_conv_algo.hpp"

namespace cohort::cuda {

class CudaDevice;

class Cudnn {
 public:
  // Creates the handle, bound to the device's compute stream (the device must be current).
  explicit Cudnn(CudaDevice& device);
  ~Cudnn();
  Cudnn(const Cudnn&) = delete;
  Cudnn& operator=(const Cudnn&) = delete;

  // Under autocast (c.a.compute bf16 or f16, and only then): the 16-bit copies the call reads in
  // place of its f32 inputs, and the 16-bit buffer it writes in place of its f32 output (y, dx,
  // or dw overwritten). The caller rounds and widens (op_table.cu; seams/cudnn_conv.hpp).
  struct ConvLowp {
    const void* x = nullptr;   // forward, backward filter
    const void* w = nullptr;   // forward, backward data
    const void* dy = nullptr;  // backward data, backward filter
    void* out = nullptr;
  };
  // y = conv(x, w). With `bias_act` (f32 only), f32 data, a bias and ReLU, the whole op in one
  // cudnnConvolutionBiasActivationForward call, *bias_act = true; otherwise (and when cuDNN
  // declines the fused call for every algorithm, said once on stderr) bias and activation are
  // left to the caller, *bias_act = false.
  bool conv_forward(const calls::Conv2dForward& c, const ConvLowp* lowp = nullptr,
                    bool* bias_act = nullptr);
  // dx = conv^T(dy, w).
  bool conv_backward_data(const calls::Conv2dBackwardData& c, const ConvLowp* lowp = nullptr);
  // dw += dy (*) x (under autocast: lowp->out = dy (*) x); dbias is conv_backward_bias's (c.dbias
  // is ignored here).
  bool conv_backward_filter(const calls::Conv2dBackwardFilter& c, const ConvLowp* lowp = nullptr);
  // dbias += sum over n, h, w of dy (cudnnConvolutionBackwardBias, alpha 1, beta 1); false when
  // c.dbias is null or cuDNN does not cover the case (the caller's shared pass runs it then).
  bool conv_backward_bias(const calls::Conv2dBackwardFilter& c);
  // Training mode only (c.a.training).
  bool batch_norm_forward(const calls::BatchNormForward& c);
  bool batch_norm_backward(const calls::BatchNormBackward& c);
  bool softmax_forward(const calls::SoftmaxForward& c);
  bool softmax_backward(const calls::SoftmaxBackward& c);

  // Convolution algorithms chosen so far (one ranked list per shape, direction and math mode).
  std::size_t cached_algorithms() const;

  // The algorithm that ran the latest convolution of each direction (those that ran so far), so
  // a GPU test can name it in a failure and pick its tolerance by family (GPU review G4).
  // COHORT_CUDNN_LOG=1 also prints every choice and fallback to stderr.
  struct ConvAlgorithmUsed {
    seams::ConvDir dir = seams::ConvDir::forward;
    int algo = -1;
    std::string name;  // "IMPLICIT_PRECOMP_GEMM", "WINOGRAD_NONFUSED", ...
    seams::AlgoFamily family = seams::AlgoFamily::unknown;
    int math_type = 0;  // cudnnMathType_t
    std::size_t workspace = 0;
    std::string shape;
    bool fused_bias_act = false;  // forward: bias and ReLU ran in the same cuDNN call
  };
  std::vector<ConvAlgorithmUsed> last_algorithms() const;

  // The handle and the algorithm cache (cudnn_state.hpp), shared by the family files' calls.
  struct State;

 private:
  std::unique_ptr<State> s_;
};

}  // namespace cohort::cuda
