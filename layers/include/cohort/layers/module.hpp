// Module: the unit layers, containers and whole models are made of, shaped like torch.nn.Module
// but with explicit backward instead of autograd.
//
//   forward(x)                 runs the layer and keeps what its backward needs (inputs, outputs,
//                              statistics; references, not copies);
//   backward(grad_output)      consumes that state: accumulates parameter gradients (+=, like
//                              PyTorch's .grad), fires the grad-ready hooks and returns the
//                              gradient w.r.t. the input of the last forward.
//
// Under NoGradGuard (evaluation, inference) forward keeps nothing: each module drops its saved
// state as soon as its own forward returns, so activations are freed layer by layer, as under
// PyTorch's torch.no_grad(); a backward after such a forward is an error that says so.
//
// One backward per forward. A module instance may appear only once in a model's forward pass
// (use separate instances for repeated layers); a second backward without a new forward is an
// error, which is how reuse is caught.
//
// Names follow PyTorch's state_dict exactly: children are registered by name ("conv1", or "0",
// "1", ... in a Sequential), parameters and buffers under their module's dotted path
// ("features.0.weight", "bn1.running_mean"), so a PyTorch user can load a cohort model and back.
// Errors name the layer by that path and type: "Conv2d(conv1): expected 4-D input [N, 1, H, W],
// got [64, 784]".
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "cohort/core/error.hpp"
#include "cohort/core/parameter.hpp"
#include "cohort/core/tensor.hpp"

namespace cohort::nn {

class Module;
using ModulePtr = std::shared_ptr<Module>;

// An error raised while a module (or loss) ran: a cohort::Error whose message starts with the
// module's label ("Conv2d(features.0): ..."). Errors from the ops a layer calls are re-raised as
// LayerError with the label of the innermost module prefixed; enclosing modules pass them on.
class LayerError : public Error {
 public:
  LayerError(const Error& cause, std::string why)
      : Error(cause.file(), cause.line(), cause.expression(), cause.backend(), cause.rank(),
              std::move(why)) {}
};

// Whether forwards on this thread keep what backward needs (true unless a NoGradGuard is alive).
bool grad_enabled();

// While alive, forwards on this thread keep no state for backward (torch.no_grad()). Nests;
// restores the previous mode when destroyed. Trainer::evaluate runs under one.
class NoGradGuard {
 public:
  NoGradGuard();
  ~NoGradGuard();
  NoGradGuard(const NoGradGuard&) = delete;
  NoGradGuard& operator=(const NoGradGuard&) = delete;

 private:
  bool previous_;
};

// A buffer (running statistics, counters) or a state_dict entry with its dotted name.
struct NamedTensor {
  std::string name;
  Tensor tensor;
};

// Called when a parameter's gradient is final for this backward pass (see
// register_grad_ready_hook). The name is relative to the module the hook was registered on.
using GradReadyHook = std::function<void(const NamedParameter&)>;

// Called around one module's own forward and backward (see set_module_hooks). Any may be empty.
struct ModuleHooks {
  std::function<void(Module&)> pre_forward;    // before forward_impl (after the input check)
  std::function<void(Module&)> post_forward;   // after forward_impl returned
  std::function<void(Module&)> pre_backward;   // before backward_impl and its ensure_grad
  std::function<void(Module&)> post_backward;  // after backward_impl returned (its grads final)
};

class Module {
 public:
  virtual ~Module() = default;
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;

  // Checks the input (errors name this layer and the shapes), runs the layer, keeps the state
  // its backward needs. Blocks like the device's ops do (see cohort/core/device.hpp).
  Tensor forward(const Tensor& x);
  Tensor operator()(const Tensor& x) { return forward(x); }

  // grad_output must have the shape of the last forward's output. Accumulates into every
  // parameter's grad (zero_grad() resets them), fires the grad-ready hooks as each parameter's
  // gradient becomes final, and returns d(loss)/d(input); with need_input_grad = false it skips
  // that computation where it can (the first layer of a network) and returns an undefined tensor.
  Tensor backward(const Tensor& grad_output, bool need_input_grad = true);

  // The output shape for an input of shape `input`, without computing anything; throws the same
  // errors forward would.
  Shape output_shape(const Shape& input) const { return output_shape_impl(input); }

  // --- the module tree ---
  const std::string& type_name() const { return type_; }  // "Conv2d"
  // Dotted path from the root ("features.0"); empty for the root.
  const std::string& path() const { return path_; }
  // "Conv2d(features.0)", or "Conv2d" for a root: how errors name this module.
  std::string label() const;
  const std::vector<std::pair<std::string, ModulePtr>>& children() const { return children_; }
  // This module's own parameters (not its children's), in registration order.
  const std::vector<std::pair<std::string, ParameterPtr>>& own_parameters() const {
    return params_;
  }

  // --- parameters and state ---
  // Depth-first, each module's own entries first, in registration order (PyTorch's order).
  std::vector<ParameterPtr> parameters() const;
  std::vector<NamedParameter> named_parameters() const;
  std::vector<NamedTensor> named_buffers() const;
  // Parameters' values and buffers, per module in that order: the keys of PyTorch's state_dict.
  std::vector<NamedTensor> state_dict() const;
  // Copies values in by name (shapes must match). strict: every key of this module must be
  // present and every entry must be used.
  void load_state_dict(const std::vector<NamedTensor>& state, bool strict = true);
  std::int64_t num_parameters() const;  // elements over all parameters
  // The device of the first parameter, else of the first buffer; nullptr for a module with
  // neither (PyTorch's next(model.parameters()).device). Parameters whose value is released
  // (ZeRO stage 3 between uses) are passed over for their gradient's device, else skipped.
  Device* device() const;

  void zero_grad();
  // Training mode (dropout active, batch norm uses and updates batch statistics) or evaluation.
  void train(bool on = true);
  void eval() { train(false); }
  bool is_training() const { return training_; }
  // Moves every parameter (value and grad) and buffer to `device`. Optimizers built before the
  // move keep state on the old device: move first.
  void to(Device& device);

  // A table of every layer with its output shape and parameter count for an input of shape
  // `input`, then the totals.
  std::string summary(const Shape& input) const;

  // Calls `hook` once per parameter (with requires_grad) per backward, right after that
  // parameter's gradient is final, in reverse registration order as backward proceeds: data
  // parallelism starts all-reducing early gradients while backward still runs. Registered on the
  // root it sees state_dict names. Applies to the modules in the tree now and to children added
  // later; hooks run on the thread that calls backward.
  void register_grad_ready_hook(GradReadyHook hook);
  void clear_grad_ready_hooks();

  // Hooks around this module's own forward and backward (PyTorch's forward pre/post and full
  // backward pre/post hooks, one set per module: this replaces any set before; ModuleHooks{}
  // clears). Not inherited by children: each module runs its own. ZeRO stage 3 gathers a unit's
  // parameters in its pre hooks and frees them in its post hooks (parallel/zero3.cpp). A hook
  // that throws ends the forward or backward with its error.
  void set_module_hooks(ModuleHooks hooks) { module_hooks_ = std::move(hooks); }

  // Gradient synchronisation between replicas, for modules that have any (a data-parallel
  // wrapper such as parallel::DistributedDataParallel). While off, backward only accumulates
  // gradients locally; the first backward after it is turned back on synchronises the
  // accumulated sum. The Trainer turns it off for all but the last micro-batch of a step. A plain
  // module has nothing to synchronise: the default does nothing.
  virtual void set_grad_sync(bool on) { (void)on; }

  // Tells every module of the tree that parameter values or buffers were written in place (not
  // through load_state_dict), so modules that keep host copies of buffers (batch norm's batch
  // counter) refresh them. load_state_dict calls it itself.
  void notify_state_loaded();

 protected:
  explicit Module(std::string type_name) : type_(std::move(type_name)) {}

  virtual Tensor forward_impl(const Tensor& x) = 0;
  virtual Tensor backward_impl(const Tensor& grad_output, bool need_input_grad) = 0;
  virtual Shape output_shape_impl(const Shape& input) const = 0;
  // Drops what forward_impl kept for backward (saved inputs, outputs, statistics). Called right
  // after forward_impl under NoGradGuard; modules that keep tensors override it.
  virtual void release_saved() {}

  // Registration (in constructors). Names must be unique within the module.
  ParameterPtr register_parameter(const std::string& name, Tensor value);
  Tensor& register_buffer(const std::string& name, Tensor value);
  Tensor& buffer(const std::string& name);
  void register_module(const std::string& name, ModulePtr child);
  // Makes this module a wrapper of `inner` (its only child): parameters, buffers, state_dict
  // keys, hook names, paths and summary() are inner's own, without a prefix, so a wrapper's
  // state_dict loads into the plain model and back. Call once, in the constructor, before
  // anything else is registered.
  void register_wrapped_module(ModulePtr inner);
  // Registers `child` without a name of its own: its parameters, buffers and children appear
  // directly under this module's path, as if registered here. torchvision's Bottleneck holds
  // conv1, bn1, ... itself (layer1.0.conv1); a Residual built from a Sequential block names them
  // the same way with ResidualOptions::block_name = "". Names must not collide with this
  // module's other entries (checked by the caller, which knows them).
  void register_inlined_module(ModulePtr child);

  // Called on every module of the tree after load_state_dict copied values in (modules that keep
  // host copies of buffers refresh them).
  virtual void on_state_loaded() {}

  // Fires the grad-ready hooks for `p`, one of this module's own parameters, once its gradient
  // is final. Layers call it in reverse registration order.
  void grad_ready(const ParameterPtr& p);

  // Summary rows: a leaf adds itself; containers add themselves and recurse.
  struct SummaryRow {
    std::string name, type;
    Shape output;
    std::int64_t params = 0;
    int depth = 0;
  };
  virtual void summarize(const Shape& input, int depth, std::vector<SummaryRow>& rows) const;
  // A container's summarize() adds its children's rows through this (each child for the input
  // shape it receives), as Sequential and Residual do.
  static void summarize_child(const Module& child, const Shape& input, int depth,
                              std::vector<SummaryRow>& rows) {
    child.summarize(input, depth, rows);
  }
  friend class Sequential;
  friend class Residual;

 private:
  struct HookBinding {
    std::shared_ptr<GradReadyHook> hook;
    std::string prefix;  // this module's path relative to the module the hook was registered on
  };
  void set_path(const std::string& path);
  [[noreturn]] void rethrow_labeled(const Error& e) const;
  void check_values_present() const;
  void add_hook_binding(const std::shared_ptr<GradReadyHook>& hook, const std::string& prefix);
  void collect_parameters(const std::string& prefix, std::vector<NamedParameter>& out) const;
  void collect_buffers(const std::string& prefix, std::vector<NamedTensor>& out) const;
  void collect_state(const std::string& prefix, std::vector<NamedTensor>& out) const;

  std::string type_;
  std::string path_;
  bool training_ = true;
  bool wrapper_ = false;  // register_wrapped_module: summary() is the wrapped module's
  bool pending_backward_ = false;  // a forward whose backward has not run yet
  bool forward_without_grad_ = false;  // the last forward ran under NoGradGuard
  Shape last_output_shape_;
  std::vector<std::pair<std::string, ParameterPtr>> params_;
  std::vector<std::pair<std::string, Tensor>> buffers_;
  std::vector<std::pair<std::string, ModulePtr>> children_;
  std::vector<HookBinding> hooks_;
  ModuleHooks module_hooks_;
};

// Makes a module: nn::make<Conv2d>(Conv2dOptions(1, 32, 3), device).
template <class M, class... Args>
std::shared_ptr<M> make(Args&&... args) {
  return std::make_shared<M>(std::forward<Args>(args)...);
}

// FNV-1a over the state_dict (names, shapes, values read to the host) as 16 hex digits: equal
// digests mean equal weights and buffers. DDP's weights digest and checkpoint pairing (a model
// file and its training state must come from the same save) use it.
std::string state_digest(const Module& model);
// The same digest of a copy of the state held elsewhere (a checkpoint's snapshot in host memory):
// fold every entry in state_dict order, starting from kFnvOffset (core/hash.hpp), then digest_hex.
std::uint64_t state_digest_fold(std::uint64_t h, const std::string& name, const Shape& shape,
                                const void* bytes, std::size_t n);
std::string digest_hex(std::uint64_t h);

}  // namespace cohort::nn

namespace cohort::nn::detail {
// Throws a LayerError located at file:line (the same short path cohort::Error uses).
[[noreturn]] void throw_layer_error(const char* file, int line, const char* expr,
                                    const std::string& why);
}  // namespace cohort::nn::detail

// COHORT_CHECK inside a Module member, raising a LayerError prefixed with the module's label:
//   COHORT_MODULE_CHECK(x.rank() == 4, "expected 4-D input [N, C, H, W], got ", x.shape());
#define COHORT_MODULE_CHECK(cond, ...)                                                     \
  do {                                                                                     \
    if (!(cond))                                                                           \
      ::cohort::nn::detail::throw_layer_error(                                             \
          __FILE__, __LINE__, #cond, ::cohort::detail::concat(this->label(), ": ", __VA_ARGS__)); \
  } while (0)
