// Horovod-style helpers (see cohort/parallel/horovod.hpp): each is a packed collective over the
// tensors Module and Optimizer already list.
#include "cohort/parallel/horovod.hpp"

#include <vector>

#include "cohort/core/error.hpp"
#include "consistency.hpp"
#include "packed.hpp"

namespace cohort::parallel {
namespace {
std::vector<Tensor> grads_of(const std::vector<ParameterPtr>& params) {
  std::vector<Tensor> g;
  for (const auto& p : params)
    if (p->requires_grad) g.push_back(p->grad);
  return g;
}
}  // namespace

void broadcast_parameters(nn::Module& model, comm::Communicator& comm, int root) {
  with_context("broadcast_parameters", [&] {
    detail::check_same_parameters(model, comm);
    std::vector<Tensor> state;
    for (const auto& e : model.state_dict()) state.push_back(e.tensor);
    if (detail::broadcast_from(state, comm, root)) model.notify_state_loaded();
  });
}

void average_gradients(nn::Module& model, comm::Communicator& comm) {
  with_context("average_gradients (all-reduce of the gradients)",
               [&] { detail::average_across_ranks(grads_of(model.parameters()), comm); });
}

DistributedOptimizer::DistributedOptimizer(optim::Optimizer& optimizer,
                                           std::shared_ptr<comm::Communicator> comm)
    : opt_(optimizer), comm_(std::move(comm)) {
  COHORT_CHECK(comm_ != nullptr, "DistributedOptimizer(", opt_.name(), "): the communicator is null");
  hook_ = opt_.register_step_pre_hook([this](optim::Optimizer& o) {
    std::vector<ParameterPtr> params;
    for (std::size_t g = 0; g < o.num_param_groups(); ++g)
      for (const auto& p : o.params(g)) params.push_back(p);
    with_context("DistributedOptimizer(" + o.name() + ")::step (all-reduce of the gradients)",
                 [&] { detail::average_across_ranks(grads_of(params), *comm_); });
  });
}

DistributedOptimizer::~DistributedOptimizer() { opt_.remove_step_pre_hook(hook_); }

}  // namespace cohort::parallel
