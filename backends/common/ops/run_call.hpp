// Every op of the table (cohort/backend/op_list.hpp) through the shared families: run_call() visits
// the call and picks run(e, c) by overload. A backend's executor type makes its own overloads
// (declared in backends/<dev>/<dev>_exec.hpp, defined in backends/<dev>/<family>.*) win over the
// shared templates, which is how a vendor library takes an op: exact-match non-templates beat
// templates. Where each op runs on each device: `cohort-doctor --ops` prints the route table.
//
// family (backends/common/ops/)   ops
//   elementwise.hpp               fill cast add sub mul axpy scale clamp
//   random.hpp                    fill_uniform fill_normal dropout_forward dropout_backward
//   reduce.hpp                    reduce_sum reduce_sum_sq reduce_max argmax
//   gemm.hpp                      gemm gemm_batched
//   conv2d.hpp                    conv2d_forward conv2d_backward_data conv2d_backward_filter
//   pool2d.hpp                    pool2d_forward pool2d_backward
//   activation.hpp                activation_forward activation_backward bias_add bias_grad
//                                 bias_act_backward
//   softmax_loss.hpp              softmax_forward softmax_backward nll_forward nll_backward
//                                 cross_entropy_backward
//   norm.hpp                      batch_norm_forward batch_norm_backward layer_norm_forward
//                                 layer_norm_backward
//   attention.hpp                 attention_forward attention_backward
//   reshape.hpp                   permute slice_copy
//   optim.hpp                     sgd_step adam_step adadelta_step rmsprop_step unscale_max_abs
#pragma once

#include <string>
#include <variant>
#include <vector>

#include "cohort/backend/op_list.hpp"
#include "common/ops/activation.hpp"
#include "common/ops/attention.hpp"
#include "common/ops/conv2d.hpp"
#include "common/ops/elementwise.hpp"
#include "common/ops/gemm.hpp"
#include "common/ops/norm.hpp"
#include "common/ops/op_routes.hpp"
#include "common/ops/optim.hpp"
#include "common/ops/pool2d.hpp"
#include "common/ops/random.hpp"
#include "common/ops/reduce.hpp"
#include "common/ops/reshape.hpp"
#include "common/ops/softmax_loss.hpp"

namespace cohort::kernels {

// Runs the call on executor `e`: the executor's own overload of run() where it has one, else the
// shared family template.
template <class Exec>
void run_call(Exec& e, const OpCall& call) {
  std::visit([&](const auto& c) { run(e, c); }, call);
}

}  // namespace cohort::kernels
