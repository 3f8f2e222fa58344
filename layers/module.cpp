// Module: the tree (paths, parameters, buffers, hooks), the forward/backward bookkeeping shared by
// every layer, and summary().
#include "cohort/layers/module.hpp"

#include <algorithm>
#include <cstdlib>
#include <iomanip>
#include <set>
#include <sstream>

#include "cohort/core/ops.hpp"

namespace cohort::nn {

namespace detail {
void throw_layer_error(const char* file, int line, const char* expr, const std::string& why) {
  try {
    ::cohort::detail::throw_error(file, line, expr, "", why);
  } catch (const Error& e) {
    throw LayerError(e, e.why());
  }
}
}  // namespace detail

namespace {
// The prefix of a child's names: "features." under "" for child "features"; a wrapped module
// (registered with an empty name) shares its wrapper's prefix.
std::string child_prefix(const std::string& prefix, const std::string& name) {
  return name.empty() ? prefix : prefix + name + ".";
}
std::string child_path(const std::string& path, const std::string& name) {
  if (name.empty()) return path;
  return path.empty() ? name : path + "." + name;
}
}  // namespace

std::string Module::label() const { return path_.empty() ? type_ : type_ + "(" + path_ + ")"; }

void Module::rethrow_labeled(const Error& e) const {
  const std::string l = label() + ":";
  if (e.why().compare(0, l.size(), l) == 0) throw LayerError(e, e.why());
  throw LayerError(e, l + " " + e.why());
}

namespace {
thread_local bool t_grad_enabled = true;
}  // namespace

bool grad_enabled() { return t_grad_enabled; }
NoGradGuard::NoGradGuard() : previous_(t_grad_enabled) { t_grad_enabled = false; }
NoGradGuard::~NoGradGuard() { t_grad_enabled = previous_; }

Tensor Module::forward(const Tensor& x) {
  Tensor y;
  COHORT_MODULE_CHECK(x.defined(), "input is an undefined tensor");
  if (module_hooks_.pre_forward) module_hooks_.pre_forward(*this);
  try {
    check_values_present();
    y = forward_impl(x);
  } catch (const LayerError&) {
    throw;
  } catch (const Error& e) {
    rethrow_labeled(e);
  }
  last_output_shape_ = y.shape();
  forward_without_grad_ = !grad_enabled();
  pending_backward_ = !forward_without_grad_;
  if (forward_without_grad_) release_saved();
  if (module_hooks_.post_forward) module_hooks_.post_forward(*this);
  return y;
}

Tensor Module::backward(const Tensor& grad_output, bool need_input_grad) {
  COHORT_MODULE_CHECK(!forward_without_grad_,
                      "backward after a forward under NoGradGuard (evaluation without gradients): "
                      "that forward kept nothing for backward; run the forward with gradients on");
  COHORT_MODULE_CHECK(pending_backward_,
                      "backward without a forward to match (one backward per forward; a module "
                      "instance may appear only once in a model's forward pass)");
  COHORT_MODULE_CHECK(grad_output.defined(), "grad_output is an undefined tensor");
  COHORT_MODULE_CHECK(grad_output.shape() == last_output_shape_, "grad_output is ",
                      grad_output.shape(), ", expected ", last_output_shape_,
                      " (the output of the last forward)");
  COHORT_MODULE_CHECK(grad_output.dtype() == DType::f32, "grad_output must be f32, got ",
                      dtype_name(grad_output.dtype()));
  pending_backward_ = false;
  if (module_hooks_.pre_backward) module_hooks_.pre_backward(*this);
  Tensor dx;
  try {
    check_values_present();
    // A released gradient (ZeRO stage 2) starts again at zeros, allocated as late as this: only
    // the modules whose backward has begun hold gradient memory.
    for (const auto& [name, p] : params_)
      if (p->requires_grad) ensure_grad(*p);
    dx = backward_impl(grad_output, need_input_grad);
  } catch (const LayerError&) {
    throw;
  } catch (const Error& e) {
    rethrow_labeled(e);
  }
  if (module_hooks_.post_backward) module_hooks_.post_backward(*this);
  return dx;
}

// A value released by ZeRO stage 3 comes back only through the hooks of the unit it belongs
// to: a module run outside that unit's forward (a parent reading a child's weights, a layer
// called directly) would otherwise compute on an undefined tensor.
void Module::check_values_present() const {
  for (const auto& [name, p] : params_)
    COHORT_MODULE_CHECK(p->value.defined(), "parameter '", name,
                        "' has no value here: it is "
                        "sharded (ZeRO stage 3) and gathered only inside the forward and "
                        "backward of the unit it belongs to, and this module ran outside them; "
                        "make this module (or a module around it that runs it) a unit "
                        "(DDPOptions::shard_units), or use zero_stage 2");
}

// ---- registration ----

ParameterPtr Module::register_parameter(const std::string& name, Tensor value) {
  for (const auto& [n, p] : params_)
    COHORT_MODULE_CHECK(n != name, "parameter '", name, "' registered twice");
  ParameterPtr p = make_parameter(std::move(value));
  params_.emplace_back(name, p);
  return p;
}

Tensor& Module::register_buffer(const std::string& name, Tensor value) {
  for (const auto& [n, b] : buffers_)
    COHORT_MODULE_CHECK(n != name, "buffer '", name, "' registered twice");
  buffers_.emplace_back(name, std::move(value));
  return buffers_.back().second;
}

Tensor& Module::buffer(const std::string& name) {
  for (auto& [n, b] : buffers_)
    if (n == name) return b;
  COHORT_MODULE_CHECK(false, "no buffer '", name, "'");
  std::abort();  // unreachable: the check throws
}

void Module::register_module(const std::string& name, ModulePtr child) {
  COHORT_MODULE_CHECK(child != nullptr, "child '", name, "' is null");
  COHORT_MODULE_CHECK(!name.empty() && name.find('.') == std::string::npos, "child name '", name,
                      "' must be non-empty and contain no '.'");
  for (const auto& [n, c] : children_) {
    COHORT_MODULE_CHECK(n != name, "child '", name, "' registered twice");
    COHORT_MODULE_CHECK(c != child, "the same ", child->type_name(), " instance is registered as '",
                        n, "' and as '", name, "'; use separate instances");
  }
  child->set_path(child_path(path_, name));
  child->train(training_);
  for (const auto& b : hooks_) child->add_hook_binding(b.hook, b.prefix + name + ".");
  children_.emplace_back(name, std::move(child));
}

void Module::register_wrapped_module(ModulePtr inner) {
  COHORT_MODULE_CHECK(inner != nullptr, "the wrapped module is null");
  COHORT_MODULE_CHECK(children_.empty() && params_.empty() && buffers_.empty(),
                      "a wrapper holds exactly one module and nothing else");
  inner->set_path(path_);
  inner->train(training_);
  for (const auto& b : hooks_) inner->add_hook_binding(b.hook, b.prefix);
  children_.emplace_back("", std::move(inner));
  wrapper_ = true;
}

void Module::register_inlined_module(ModulePtr child) {
  COHORT_MODULE_CHECK(child != nullptr, "the inlined module is null");
  COHORT_MODULE_CHECK(!wrapper_, "a wrapper holds exactly one module and nothing else");
  for (const auto& [n, c] : children_)
    COHORT_MODULE_CHECK(c != child, "the same ", child->type_name(),
                        " instance is registered twice");
  child->set_path(path_);
  child->train(training_);
  for (const auto& b : hooks_) child->add_hook_binding(b.hook, b.prefix);
  children_.emplace_back("", std::move(child));
}

void Module::set_path(const std::string& path) {
  path_ = path;
  for (auto& [name, c] : children_) c->set_path(child_path(path_, name));
}

// ---- hooks ----

void Module::register_grad_ready_hook(GradReadyHook hook) {
  COHORT_MODULE_CHECK(static_cast<bool>(hook), "register_grad_ready_hook: empty function");
  add_hook_binding(std::make_shared<GradReadyHook>(std::move(hook)), "");
}

void Module::add_hook_binding(const std::shared_ptr<GradReadyHook>& hook,
                              const std::string& prefix) {
  hooks_.push_back({hook, prefix});
  for (auto& [name, c] : children_) c->add_hook_binding(hook, child_prefix(prefix, name));
}

void Module::clear_grad_ready_hooks() {
  hooks_.clear();
  for (auto& [name, c] : children_) c->clear_grad_ready_hooks();
}

void Module::grad_ready(const ParameterPtr& p) {
  if (hooks_.empty() || !p->requires_grad) return;
  for (const auto& [name, own] : params_)
    if (own == p) {
      for (const auto& b : hooks_) (*b.hook)(NamedParameter{b.prefix + name, p});
      return;
    }
  COHORT_MODULE_CHECK(false, "grad_ready for a parameter this module does not own");
}

// ---- parameters and state ----

void Module::collect_parameters(const std::string& prefix, std::vector<NamedParameter>& out) const {
  for (const auto& [n, p] : params_) out.push_back({prefix + n, p});
  for (const auto& [n, c] : children_) c->collect_parameters(child_prefix(prefix, n), out);
}

void Module::collect_buffers(const std::string& prefix, std::vector<NamedTensor>& out) const {
  for (const auto& [n, b] : buffers_) out.push_back({prefix + n, b});
  for (const auto& [n, c] : children_) c->collect_buffers(child_prefix(prefix, n), out);
}

void Module::collect_state(const std::string& prefix, std::vector<NamedTensor>& out) const {
  for (const auto& [n, p] : params_) out.push_back({prefix + n, p->value});
  for (const auto& [n, b] : buffers_) out.push_back({prefix + n, b});
  for (const auto& [n, c] : children_) c->collect_state(child_prefix(prefix, n), out);
}

std::vector<NamedParameter> Module::named_parameters() const {
  std::vector<NamedParameter> all, out;
  collect_parameters("", all);
  std::set<const Parameter*> seen;  // a parameter shared between modules is listed once
  for (auto& np : all)
    if (seen.insert(np.param.get()).second) out.push_back(std::move(np));
  return out;
}

std::vector<ParameterPtr> Module::parameters() const {
  std::vector<ParameterPtr> out;
  for (auto& np : named_parameters()) out.push_back(np.param);
  return out;
}

std::vector<NamedTensor> Module::named_buffers() const {
  std::vector<NamedTensor> out;
  collect_buffers("", out);
  return out;
}

std::vector<NamedTensor> Module::state_dict() const {
  std::vector<NamedTensor> out;
  collect_state("", out);
  return out;
}

void Module::load_state_dict(const std::vector<NamedTensor>& state, bool strict) {
  // Every key, shape and dtype is checked before anything is copied, so a state that does not
  // fit leaves the module exactly as it was.
  std::vector<NamedTensor> mine = state_dict();
  std::vector<std::pair<Tensor*, const Tensor*>> copies;
  std::set<std::string> used;
  for (auto& entry : mine) {
    const NamedTensor* src = nullptr;
    for (const auto& s : state)
      if (s.name == entry.name) src = &s;
    if (src == nullptr) {
      COHORT_MODULE_CHECK(!strict, "load_state_dict: missing key '", entry.name, "'");
      continue;
    }
    COHORT_MODULE_CHECK(src->tensor.defined() && src->tensor.shape() == entry.tensor.shape() &&
                            src->tensor.dtype() == entry.tensor.dtype(),
                        "load_state_dict: '", entry.name, "' is ",
                        src->tensor.defined() ? src->tensor.shape().str() : "undefined", " ",
                        src->tensor.defined() ? dtype_name(src->tensor.dtype()) : "",
                        ", this module holds ", entry.tensor.shape(), " ",
                        dtype_name(entry.tensor.dtype()));
    copies.emplace_back(&entry.tensor, &src->tensor);
    used.insert(entry.name);
  }
  if (strict)
    for (const auto& s : state)
      COHORT_MODULE_CHECK(used.count(s.name) == 1, "load_state_dict: unexpected key '", s.name,
                          "'");
  for (auto& [dst, src] : copies) dst->copy_from(*src);
  notify_state_loaded();
}

void Module::notify_state_loaded() {
  on_state_loaded();
  for (auto& [n, c] : children_) c->notify_state_loaded();
}

Device* Module::device() const {
  for (const auto& p : named_parameters()) {
    if (p.param->value.defined()) return &p.param->value.device();
    if (p.param->grad.defined()) return &p.param->grad.device();
  }
  const auto bs = named_buffers();
  return bs.empty() ? nullptr : &bs.front().tensor.device();
}

std::int64_t Module::num_parameters() const {
  std::int64_t n = 0;
  for (const auto& p : parameters()) n += p->value.numel();
  return n;
}

void Module::zero_grad() {
  for (const auto& p : parameters())
    if (p->grad.defined()) ops::fill(p->grad, 0.0);
}

void Module::train(bool on) {
  training_ = on;
  for (auto& [n, c] : children_) c->train(on);
}

void Module::to(Device& device) {
  for (auto& [n, p] : params_) {
    if (&p->value.device() != &device) p->value = p->value.to(device);
    if (p->grad.defined() && &p->grad.device() != &device) p->grad = p->grad.to(device);
  }
  for (auto& [n, b] : buffers_)
    if (b.defined() && &b.device() != &device) b = b.to(device);
  pending_backward_ = false;  // state saved by a forward on the old device is gone
  for (auto& [n, c] : children_) c->to(device);
}

// ---- summary ----

void Module::summarize(const Shape& input, int depth, std::vector<SummaryRow>& rows) const {
  if (wrapper_) {  // a wrapper: the wrapped rows
    children_[0].second->summarize(input, depth, rows);
    return;
  }
  SummaryRow r;
  r.name = path_;
  r.type = type_;
  r.output = output_shape(input);
  r.params = num_parameters();
  r.depth = depth;
  rows.push_back(std::move(r));
}

namespace {
std::string thousands(std::int64_t v) {
  std::string s = std::to_string(v);
  for (int i = static_cast<int>(s.size()) - 3; i > 0; i -= 3)
    s.insert(static_cast<std::size_t>(i), ",");
  return s;
}
}  // namespace

std::string Module::summary(const Shape& input) const {
  if (wrapper_)  // a wrapper: the wrapped table
    return children_[0].second->summary(input);
  std::vector<SummaryRow> rows;
  if (children_.empty()) {
    summarize(input, 0, rows);
  } else {  // a container root lists its children; its own row would repeat the totals
    std::vector<SummaryRow> all;
    summarize(input, -1, all);
    for (auto& r : all)
      if (r.depth >= 0) rows.push_back(std::move(r));
  }
  std::size_t wname = std::string("Layer (type)").size(),
              wshape = std::string("Output shape").size(), wparam = std::string("Param #").size();
  std::vector<std::string> names;
  for (const auto& r : rows) {
    std::string n = std::string(static_cast<std::size_t>(2 * r.depth), ' ') +
                    (r.name.empty() ? "" : r.name + " ") + "(" + r.type + ")";
    wname = std::max(wname, n.size());
    wshape = std::max(wshape, r.output.str().size());
    wparam = std::max(wparam, thousands(r.params).size());
    names.push_back(std::move(n));
  }
  const std::size_t width = wname + 2 + wshape + 2 + wparam;
  std::ostringstream os;
  os << std::left << std::setw(static_cast<int>(wname)) << "Layer (type)" << "  "
     << std::setw(static_cast<int>(wshape)) << "Output shape" << "  " << std::right
     << std::setw(static_cast<int>(wparam)) << "Param #" << "\n"
     << std::string(width, '=') << "\n";
  for (std::size_t i = 0; i < rows.size(); ++i)
    os << std::left << std::setw(static_cast<int>(wname)) << names[i] << "  "
       << std::setw(static_cast<int>(wshape)) << rows[i].output.str() << "  " << std::right
       << std::setw(static_cast<int>(wparam)) << thousands(rows[i].params) << "\n";
  std::int64_t total = 0, trainable = 0;
  for (const auto& p : parameters()) {
    total += p->value.numel();
    if (p->requires_grad) trainable += p->value.numel();
  }
  os << std::string(width, '=') << "\n"
     << "Input: " << input << "\n"
     << "Total params: " << thousands(total) << "\n"
     << "Trainable params: " << thousands(trainable) << "\n"
     << "Non-trainable params: " << thousands(total - trainable) << "\n";
  return os.str();
}

}  // namespace cohort::nn
