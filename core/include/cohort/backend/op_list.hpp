// Backend interface: the op table of the device layer, listed once. Every other list follows from
// this one: the `Op` enum and op_name(), the `OpCall` variant that Device::supports() and
// Device::run() take, and through it every backend's op table (a std::visit over the variant).
//
// Where each op's pieces are, one hop from here (the group comments below name the family):
// clang-format off
//   call struct   cohort/backend/op_calls.hpp (extents: layer_args.hpp; scalars: optim_args.hpp)
//   front end     cohort/core/{ops,layer_ops,optim_ops}.hpp, checked in core/src/ops/<family>.cpp
//   shared code   backends/common/ops/<family>.hpp, forward and backward side by side
//   host          backends/host/<family>.cpp where oneDNN takes the op; backends/host/op_table.cpp
//                 routes it (and lists the route)
//   CUDA          backends/cuda/<family>.cpp where cuDNN or cuBLAS takes it, else
//                 backends/cuda/ops/<family>.cu (the shared code on Thrust); op_table.cu routes
//   parity row    tests/parity/parity_rows.cpp; reference in tests/parity/reference/ (one file
//                 per family, named by its subject: normalisation.cpp for norm.hpp, ...)
//   what runs where  `cohort-doctor --ops`
// clang-format on
// docs/ARCHITECTURE.md, "How to add an op", walks through one.
//
// X(name, Call): `name` is the op's enum value and printed name, `Call` its argument struct in
// cohort/backend/op_calls.hpp. Order is the enum order; append or insert freely.
#pragma once

#include <variant>

#include "cohort/backend/op_calls.hpp"

#define COHORT_OP_LIST(X)                         \
  /* elementwise.hpp (front ends: ops.hpp) */     \
  X(fill, Fill)                                   \
  X(cast, Cast)                                   \
  X(add, Add)                                     \
  X(sub, Sub)                                     \
  X(mul, Mul)                                     \
  X(axpy, Axpy)                                   \
  X(scale, Scale)                                 \
  X(clamp, Clamp)                                 \
  /* reduce.hpp (ops.hpp) */                      \
  X(reduce_sum, ReduceSum)                        \
  X(reduce_sum_sq, ReduceSumSq)                   \
  X(reduce_max, ReduceMax)                        \
  X(argmax, Argmax)                               \
  /* gemm.hpp (ops.hpp) */                        \
  X(gemm, Gemm)                                   \
  X(gemm_batched, GemmBatched)                    \
  /* random.hpp (ops.hpp, layer_ops.hpp) */       \
  X(fill_uniform, FillUniform)                    \
  X(fill_normal, FillNormal)                      \
  X(dropout_forward, DropoutForward)              \
  X(dropout_backward, DropoutBackward)            \
  /* conv2d.hpp (layer_ops.hpp) */                \
  X(conv2d_forward, Conv2dForward)                \
  X(conv2d_backward_data, Conv2dBackwardData)     \
  X(conv2d_backward_filter, Conv2dBackwardFilter) \
  /* pool2d.hpp (layer_ops.hpp) */                \
  X(pool2d_forward, Pool2dForward)                \
  X(pool2d_backward, Pool2dBackward)              \
  /* activation.hpp (layer_ops.hpp) */            \
  X(activation_forward, ActivationForward)        \
  X(activation_backward, ActivationBackward)      \
  X(bias_add, BiasAdd)                            \
  X(bias_grad, BiasGrad)                          \
  X(bias_act_backward, BiasActBackward)           \
  /* softmax_loss.hpp (layer_ops.hpp) */          \
  X(softmax_forward, SoftmaxForward)              \
  X(softmax_backward, SoftmaxBackward)            \
  X(nll_forward, NllForward)                      \
  X(nll_backward, NllBackward)                    \
  X(cross_entropy_backward, CrossEntropyBackward) \
  /* norm.hpp (layer_ops.hpp) */                  \
  X(batch_norm_forward, BatchNormForward)         \
  X(batch_norm_backward, BatchNormBackward)       \
  X(layer_norm_forward, LayerNormForward)         \
  X(layer_norm_backward, LayerNormBackward)       \
  /* attention.hpp (layer_ops.hpp) */             \
  X(attention_forward, AttentionForward)          \
  X(attention_backward, AttentionBackward)        \
  /* reshape.hpp (layer_ops.hpp) */               \
  X(permute, Permute)                             \
  X(slice_copy, SliceCopy)                        \
  /* optim.hpp (optim_ops.hpp) */                 \
  X(sgd_step, SgdStep)                            \
  X(adam_step, AdamStep)                          \
  X(adadelta_step, AdadeltaStep)                  \
  X(rmsprop_step, RmspropStep)                    \
  X(unscale_max_abs, UnscaleMaxAbs)

namespace cohort {

enum class Op : int {
#define COHORT_OP_ENUM(name, Call) name,
  COHORT_OP_LIST(COHORT_OP_ENUM)
#undef COHORT_OP_ENUM
      count_
};
const char* op_name(Op op);

namespace detail {
template <class First, class... Calls>
struct VariantOfRest {
  using type = std::variant<Calls...>;
};
}  // namespace detail

// One op call: which op (the alternative's index is its Op) and its arguments. A struct deriving
// from the variant (not an alias) so that cohort/core/device.hpp can forward-declare it and the
// user headers never see the call structs; std::visit and std::get_if take it as the variant.
#define COHORT_OP_TYPE(name, Call) , calls::Call
struct OpCall : detail::VariantOfRest<void COHORT_OP_LIST(COHORT_OP_TYPE)>::type {
  using Variant = detail::VariantOfRest<void COHORT_OP_LIST(COHORT_OP_TYPE)>::type;
  using Variant::Variant;
};
#undef COHORT_OP_TYPE
static_assert(std::variant_size_v<OpCall::Variant> == static_cast<std::size_t>(Op::count_),
              "OpCall and Op come from the same list");

inline Op op_of(const OpCall& call) { return static_cast<Op>(call.index()); }

}  // namespace cohort
