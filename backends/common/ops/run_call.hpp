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
//   optim.hpp                     sgd_step adam_step adadelta_step rmsprop_step
#pragma once

#include <string>
#include <variant>
#include <vector>

#include "cohort/backend/op_list.hpp"
#include "cohort/backend/routes.hpp"
#include "common/ops/activation.hpp"
#include "common/ops/attention.hpp"
#include "common/ops/conv2d.hpp"
#include "common/ops/elementwise.hpp"
#include "common/ops/gemm.hpp"
#include "common/ops/norm.hpp"
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

// The family header of each op (the table above, checked by the compiler: -Wswitch names an op
// added to op_list.hpp without a family here).
inline const char* op_family(Op op) {
  switch (op) {
    case Op::fill: case Op::cast: case Op::add: case Op::sub: case Op::mul: case Op::axpy:
    case Op::scale: case Op::clamp:
      return "elementwise.hpp";
    case Op::fill_uniform: case Op::fill_normal: case Op::dropout_forward:
    case Op::dropout_backward:
      return "random.hpp";
    case Op::reduce_sum: case Op::reduce_sum_sq: case Op::reduce_max: case Op::argmax:
      return "reduce.hpp";
    case Op::gemm: case Op::gemm_batched:
      return "gemm.hpp";
    case Op::conv2d_forward: case Op::conv2d_backward_data: case Op::conv2d_backward_filter:
      return "conv2d.hpp";
    case Op::pool2d_forward: case Op::pool2d_backward:
      return "pool2d.hpp";
    case Op::activation_forward: case Op::activation_backward: case Op::bias_add:
    case Op::bias_grad:
    case Op::bias_act_backward:
      return "activation.hpp";
    case Op::softmax_forward: case Op::softmax_backward: case Op::nll_forward:
    case Op::nll_backward: case Op::cross_entropy_backward:
      return "softmax_loss.hpp";
    case Op::batch_norm_forward: case Op::batch_norm_backward: case Op::layer_norm_forward:
    case Op::layer_norm_backward:
      return "norm.hpp";
    case Op::attention_forward: case Op::attention_backward:
      return "attention.hpp";
    case Op::permute: case Op::slice_copy:
      return "reshape.hpp";
    case Op::sgd_step: case Op::adam_step: case Op::adadelta_step: case Op::rmsprop_step:
      return "optim.hpp";
    case Op::count_:
      break;
  }
  return "?";
}

// The two expansions of a backend's vendor route list X(name, Call, path, why) (op_table.*):
// COHORT_ROUTE_CHECK takes the address of the exact-match overload `run(RouteExec&, const
// calls::Call&)` (the backend names its executor RouteExec), so a listed route without its overload
// fails to compile; COHORT_ROUTE_ENTRY makes the route for routes_with().
#define COHORT_ROUTE_CHECK(name, Call, path, why) \
  [[maybe_unused]] void (*const check_##name)(RouteExec&, const calls::Call&) = &run;
#define COHORT_ROUTE_ENTRY(name, Call, path, why) OpRoute{Op::name, "", path, why},
// A backend's op_routes() from its vendor route list, with the address checks; used once per
// backend at namespace scope of its op_table file, after its run() overloads and its executor.
#define COHORT_DEFINE_OP_ROUTES(ExecType, LIST, device_name, shared_path)                      \
  namespace {                                                                                  \
  using RouteExec = ExecType;                                                                  \
  LIST(COHORT_ROUTE_CHECK)                                                                     \
  }                                                                                            \
  DeviceRoutes op_routes() {                                                                   \
    return DeviceRoutes{device_name, shared_path,                                             \
                        kernels::routes_with({LIST(COHORT_ROUTE_ENTRY)})};                    \
  }

// A backend's route table: every op on its shared family template, except the ops in `vendor`,
// which a vendor library takes first.
inline std::vector<OpRoute> routes_with(std::vector<OpRoute> vendor) {
  std::vector<OpRoute> all;
  for (int i = 0; i < static_cast<int>(Op::count_); ++i) {
    const Op op = static_cast<Op>(i);
    OpRoute r{op, op_family(op), "shared", ""};
    for (const OpRoute& v : vendor)
      if (v.op == op) r = OpRoute{op, op_family(op), v.path, v.why};
    all.push_back(r);
  }
  return all;
}

}  // namespace cohort::kernels
