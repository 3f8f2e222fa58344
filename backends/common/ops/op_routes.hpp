// Where each op runs, for `cohort-doctor --ops`: the family of each op and the expansion of a
// backend's vendor route list into its route table. Apart from run_call.hpp so that a backend's
// op-table file can list its routes without compiling every family (backends/cuda/op_table.cu).
#pragma once

#include <string>
#include <vector>

#include "cohort/backend/op_list.hpp"
#include "cohort/backend/routes.hpp"

namespace cohort::kernels {

// The family header of each op (the table above, checked by the compiler: -Wswitch names an op
// added to op_list.hpp without a family here).
inline const char* op_family(Op op) {
  switch (op) {
    case Op::fill:
    case Op::cast:
    case Op::add:
    case Op::sub:
    case Op::mul:
    case Op::axpy:
    case Op::scale:
    case Op::clamp:
      return "elementwise.hpp";
    case Op::fill_uniform:
    case Op::fill_normal:
    case Op::dropout_forward:
    case Op::dropout_backward:
      return "random.hpp";
    case Op::reduce_sum:
    case Op::reduce_sum_sq:
    case Op::reduce_max:
    case Op::argmax:
      return "reduce.hpp";
    case Op::gemm:
    case Op::gemm_batched:
      return "gemm.hpp";
    case Op::conv2d_forward:
    case Op::conv2d_backward_data:
    case Op::conv2d_backward_filter:
      return "conv2d.hpp";
    case Op::pool2d_forward:
    case Op::pool2d_backward:
      return "pool2d.hpp";
    case Op::activation_forward:
    case Op::activation_backward:
    case Op::bias_add:
    case Op::bias_grad:
    case Op::bias_act_backward:
      return "activation.hpp";
    case Op::softmax_forward:
    case Op::softmax_backward:
    case Op::nll_forward:
    case Op::nll_backward:
    case Op::cross_entropy_backward:
      return "softmax_loss.hpp";
    case Op::batch_norm_forward:
    case Op::batch_norm_backward:
    case Op::layer_norm_forward:
    case Op::layer_norm_backward:
      return "norm.hpp";
    case Op::attention_forward:
    case Op::attention_backward:
      return "attention.hpp";
    case Op::permute:
    case Op::slice_copy:
      return "reshape.hpp";
    case Op::sgd_step:
    case Op::adam_step:
    case Op::adadelta_step:
    case Op::rmsprop_step:
    case Op::unscale_max_abs:
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
#define COHORT_DEFINE_OP_ROUTES(ExecType, LIST, device_name, shared_path)  \
  namespace {                                                              \
  using RouteExec = ExecType;                                              \
  LIST(COHORT_ROUTE_CHECK)                                                 \
  }                                                                        \
  DeviceRoutes op_routes() {                                               \
    return DeviceRoutes{device_name, shared_path,                          \
                        kernels::routes_with({LIST(COHORT_ROUTE_ENTRY)})}; \
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
