// Sequential: children run in order, as torch.nn.Sequential. Children are named "0", "1", ... when
// added without a name, or by the given name (torch's Sequential(OrderedDict(...))), which is how
// a model gets state_dict keys like "conv1.weight".
//
// Fusion, for neighbouring children (results and gradients have the unfused bits; each saves a
// pass over the activation tensor):
//   Conv2d -> ReLU/Sigmoid/Tanh: the activation in the convolution's bias pass
//     (Conv2d::fuse_activation_once).
//   activation -> Dropout (training, p > 0): one pass each way, dropout(f(x)) and its backward
//     (Dropout::fuse_activation_once).
//   Linear (with bias) -> activation, unless a Dropout takes the activation: backward adds the
//     bias gradient in the activation's backward pass (ops::bias_act_backward), and for
//     ReLU/Sigmoid/Tanh forward applies the activation in the bias pass.
// set_fusion(false), or COHORT_FUSION=off in the environment when the Sequential is built, runs
// every child on its own (for A/B runs); another value than on or off is an error.
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
  Sequential();
  Sequential(std::initializer_list<ModulePtr> children);
  Sequential(std::initializer_list<NamedModule> named_children);
  explicit Sequential(std::vector<NamedModule> named_children);

  // Appends `child` as "<index>" or under `name`; returns *this for chaining.
  Sequential& add(ModulePtr child);
  Sequential& add(const std::string& name, ModulePtr child);

  std::size_t size() const { return children().size(); }
  const ModulePtr& operator[](std::size_t i) const { return children().at(i).second; }

  void set_fusion(bool on) { fusion_ = on; }  // on by default (or as COHORT_FUSION says)
  bool fusion() const { return fusion_; }
  // The pairs the last forward fused, as "<first>+<second> <kind>" with the children's names, e.g.
  // "fc1+relu linear_act" (kinds: conv_act, linear_act, linear_bias_grad: backward only,
  // act_dropout); empty before a forward or with fusion off.
  std::vector<std::string> last_fusions() const;

 protected:
  Tensor forward_impl(const Tensor& x) override;
  Tensor backward_impl(const Tensor& grad_output, bool need_input_grad) override;
  Shape output_shape_impl(const Shape& input) const override;
  void summarize(const Shape& input, int depth, std::vector<SummaryRow>& rows) const override;

 private:
  // What the last forward fused, by the index of the pair's first child.
  enum class Fused : unsigned char { none, conv_act, linear_act, linear_bias_grad, act_dropout };
  Fused fuse_at(std::size_t i) const;

  bool fusion_;
  std::vector<Fused> fused_;
};

// The shared_ptr a model is passed around as, without spelling out the list's type:
//   auto net = nn::sequential({{"fc1", nn::make<nn::Linear>(784, 256, dev)},
//                              {"relu", nn::make<nn::ReLU>()},
//                              {"fc2", nn::make<nn::Linear>(256, 10, dev)}});
//   auto mlp = nn::sequential({nn::make<nn::Flatten>(), nn::make<nn::Linear>(784, 10, dev)});
std::shared_ptr<Sequential> sequential(std::initializer_list<NamedModule> named_children);
std::shared_ptr<Sequential> sequential(std::initializer_list<ModulePtr> children);

}  // namespace cohort::nn
