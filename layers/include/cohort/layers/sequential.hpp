// Sequential: children run in order, as torch.nn.Sequential. Children are named "0", "1", ... when
// added without a name, or by the given name (torch's Sequential(OrderedDict(...))), which is how
// a model gets state_dict keys like "conv1.weight".
//
// Fusion: a Conv2d followed directly by a ReLU, Sigmoid or Tanh applies the activation inside the
// convolution's pass over its output (see Conv2d::fuse_activation_once); results and gradients are
// the same as unfused, one pass over the activation tensor is saved.
#pragma once

#include <initializer_list>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "cohort/layers/module.hpp"

namespace cohort::nn {

// A child with its state_dict name: {"fc1", nn::make<nn::Linear>(784, 256, dev)}.
using NamedModule = std::pair<std::string, ModulePtr>;

class Sequential : public Module {
 public:
  Sequential() : Module("Sequential") {}
  Sequential(std::initializer_list<ModulePtr> children);
  Sequential(std::initializer_list<NamedModule> named_children);
  explicit Sequential(std::vector<NamedModule> named_children);

  // Appends `child` as "<index>" or under `name`; returns *this for chaining.
  Sequential& add(ModulePtr child);
  Sequential& add(const std::string& name, ModulePtr child);

  std::size_t size() const { return children().size(); }
  const ModulePtr& operator[](std::size_t i) const { return children().at(i).second; }

  void set_fusion(bool on) { fusion_ = on; }  // on by default

 protected:
  Tensor forward_impl(const Tensor& x) override;
  Tensor backward_impl(const Tensor& grad_output, bool need_input_grad) override;
  Shape output_shape_impl(const Shape& input) const override;
  void summarize(const Shape& input, int depth, std::vector<SummaryRow>& rows) const override;

 private:
  bool fusion_ = true;
};

// The shared_ptr a model is passed around as, without spelling out the list's type:
//   auto net = nn::sequential({{"fc1", nn::make<nn::Linear>(784, 256, dev)},
//                              {"relu", nn::make<nn::ReLU>()},
//                              {"fc2", nn::make<nn::Linear>(256, 10, dev)}});
//   auto mlp = nn::sequential({nn::make<nn::Flatten>(), nn::make<nn::Linear>(784, 10, dev)});
std::shared_ptr<Sequential> sequential(std::initializer_list<NamedModule> named_children);
std::shared_ptr<Sequential> sequential(std::initializer_list<ModulePtr> children);

}  // namespace cohort::nn
