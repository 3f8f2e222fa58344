// ZeRO stage 1 (sharded optimizer state) in one call, as PyTorch's ZeroRedundancyOptimizer is:
//
//   parallel::DDPOptions o;
//   o.zero_stage = 1;                                    // o.deterministic = true: DDP's bits
//   auto ddp = nn::make<parallel::DistributedDataParallel>(model, comm, o);
//   auto opt = parallel::make_zero_optimizer<optim::Adam>(*ddp, optim::AdamOptions{});
//   ... loss.forward(ddp->forward(x), y); ddp->backward(loss.backward(), false); opt->step();
//
// The optimizer is an ordinary cohort optimizer (any of them, schedulers and the Trainer take it)
// over this rank's shard of every trainable parameter (DistributedDataParallel::
// shard_parameters), so its state is 1/n of DDP's; its step() ends with the all-gather of the
// updated shards (attach_optimizer). Parameter groups (weight decay per group): shard each
// group's parameters with ddp.shard_parameters(group) and call ddp.attach_optimizer(opt) once.
// The optimizer's state() is this rank's shard only: a checkpoint of it is per rank.
#pragma once

#include <memory>
#include <vector>

#include "cohort/parallel/ddp.hpp"

namespace cohort::parallel {

// The wrapped model's parameters that require a gradient, in registration order.
inline std::vector<ParameterPtr> trainable_parameters(const nn::Module& model) {
  std::vector<ParameterPtr> out;
  for (const auto& p : model.named_parameters())
    if (p.param->requires_grad) out.push_back(p.param);
  return out;
}

// `Opt` (optim::SGD, Adam, AdamW, Adadelta, RMSprop) with `options` over this rank's shard of
// every trainable parameter of ddp's model, attached to ddp. ddp must have zero_stage >= 1.
template <class Opt, class Options>
std::unique_ptr<Opt> make_zero_optimizer(DistributedDataParallel& ddp, const Options& options) {
  auto opt = std::make_unique<Opt>(ddp.shard_parameters(trainable_parameters(ddp.module())),
                                   options);
  ddp.attach_optimizer(*opt);
  return opt;
}

}  // namespace cohort::parallel
