// Sequential: forward in order, backward in reverse, the first child told whether the input
// gradient is wanted. Conv2d -> ReLU/Sigmoid/Tanh pairs are fused (see sequential.hpp).
#include "cohort/layers/sequential.hpp"

#include "cohort/layers/activation.hpp"
#include "cohort/layers/conv2d.hpp"

namespace cohort::nn {

Sequential::Sequential(std::initializer_list<ModulePtr> children) : Module("Sequential") {
  for (const auto& c : children) add(c);
}

Sequential::Sequential(std::initializer_list<NamedModule> named_children) : Module("Sequential") {
  for (const auto& [name, c] : named_children) add(name, c);
}

Sequential::Sequential(std::vector<NamedModule> named_children) : Module("Sequential") {
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

Tensor Sequential::forward_impl(const Tensor& x) {
  Tensor h = x;
  const auto& kids = children();
  for (std::size_t i = 0; i < kids.size(); ++i) {
    Module& m = *kids[i].second;
    if (fusion_ && i + 1 < kids.size()) {
      auto* conv = dynamic_cast<Conv2d*>(&m);
      auto* act = dynamic_cast<ActivationLayer*>(kids[i + 1].second.get());
      if (conv && act && act->fusable()) {
        conv->fuse_activation_once(act->function());
        h = act->adopt_fused_output(conv->forward(h));
        ++i;
        continue;
      }
    }
    h = m.forward(h);
  }
  return h;
}

Tensor Sequential::backward_impl(const Tensor& grad_output, bool need_input_grad) {
  Tensor g = grad_output;
  const auto& kids = children();
  for (std::size_t i = kids.size(); i-- > 0;)
    g = kids[i].second->backward(g, i > 0 || need_input_grad);
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
