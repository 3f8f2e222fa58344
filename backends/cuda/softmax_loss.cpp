// The softmax and loss family on the CUDA device: cuDNN's softmax and log-softmax (forward and
// backward over the channel axis). op_table.cu routes softmax here first; the losses and every
// case cuDNN declines run the shared family (backends/common/ops/softmax_loss.hpp). Every argument
// comes from seams/cudnn_softmax.hpp, checked on the CPU by tests/vendor.
#include "cuda/seams/cudnn_softmax.hpp"
#include "cudnn_state.hpp"

namespace cohort::cuda {

using namespace cudnn_detail;

bool Cudnn::softmax_forward(const calls::SoftmaxForward& c) {
  const seams::SoftmaxValues v = seams::softmax_values(c.log, c.d);
  if (!v.covered) return false;
  const TensorDesc t = tensor_desc(v.t);
  COHORT_CUDNN_EXECUTE(cudnnSoftmaxForward(s_->handle, static_cast<cudnnSoftmaxAlgorithm_t>(v.algorithm),
                                           static_cast<cudnnSoftmaxMode_t>(v.mode), &v.alpha,
                                           t.get(), c.x, &v.beta, t.get(), c.y));
}

bool Cudnn::softmax_backward(const calls::SoftmaxBackward& c) {
  const seams::SoftmaxValues v = seams::softmax_values(c.log, c.d);
  if (!v.covered) return false;
  const TensorDesc t = tensor_desc(v.t);
  COHORT_CUDNN_EXECUTE(cudnnSoftmaxBackward(
      s_->handle, static_cast<cudnnSoftmaxAlgorithm_t>(v.algorithm),
      static_cast<cudnnSoftmaxMode_t>(v.mode), &v.alpha, t.get(), c.y, t.get(), c.dy, &v.beta,
      t.get(), c.dx));
}

}  // namespace cohort::cuda
