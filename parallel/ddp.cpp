// DistributedDataParallel (see cohort/parallel/ddp.hpp for the contracts): the Module wrapper and
// the bucket life cycle (fill -> issue -> poll -> complete), read top to bottom here. How a bucket
// is reduced is its Reducer (reducer.hpp, reducers/); the one-broadcast copy of parameters and
// buffers is packed.cpp; the same-model check is consistency.cpp; digests are digest.cpp.
#include "cohort/parallel/ddp.hpp"
#include "cohort/parallel/sync_batchnorm.hpp"

#include <algorithm>
#include <unordered_map>
#include <utility>

#include "packed.hpp"
#include "cohort/core/dtype.hpp"
#include "cohort/core/error.hpp"
#include "cohort/core/trace.hpp"
#include "consistency.hpp"
#include "ddp_bucket.hpp"
#include "reducer.hpp"
#include "reducers/bucket_buffer.hpp"

namespace cohort::parallel {

namespace {

double now_s() { return static_cast<double>(trace::now_us()) * 1e-6; }

// Length of the union of [begin, end) intervals, and of its part before `cut`.
std::pair<double, double> union_length(std::vector<std::pair<double, double>> iv, double cut) {
  std::sort(iv.begin(), iv.end());
  double total = 0, before = 0, cur_b = 0, cur_e = -1;
  bool open = false;
  auto flush = [&] {
    if (!open) return;
    total += cur_e - cur_b;
    before += std::max(0.0, std::min(cur_e, cut) - cur_b);
  };
  for (const auto& [b, e] : iv) {
    if (open && b <= cur_e) {
      cur_e = std::max(cur_e, e);
    } else {
      flush();
      cur_b = b;
      cur_e = e;
      open = true;
    }
  }
  flush();
  return {total, before};
}

std::vector<Tensor> values_of(const std::vector<NamedParameter>& ps) {
  std::vector<Tensor> out;
  for (const auto& p : ps) out.push_back(p.param->value);
  return out;
}

std::vector<Tensor> tensors_of(const std::vector<nn::NamedTensor>& ts) {
  std::vector<Tensor> out;
  for (const auto& t : ts) out.push_back(t.tensor);
  return out;
}

}  // namespace

DistributedDataParallel::DistributedDataParallel(nn::ModulePtr model,
                                                 std::shared_ptr<comm::Communicator> comm,
                                                 DDPOptions options)
    : nn::Module("DistributedDataParallel"),
      model_(std::move(model)),
      comm_(std::move(comm)),
      opt_(options) {
  COHORT_CHECK(model_ != nullptr, "DistributedDataParallel: model is null");
  COHORT_CHECK(comm_ != nullptr, "DistributedDataParallel: communicator is null");
  COHORT_CHECK(opt_.bucket_cap_mb > 0 && opt_.first_bucket_mb > 0,
               "DistributedDataParallel: bucket sizes must be > 0 MiB, got bucket_cap_mb=",
               opt_.bucket_cap_mb, ", first_bucket_mb=", opt_.first_bucket_mb);
  COHORT_CHECK(!(opt_.bf16_compression && opt_.f16_compression),
               "DistributedDataParallel: bf16_compression and f16_compression are both set; "
               "pick one");
  check_zero_options();
  make_shard_groups();
  register_wrapped_module(model_);
  // A communicator without host memory (nccl) cannot reduce host parameters, nor stage them: say
  // so before any collective hands it host memory.
  if (!comm_->capabilities().host_memory)
    for (const auto& p : model_->named_parameters())
      COHORT_CHECK(!p.param->value.device().host_accessible(), "DistributedDataParallel: parameter '",
                   p.name, "' is on ", p.param->value.device().name(), ", and communicator '",
                   comm_->backend(), "' takes only GPU memory: put the model on the GPU "
                   "(--device cuda, or model.to(device) before wrapping it) or use a host backend "
                   "(shm, ucx)");
  detail::check_same_parameters(*model_, *comm_);

  // Everyone starts from rank 0's weights and buffers.
  with_context("DistributedDataParallel constructor (broadcast of rank 0's parameters and "
               "buffers)", [&] {
    if (detail::broadcast_from_rank0(values_of(model_->named_parameters()), *comm_))
      model_->notify_state_loaded();
    has_buffers_ = !model_->named_buffers().empty();
    sync_buffers_now();
  });

  for (const auto& p : model_->named_parameters()) {
    if (!p.param->requires_grad) continue;
    COHORT_CHECK(p.param->value.dtype() == DType::f32, "DistributedDataParallel: parameter '",
                 p.name, "' is ", dtype_name(p.param->value.dtype()), "; only f32 is supported");
    params_.push_back(p);
  }

  form_buckets();
  attach_buckets();
  if (shards_values()) shard_values();  // the whole values go; each unit keeps its chunk

  std::unordered_map<const Parameter*, int> index;
  for (std::size_t i = 0; i < params_.size(); ++i)
    index[params_[i].param.get()] = static_cast<int>(i);
  model_->register_grad_ready_hook([this, index](const NamedParameter& p) {
    auto it = index.find(p.param.get());
    if (it == index.end()) return;  // a parameter added after construction: not ours
    on_grad_ready(it->second);
  });
}

// Buckets in reverse registration order (the order backward finishes gradients): bucket 0 holds
// the last parameters and is capped at first_bucket_mb so the first collective starts early. At
// stage 3 one bucket per unit, in the units' order. ZeRO pads every bucket to n equal chunks.
void DistributedDataParallel::form_buckets() {
  bucket_of_.assign(params_.size(), -1);
  slot_of_.assign(params_.size(), -1);
  auto cap_elems = [](double mb) {
    return std::max<std::int64_t>(1, static_cast<std::int64_t>(mb * 1024 * 1024 / sizeof(float)));
  };
  std::unique_ptr<Bucket> cur;
  Device* cur_dev = nullptr;
  std::int64_t cur_elems = 0;
  if (shards_values()) {  // ZeRO stage 3: one bucket per unit (zero3.cpp), in the units' order
    plan_units();
    for (const auto& u : units_) {
      auto b = std::make_unique<Bucket>();
      for (int i : u->members) {
        slot_of_[static_cast<std::size_t>(i)] = static_cast<int>(b->members.size());
        bucket_of_[static_cast<std::size_t>(i)] = static_cast<int>(buckets_.size());
        b->members.push_back(i);
        b->numel += detail::bucket_slot(params_[static_cast<std::size_t>(i)].param->value.numel());
      }
      buckets_.push_back(std::move(b));
    }
  }
  for (int i = shards_values() ? -1 : static_cast<int>(params_.size()) - 1; i >= 0; --i) {
    const Tensor& v = params_[static_cast<std::size_t>(i)].param->value;
    const std::int64_t cap =
        cap_elems(buckets_.empty() ? opt_.first_bucket_mb : opt_.bucket_cap_mb);
    // A bucket is one device's memory; a parameter that would overflow it starts a new one
    // (a parameter larger than the cap gets a bucket of its own).
    // The cap counts the gradients' own elements, as PyTorch's does; the bucket's memory also
    // holds the padding that aligns each one (detail::bucket_slot).
    if (cur && (cur_elems + v.numel() > cap || cur_dev != &v.device()) && cur->numel > 0)
      buckets_.push_back(std::move(cur));
    if (!cur) {
      cur = std::make_unique<Bucket>();
      cur_dev = &v.device();
      cur_elems = 0;
    }
    cur_elems += v.numel();
    slot_of_[static_cast<std::size_t>(i)] = static_cast<int>(cur->members.size());
    cur->members.push_back(i);
    cur->numel += detail::bucket_slot(v.numel());
    bucket_of_[static_cast<std::size_t>(i)] = static_cast<int>(buckets_.size());
  }
  if (cur) buckets_.push_back(std::move(cur));
  // ZeRO: every bucket splits into shard-group-size equal chunks (zero padding at its end).
  const std::int64_t n = shard_communicator().size();
  if (opt_.zero_stage > 0)
    for (auto& b : buckets_) b->numel = (b->numel + n - 1) / n * n;
}

// Each bucket's reducer, and where its gradients live: views into it (gradient_as_bucket_view),
// or at stage 2 and 3 released until backward first needs them.
void DistributedDataParallel::attach_buckets() {
  for (auto& b : buckets_) {
    if (!b->device)
      b->device = &params_[static_cast<std::size_t>(b->members[0])].param->value.device();
    b->reducer =
        detail::make_reducer(opt_, shard_communicator(), *b->device, b->numel, replica_comm_.get());
    b->ready.assign(b->members.size(), 0);
    b->pending = static_cast<int>(b->members.size());
    if (releases_gradients()) {
      // ZeRO stage 2: no gradient memory between steps but the reducers' shards. When backward
      // first needs one of a bucket's gradients (ensure_grad), the bucket is taken and all its
      // gradients become views into it, as gradient_as_bucket_view.
      Bucket* bp = b.get();
      for (int m : b->members) {
        Parameter& p = *params_[static_cast<std::size_t>(m)].param;
        p.grad = Tensor();
        p.grad_source = [this, bp](Parameter&) { view_released_gradients_in(*bp); };
      }
    } else if (opt_.gradient_as_bucket_view) {
      view_gradients_in(*b);
    }
  }
}

// Points each member's gradient at its slice of the bucket (the order launch() packs them), keeping
// the values it had.
void DistributedDataParallel::view_gradients_in(Bucket& b) {
  const Tensor flat = b.reducer->flat_bucket();
  std::int64_t off = 0;
  for (int m : b.members) {
    Parameter& p = *params_[static_cast<std::size_t>(m)].param;
    Tensor view = flat.slice(off, off + p.value.numel()).reshape(p.value.shape());
    if (p.grad.defined()) view.copy_from(p.grad);  // else the bucket's zeros
    p.grad = view;
    off += detail::bucket_slot(p.value.numel());
  }
}

// Stage 2: takes the bucket and points every member's released gradient at its slice (a gradient
// the user replaced by a tensor of its own stays, and is copied at launch).
void DistributedDataParallel::view_released_gradients_in(Bucket& b) {
  if (!b.reducer->flat_bucket().defined()) give_back_released_buckets(kReleasedInFlight - 1);
  b.reducer->acquire_bucket();
  const Tensor flat = b.reducer->flat_bucket();
  std::int64_t off = 0;
  for (int m : b.members) {
    Parameter& p = *params_[static_cast<std::size_t>(m)].param;
    if (!p.grad.defined()) p.grad = flat.slice(off, off + p.value.numel()).reshape(p.value.shape());
    off += detail::bucket_slot(p.value.numel());
  }
}

DistributedDataParallel::~DistributedDataParallel() {
  model_->clear_grad_ready_hooks();
  for (const auto& p : params_) p.param->grad_source = nullptr;  // it points at this DDP
  // Stage 3: the units' hooks point at this DDP too, and a prefetched gather writes into its
  // unit's buffer. Released values stay released: the model is not usable without its DDP then.
  for (auto& u : units_) {
    if (u->module) u->module->set_module_hooks({});
    if (u->work) {
      try {
        u->work->wait();
      } catch (const std::exception&) {
        // As for the buckets below.
      }
    }
  }
  // Outstanding ops write into the reducers' buffers: let them finish before the buffers go.
  for (auto& b : buckets_) {
    if (b->work) {
      try {
        b->work->wait();
      } catch (const std::exception&) {
        // A failed communicator cannot be helped here; destructors do not throw.
      }
    }
  }
  // The wrapped model may outlive this module: its gradients get memory of their own again
  // instead of keeping the buckets (and, for communicator buffers, the communicator) alive.
  for (auto& b : buckets_) {
    if (!b->reducer) continue;  // a rebind() that failed half-way
    const Tensor flat = b->reducer->flat_bucket();
    if (!flat.defined()) continue;  // stage 2 between steps: no bucket, no views
    const char* lo = static_cast<const char*>(flat.raw());
    for (int m : b->members) {
      Parameter& p = *params_[static_cast<std::size_t>(m)].param;
      const char* g = p.grad.defined() ? static_cast<const char*>(p.grad.raw()) : nullptr;
      if (g && g >= lo && g < lo + flat.nbytes()) {
        try {
          p.grad = p.grad.clone();
        } catch (const std::exception&) {
          // Out of memory: the view stays and keeps its bucket alive; still correct.
        }
      }
    }
  }
}

void DistributedDataParallel::rebind(std::shared_ptr<comm::Communicator> comm, int root) {
  COHORT_CHECK(comm != nullptr, "DistributedDataParallel::rebind: communicator is null");
  COHORT_CHECK(root >= 0 && root < comm->size(), "DistributedDataParallel::rebind: root ", root,
               " is not a rank of the new group of ", comm->size());
  // The old ops are dropped unwaited: their communicator failed or lost its peers. Their buffers
  // are kept, with that communicator, until this DDP goes: a failed op of a backend with a
  // progress thread may still hold a receive into them.
  Retired old;
  old.comm = comm_;
  for (auto& b : buckets_) {
    b->work.reset();
    old.reducers.push_back(std::move(b->reducer));
    b->launched = b->done = b->completed = false;
  }
  old.shard_comm = shard_comm_;
  old.replica_comm = replica_comm_;
  comm_ = std::move(comm);
  make_shard_groups();
  rebind_sync_batchnorm(*model_, comm_);  // synchronised batch norms follow the group
  // Stage 3: the values are whole only inside summon_full_params() (a growth: the joiners'
  // constructors take them); otherwise only the shards, void in the new split, are here.
  const bool whole_values =
      !shards_values() || std::all_of(units_.begin(), units_.end(),
                                      [](const auto& u) { return u->state == Unit::State::alive; });
  if (opt_.zero_stage > 0) {
    reshard_onto_group(old);  // zero.cpp: the split for the new group's size
  } else {
    for (const auto& p : params_)
      if (p.param->grad.defined())
        p.param->grad =
            Tensor::zeros(p.param->value.shape(), p.param->value.dtype(), p.param->value.device());
  }
  retired_.push_back(std::move(old));
  with_context(
      "DistributedDataParallel::rebind (the same-model check and the broadcast of rank " +
          std::to_string(root) + "'s parameters and buffers to the new group)",
      [&] {
        detail::check_same_parameters(*model_, *comm_);
        bool written = whole_values &&
                       detail::broadcast_from(values_of(model_->named_parameters()), *comm_, root);
        if (has_buffers_)
          written |= detail::broadcast_from(tensors_of(model_->named_buffers()), *comm_, root);
        if (written) model_->notify_state_loaded();
      });
  // Reducers on the new group and the gradients' home, as the constructor makes them (after its
  // broadcast: a reducer that takes communicator buffers allocates them collectively, which a
  // joiner's constructor pairs with).
  attach_buckets();
  if (opt_.zero_stage > 0) place_new_shards(whole_values);  // zero.cpp
  next_launch_ = 0;
  in_step_ = false;
}

void DistributedDataParallel::sync_buffers() {
  with_context("DistributedDataParallel::sync_buffers (broadcast of rank 0's buffers)",
               [&] { sync_buffers_now(); });
}

void DistributedDataParallel::sync_buffers_now() {
  if (!has_buffers_ || comm_->size() == 1) return;
  trace::Span span("ddp sync_buffers", "comm");
  // Written in place on ranks > 0; modules that keep host copies of buffers (batch norm's batch
  // counter) refresh them.
  if (detail::broadcast_from_rank0(tensors_of(model_->named_buffers()), *comm_))
    model_->notify_state_loaded();
}

// ---- the Module side ----

Tensor DistributedDataParallel::forward_impl(const Tensor& x) {
  if (opt_.broadcast_buffers && syncing_ && model_->is_training())
    with_context("DistributedDataParallel::forward (broadcast of rank 0's buffers)",
                 [&] { sync_buffers_now(); });
  if (!shards_values()) return model_->forward(x);
  begin_sharded_forward();
  Tensor y = model_->forward(x);
  if (!nn::grad_enabled()) end_sharded_step();  // no backward follows (evaluation)
  return y;
}

Tensor DistributedDataParallel::backward_impl(const Tensor& grad_output, bool need_input_grad) {
  return with_context("DistributedDataParallel::backward (gradient all-reduce)", [&] {
    Tensor dx = model_->backward(grad_output, need_input_grad);
    finish_gradients_now();  // no-op inside no_sync() and at world size 1
    if (shards_values()) end_sharded_step();  // the root unit, and any unit its backward skipped
    return dx;
  });
}

Shape DistributedDataParallel::output_shape_impl(const Shape& input) const {
  return model_->output_shape(input);
}

// ---- the bucket life cycle ----

void DistributedDataParallel::on_grad_ready(int idx) {
  if (!syncing_ || comm_->size() == 1) return;
  const auto i = static_cast<std::size_t>(idx);
  const NamedParameter& p = params_[i];
  if (!in_step_) {
    in_step_ = true;
    ready_order_.clear();
  }
  ready_order_.push_back(p.name);
  Bucket& b = *buckets_[static_cast<std::size_t>(bucket_of_[i])];
  const auto pos = static_cast<std::size_t>(slot_of_[i]);
  COHORT_CHECK(!b.ready[pos] && !b.launched, "DistributedDataParallel: the gradient of '", p.name,
               "' became final twice in one synchronised step: a parameter used twice in one "
               "forward, or the wrapped model's backward called directly without "
               "finish_gradients() after it");
  b.ready[pos] = 1;
  --b.pending;
  launch_ready_buckets();
  poll();
}

// Issues, in bucket order, every bucket whose gradients are all final: ranks must issue
// collectives in the same order, and gradients may finish in a different bucket order.
void DistributedDataParallel::launch_ready_buckets() {
  while (next_launch_ < buckets_.size() && buckets_[next_launch_]->pending == 0)
    launch(*buckets_[next_launch_++]);
}

std::vector<Tensor> DistributedDataParallel::gradients_of(const Bucket& b) const {
  std::vector<Tensor> grads;
  grads.reserve(b.members.size());
  for (int m : b.members) grads.push_back(params_[static_cast<std::size_t>(m)].param->grad);
  return grads;
}

void DistributedDataParallel::launch(Bucket& b) {
  b.issue_t = now_s();
  const bool release = releases_gradients();
  if (release) view_released_gradients_in(b);  // an unused parameter's: zeros
  b.work = b.reducer->launch(gradients_of(b));
  b.launched = true;
  // Stage 2: in the bucket, the whole gradients are spent (their average goes to the owners'
  // shards); the bucket itself goes back at complete().
  if (release)
    for (int m : b.members) params_[static_cast<std::size_t>(m)].param->grad = Tensor();
}

// Stage 2: waits, oldest first, for launched buckets until at most `keep` are not yet given back,
// and gives them back. The backends move a collective only when called (shm, ucx): without this a
// bucket's memory would stay until the final wait, and backward's peak would be the whole
// gradient. Every rank launches the same buckets in the same order, and a rank waits only for
// buckets it launched, whose earlier ones it has completed: no rank waits on one that waits on it.
void DistributedDataParallel::give_back_released_buckets(int keep) {
  int open = 0;
  for (std::size_t i = 0; i < next_launch_; ++i) open += buckets_[i]->completed ? 0 : 1;
  for (std::size_t i = 0; i < next_launch_ && open > keep; ++i) {
    Bucket& b = *buckets_[i];
    if (b.completed) continue;
    if (!b.done) {
      b.work->wait();
      b.done = true;
      b.done_t = now_s();
    }
    b.reducer->complete(gradients_of(b));
    b.completed = true;
    --open;
  }
}

bool DistributedDataParallel::releases_gradients() const {
  return opt_.zero_stage >= 2 && shard_communicator().size() > 1;
}

// Advances outstanding ops (shm moves only when called) and notes when each one finished. A
// staged bucket's test() may start its collective (reducers/bucket_buffer.cpp): a later bucket is
// tested only once every earlier one's collective is issued, so they start in bucket order.
void DistributedDataParallel::poll() {
  for (std::size_t i = 0; i < next_launch_; ++i) {
    Bucket& b = *buckets_[i];
    if (b.launched && !b.done && b.work->test()) {
      b.done = true;
      b.done_t = now_s();
    }
    // Stage 2 gives a bucket's memory back as soon as its reduce-scatter is done, which bounds
    // backward's peak by the buckets in flight rather than the whole gradient.
    if (b.done && !b.completed && releases_gradients()) {
      b.reducer->complete(gradients_of(b));
      b.completed = true;
    }
    if (!b.done && !b.reducer->collective_issued()) break;
  }
}

void DistributedDataParallel::finish_gradients() {
  with_context("DistributedDataParallel::finish_gradients (gradient all-reduce)",
               [&] { finish_gradients_now(); });
}

void DistributedDataParallel::finish_gradients_now() {
  if (!in_step_) return;  // no synchronised backward since the last call
  const double t_end_backward = now_s();
  {
    trace::Span span("ddp wait", "comm");
    // Buckets with a gradient that never became final (unused parameter): issue them anyway, with
    // the gradient as it stands, so every rank issues the same collectives.
    for (auto& b : buckets_) b->pending = 0;
    launch_ready_buckets();
    for (auto& b : buckets_) {
      if (!b->done) {
        b->work->wait();
        b->done = true;
        b->done_t = now_s();
      }
    }
  }
  const double t_waited = now_s();
  std::vector<std::pair<double, double>> intervals;
  for (auto& b : buckets_) {
    if (!b->completed) b->reducer->complete(gradients_of(*b));
    trace::record("allreduce bucket", "comm", static_cast<std::int64_t>(b->issue_t * 1e6),
                  static_cast<std::int64_t>((b->done_t - b->issue_t) * 1e6));
    intervals.emplace_back(b->issue_t, b->done_t);
  }
  const auto [busy, hidden] = union_length(intervals, t_end_backward);
  last_ = Stats{};
  last_.comm_wait_s = t_waited - t_end_backward;
  last_.allreduce_s = busy;
  last_.overlap_s = hidden;
  last_.buckets = static_cast<int>(buckets_.size());
  last_.steps = 1;
  total_.comm_wait_s += last_.comm_wait_s;
  total_.allreduce_s += last_.allreduce_s;
  total_.overlap_s += last_.overlap_s;
  total_.buckets = last_.buckets;
  total_.steps += 1;
  // Reset for the next step.
  for (auto& b : buckets_) {
    b->pending = static_cast<int>(b->members.size());
    std::fill(b->ready.begin(), b->ready.end(), 0);
    b->launched = b->done = b->completed = false;
    b->work.reset();
  }
  next_launch_ = 0;
  in_step_ = false;
}

DistributedDataParallel::NoSync::NoSync(DistributedDataParallel& ddp)
    : ddp_(&ddp), previous_(ddp.syncing_) {
  ddp.syncing_ = false;
}
DistributedDataParallel::NoSync::~NoSync() {
  if (ddp_) ddp_->syncing_ = previous_;
}
DistributedDataParallel::NoSync::NoSync(NoSync&& other) noexcept
    : ddp_(other.ddp_), previous_(other.previous_) {
  other.ddp_ = nullptr;
}

// ---- introspection ----

std::vector<std::vector<std::string>> DistributedDataParallel::bucket_layout() const {
  std::vector<std::vector<std::string>> out;
  for (const auto& b : buckets_) {
    out.emplace_back();
    for (int m : b->members) out.back().push_back(params_[static_cast<std::size_t>(m)].name);
  }
  return out;
}

std::vector<std::string> DistributedDataParallel::bucket_reducers() const {
  std::vector<std::string> out;
  for (const auto& b : buckets_) out.emplace_back(b->reducer->name());
  return out;
}

}  // namespace cohort::parallel
