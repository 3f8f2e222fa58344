// Sequential: forward in order, backward in reverse, the first child told whether the input
// gradient is wanted. Neighbouring pairs are fused (see sequential.hpp): forward records which,
// and backward hands each fused pair its part.
#include "cohort/layers/sequential.hpp"

#include "cohort/layers/activation.hpp"
#include "cohort/layers/conv2d.hpp"
#include "cohort/layers/dropout.hpp"
#include "cohort/layers/linear.hpp"
#include "fusion_env.hpp"

namespace cohort::nn {

Sequential::Sequential() : Module("Sequential"), fusion_(detail::fusion_by_default()) {}

Sequential::Sequential(std::initializer_list<ModulePtr> children) : Sequential() {
  for (const auto& c : children) add(c);
}

Sequential::Sequential(std::initializer_list<NamedModule> named_children) : Sequential() {
  for (const auto& [name, c] : named_children) add(name, c);
}

Sequential::Sequential(std::vector<NamedModule> named_children) : Sequential() {
  for (auto& [name, c] : named_children) add(name, std::move(c));
}

std::shared_ptr<Sequential> sequential(std::initializer_list<NamedModule> named_children) {
  return std::make_shared<Sequential>(named_children);
}

std::shared_ptr<Sequential> sequential(std::initializer_list<ModulePtr> children) {
  return std::make_shared<Sequential>(children);
}

Sequential& Sequential::add(ModulePtr child) {
  return add(std::to_string(size()), std::move(child));
}

Sequential& Sequential::add(const std::string& name, ModulePtr child) {
  register_module(name, std::move(child));
  return *this;
}

Shape Sequential::output_shape_impl(const Shape& input) const {
  Shape s = input;
  for (const auto& [name, c] : children()) s = c->output_shape(s);
  return s;
}

// The fusion that children i and i + 1 allow now (Dropout's depends on the training mode).
Sequential::Fused Sequential::fuse_at(std::size_t i) const {
  const auto& kids = children();
  if (!fusion_ || i + 1 >= kids.size()) return Fused::none;
  Module* m = kids[i].second.get();
  Module* next = kids[i + 1].second.get();
  auto* act_next = dynamic_cast<ActivationLayer*>(next);
  if (dynamic_cast<ActivationLayer*>(m)) {
    auto* drop = dynamic_cast<Dropout*>(next);
    if (drop && drop->would_apply()) return Fused::act_dropout;
  }
  if (!act_next) return Fused::none;
  if (dynamic_cast<Conv2d*>(m)) return act_next->fusable() ? Fused::conv_act : Fused::none;
  auto* lin = dynamic_cast<Linear*>(m);
  if (!lin || !lin->bias() || fuse_at(i + 1) == Fused::act_dropout) return Fused::none;
  return act_next->fusable() ? Fused::linear_act : Fused::linear_bias_grad;
}

Tensor Sequential::forward_impl(const Tensor& x) {
  Tensor h = x;
  const auto& kids = children();
  fused_.assign(kids.size(), Fused::none);
  for (std::size_t i = 0; i < kids.size(); ++i) {
    Module& m = *kids[i].second;
    const Fused f = fuse_at(i);
    fused_[i] = f;
    if (f == Fused::conv_act || f == Fused::linear_act || f == Fused::act_dropout) {
      auto& second = *kids[i + 1].second;
      if (f == Fused::act_dropout) {
        auto& act = static_cast<ActivationLayer&>(m);
        auto& drop = static_cast<Dropout&>(second);
        try {
          act.pass_through_once();
          drop.fuse_activation_once(act.function(), act.alpha());
          h = drop.forward(act.forward(h));
        } catch (...) {  // a failed forward leaves no fusion pending for the next one
          act.pass_through_once(false);
          drop.fuse_activation_once(Activation::identity, 0.0f);
          throw;
        }
      } else {
        auto& act = static_cast<ActivationLayer&>(second);
        auto* conv = f == Fused::conv_act ? &static_cast<Conv2d&>(m) : nullptr;
        auto* lin = f == Fused::linear_act ? &static_cast<Linear&>(m) : nullptr;
        try {
          if (conv) conv->fuse_activation_once(act.function());
          if (lin) lin->fuse_activation_once(act.function());
          h = act.adopt_fused_output(m.forward(h));
        } catch (...) {
          if (conv) conv->fuse_activation_once(Activation::identity);
          if (lin) lin->fuse_activation_once(Activation::identity);
          throw;
        }
      }
      ++i;
      continue;
    }
    h = m.forward(h);  // linear_bias_grad fuses in backward only
  }
  return h;
}

std::vector<std::string> Sequential::last_fusions() const {
  static const char* const kinds[] = {"none", "conv_act", "linear_act", "linear_bias_grad",
                                      "act_dropout"};
  const auto& kids = children();
  std::vector<std::string> out;
  for (std::size_t i = 0; i + 1 < fused_.size() && i + 1 < kids.size(); ++i)
    if (fused_[i] != Fused::none)
      out.push_back(kids[i].first + "+" + kids[i + 1].first + " " +
                    kinds[static_cast<int>(fused_[i])]);
  return out;
}

Tensor Sequential::backward_impl(const Tensor& grad_output, bool need_input_grad) {
  Tensor g = grad_output;
  const auto& kids = children();
  for (std::size_t i = kids.size(); i-- > 0;) {
    const bool linear_pair =
        i >= 1 && i - 1 < fused_.size() &&
        (fused_[i - 1] == Fused::linear_act || fused_[i - 1] == Fused::linear_bias_grad);
    if (linear_pair) {
      auto& lin = static_cast<Linear&>(*kids[i - 1].second);
      auto& act = static_cast<ActivationLayer&>(*kids[i].second);
      if (lin.bias()->requires_grad) {
        try {
          act.fuse_bias_grad_once(lin.bias().get());
          g = act.backward(g, true);
          lin.bias_grad_done_once();
          g = lin.backward(g, i - 1 > 0 || need_input_grad);
        } catch (...) {  // a failed backward leaves no fusion pending for the next one
          act.fuse_bias_grad_once(nullptr);
          lin.bias_grad_done_once(false);
          throw;
        }
        --i;
        continue;
      }
    }
    g = kids[i].second->backward(g, i > 0 || need_input_grad);
  }
  return g;
}

void Sequential::summarize(const Shape& input, int depth, std::vector<SummaryRow>& rows) const {
  Module::summarize(input, depth, rows);
  Shape s = input;
  for (const auto& [name, c] : children()) {
    c->summarize(s, depth + 1, rows);
    s = c->output_shape(s);
  }
}

}  // namespace cohort::nn
