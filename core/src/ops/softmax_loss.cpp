// Softmax and class-index loss front ends (softmax_forward/backward, nll_forward/backward,
// cross_entropy_backward): checks, then one call of the op table
// (backends/common/ops/softmax_loss.hpp).
#include "cohort/core/layer_ops.hpp"

#include <vector>

#include "cohort/backend/dispatch.hpp"
#include "cohort/core/device.hpp"
#include "cohort/core/error.hpp"
#include "ops/checks.hpp"

namespace cohort::ops {

using namespace detail;

// ---- softmax ----

void softmax_forward(bool log, const Tensor& x, Tensor& y, int dim) {
  const char* op = log ? "log_softmax_forward" : "softmax_forward";
  req_f32(op, "x", x);
  const ChannelDims d = dims_around(x.shape(), norm_axis(op, dim, x));
  req_like(op, "y", y, x.shape(), x, "x");
  if (count(x) == 0) return;
  dispatch::run(x.device(), {&x}, {&y}, [&](const dispatch::Operands& o) {
    return calls::SoftmaxForward{log, d, o.in<float>(x), o.out<float>(y)};
  });
}

void softmax_backward(bool log, const Tensor& y, const Tensor& dy, Tensor& dx, int dim) {
  const char* op = log ? "log_softmax_backward" : "softmax_backward";
  req_f32(op, "y", y);
  const ChannelDims d = dims_around(y.shape(), norm_axis(op, dim, y));
  req_like(op, "dy", dy, y.shape(), y, "y");
  req_like(op, "dx", dx, y.shape(), y, "y");
  if (count(y) == 0) return;
  dispatch::run(y.device(), {&y, &dy}, {&dx}, [&](const dispatch::Operands& o) {
    return calls::SoftmaxBackward{log, d, o.in<float>(y), o.in<float>(dy), o.out<float>(dx)};
  });
}

namespace {

// Targets: i64 [rows], each in [0, classes). The values are checked only where the host can read
// them in place: reading a GPU's targets back would stop the device at every loss. There the
// DataLoader has checked them on the host before the upload, and the kernels turn an index out of
// range into a NaN loss (and NaN gradient row) instead of reading outside the row.
void check_targets(const char* op, const Tensor& target, i64 rows, i64 classes) {
  req_dtype(op, "target", target, DType::i64);
  COHORT_CHECK(target.rank() == 1 && target.dim(0) == rows, op, ": target is ",
               target.shape().str(), ", expected [", rows, "] (one class index per row)");
  if (!target.device().host_accessible()) return;
  const std::vector<std::int64_t> t = target.to_vector<std::int64_t>();
  for (std::size_t i = 0; i < t.size(); ++i)
    COHORT_CHECK(t[i] >= 0 && t[i] < classes, op, ": target[", i, "] = ", t[i],
                 " is not a class index in [0, ", classes, ")");
}

}  // namespace

// ---- class-index losses ----

namespace {
void req_rows(const char* op, const char* arg, const Tensor& t) {
  req_f32(op, arg, t);
  COHORT_CHECK(t.rank() == 2, op, ": expected '", arg, "' [N, C], got ", t.shape().str());
}
}  // namespace

void nll_forward(const Tensor& logp, const Tensor& target, Tensor& loss) {
  const char* op = "nll_forward";
  req_rows(op, "logp", logp);
  check_targets(op, target, logp.dim(0), logp.dim(1));
  req_same_device(op, logp, "logp", target, "target");
  req_like(op, "loss", loss, Shape{logp.dim(0)}, logp, "logp");
  if (logp.dim(0) == 0) return;
  dispatch::run(logp.device(), {&logp, &target}, {&loss}, [&](const dispatch::Operands& o) {
    return calls::NllForward{o.in<float>(logp), o.in<std::int64_t>(target),
                             static_cast<std::size_t>(logp.dim(0)),
                             static_cast<std::size_t>(logp.dim(1)), o.out<float>(loss)};
  });
}

void nll_backward(const Tensor& target, float scale, Tensor& dx) {
  const char* op = "nll_backward";
  req_rows(op, "dx", dx);
  check_targets(op, target, dx.dim(0), dx.dim(1));
  req_same_device(op, dx, "dx", target, "target");
  if (dx.dim(0) == 0) return;
  dispatch::run(dx.device(), {&target}, {&dx}, [&](const dispatch::Operands& o) {
    return calls::NllBackward{o.in<std::int64_t>(target), static_cast<std::size_t>(dx.dim(0)),
                              static_cast<std::size_t>(dx.dim(1)), scale, o.out<float>(dx)};
  });
}

void cross_entropy_backward(const Tensor& logp, const Tensor& target, float scale, Tensor& dx,
                            float label_smoothing) {
  const char* op = "cross_entropy_backward";
  COHORT_CHECK(label_smoothing >= 0.0f && label_smoothing <= 1.0f, op,
               ": label_smoothing must be in [0, 1], got ", label_smoothing);
  req_rows(op, "logp", logp);
  check_targets(op, target, logp.dim(0), logp.dim(1));
  req_same_device(op, logp, "logp", target, "target");
  req_like(op, "dx", dx, logp.shape(), logp, "logp");
  if (logp.dim(0) == 0) return;
  dispatch::run(logp.device(), {&logp, &target}, {&dx}, [&](const dispatch::Operands& o) {
    return calls::CrossEntropyBackward{o.in<float>(logp), o.in<std::int64_t>(target),
                                       static_cast<std::size_t>(logp.dim(0)),
                                       static_cast<std::size_t>(logp.dim(1)), scale,
                                       label_smoothing, o.out<float>(dx)};
  });
}

}  // namespace cohort::ops
