// ZeRO stage 3 (DDPOptions::zero_stage = 3; contracts in cohort/parallel/ddp.hpp): the units, and
// their values' life cycle released -> gathering -> alive -> released, driven by the unit
// modules' hooks (nn::ModuleHooks). Everything else is stage 2's: a unit is one bucket, whose
// gradients are reduce-scattered into the owners' shards when its last one is final, and whose
// chunk-sized value shard is what the optimizer's pieces view (shard_parameters, zero.cpp).
//
// Why a unit is a bucket: the element-wise split is then the same for a unit's values, its
// gradients and its optimizer state, so a gather is one all-gather of the bucket and the owner of
// an element updates it from the same average DDP would compute: the bits of DDP. Every rank runs
// the same forward and backward, so the hooks issue the same gathers in the same order on all of
// them, interleaved with the reduce-scatters the grad-ready hooks issue.
#include <algorithm>
#include <cstring>
#include <map>
#include <set>
#include <unordered_map>

#include "cohort/core/error.hpp"
#include "cohort/core/trace.hpp"
#include "cohort/parallel/ddp.hpp"
#include "ddp_bucket.hpp"
#include "reducers/bucket_buffer.hpp"

namespace cohort::parallel {

namespace {

std::int64_t trainable_elements(const nn::Module& m) {
  std::int64_t n = 0;
  for (const auto& p : m.named_parameters())
    if (p.param->requires_grad) n += p.param->value.numel();
  return n;
}

// FSDP's size-based wrap policy: the root's children with trainable parameters, where a pure
// container (no parameters of its own) above `cap` elements is split into its children.
void auto_units(nn::Module& m, std::int64_t cap, std::vector<nn::Module*>& out) {
  for (const auto& [name, child] : m.children()) {
    const std::int64_t n = trainable_elements(*child);
    if (n == 0) continue;
    if (n > cap && child->own_parameters().empty() && !child->children().empty())
      auto_units(*child, cap, out);
    else
      out.push_back(child.get());
  }
}

// Every module of the tree by path, the outermost first where a wrapper shares its inner's.
void modules_by_path(nn::Module& m, std::map<std::string, nn::Module*>& out,
                     std::vector<std::string>& order) {
  if (out.emplace(m.path(), &m).second) order.push_back(m.path());
  for (const auto& [name, child] : m.children()) modules_by_path(*child, out, order);
}

}  // namespace

void DistributedDataParallel::plan_units() {
  const std::string who = "DistributedDataParallel (zero_stage 3): ";
  std::vector<nn::Module*> chosen;
  if (opt_.shard_units.empty()) {
    const auto cap = std::max<std::int64_t>(
        1, static_cast<std::int64_t>(opt_.bucket_cap_mb * 1024 * 1024 / sizeof(float)));
    auto_units(*model_, cap, chosen);
  } else {
    std::map<std::string, nn::Module*> by_path;
    std::vector<std::string> order;
    modules_by_path(*model_, by_path, order);
    std::set<std::string> seen;
    for (const std::string& path : opt_.shard_units) {
      COHORT_CHECK(!path.empty(), who,
                   "shard_units names the root (\"\"): the parameters "
                   "outside every unit already form the root unit; name its children instead");
      const auto it = by_path.find(path);
      if (it == by_path.end()) {
        std::string some;
        for (std::size_t i = 1; i < order.size() && i <= 12; ++i)
          some += (i > 1 ? ", " : "") + order[i];
        COHORT_CHECK(false, who, "shard_units names '", path,
                     "', which is no module of the "
                     "model (its modules: ",
                     some, order.size() > 13 ? ", ..." : "", ")");
      }
      COHORT_CHECK(seen.insert(path).second, who, "shard_units names '", path, "' twice");
      chosen.push_back(it->second);
    }
    for (const std::string& a : seen)
      for (const std::string& b : seen)
        COHORT_CHECK(b.compare(0, a.size() + 1, a + ".") != 0, who, "unit '", b,
                     "' is inside unit '", a,
                     "': units must not nest (each parameter is "
                     "gathered by exactly one unit)");
  }
  std::unordered_map<const Parameter*, int> index;
  for (std::size_t i = 0; i < params_.size(); ++i)
    index[params_[i].param.get()] = static_cast<int>(i);
  std::vector<int> owner(params_.size(), -1);
  std::vector<std::unique_ptr<Unit>> units;
  for (nn::Module* m : chosen) {
    auto u = std::make_unique<Unit>();
    u->module = m;
    u->path = m->path();
    for (const auto& p : m->named_parameters()) {
      const auto it = index.find(p.param.get());
      if (it == index.end()) continue;  // frozen: stays whole, never communicated
      const int i = it->second;
      COHORT_CHECK(owner[static_cast<std::size_t>(i)] < 0, who, "parameter '",
                   params_[static_cast<std::size_t>(i)].name, "' belongs to units '",
                   units[static_cast<std::size_t>(owner[static_cast<std::size_t>(i)])]->path,
                   "' and '", u->path,
                   "' (a parameter shared between units cannot be gathered "
                   "by either alone): make their common parent the unit");
      owner[static_cast<std::size_t>(i)] = static_cast<int>(units.size());
      u->members.push_back(i);
    }
    COHORT_CHECK(!u->members.empty(), who, "unit '", u->path, "' (", m->type_name(),
                 ") holds no parameter that requires a gradient: nothing to shard");
    units.push_back(std::move(u));
  }
  auto root = std::make_unique<Unit>();
  for (std::size_t i = 0; i < params_.size(); ++i)
    if (owner[i] < 0) root->members.push_back(static_cast<int>(i));
  if (!root->members.empty()) units.push_back(std::move(root));
  // Reverse registration order within a unit (backward's), and units in the order their last
  // gradient becomes final: by their first parameter, latest first. DDP issues buckets in index
  // order, so a unit finished early is not held up behind one finished late.
  for (auto& u : units) std::sort(u->members.rbegin(), u->members.rend());
  std::stable_sort(units.begin(), units.end(), [](const auto& a, const auto& b) {
    return a->members.back() > b->members.back();
  });
  units_ = std::move(units);
}

void DistributedDataParallel::place_unit_shards(bool copy_values) {
  const std::int64_t n = shard_communicator().size(), rank = shard_communicator().rank();
  for (std::size_t ui = 0; ui < units_.size(); ++ui) {
    Unit& u = *units_[ui];
    u.bucket = static_cast<int>(ui);
    const Bucket& b = *buckets_[ui];
    const std::int64_t chunk = b.numel / n, lo = rank * chunk;
    u.shard = Tensor::zeros(Shape{chunk}, DType::f32, *b.device);
    float* shard = u.shard.data<float>();
    std::int64_t off = 0;
    for (int m : b.members) {
      Parameter& p = *params_[static_cast<std::size_t>(m)].param;
      const std::int64_t numel = p.value.numel();
      const std::int64_t a = std::max(lo, off), e = std::min(lo + chunk, off + numel);
      if (copy_values && a < e)
        std::memcpy(shard + (a - lo), p.value.data<float>() + (a - off),
                    static_cast<std::size_t>(e - a) * sizeof(float));
      // One rank: the shard is the bucket, and the values stay views of it for good.
      p.value = n == 1 ? u.shard.slice(off, off + numel).reshape(p.value.shape())
                       : Tensor::released(p.value.shape(), p.value.dtype());
      off += detail::bucket_slot(numel);
    }
    u.state = n == 1 ? Unit::State::alive : Unit::State::released;
  }
}

void DistributedDataParallel::shard_values() {
  place_unit_shards(true);
  for (auto& unit : units_) {
    Unit& u = *unit;
    if (u.module == nullptr) continue;
    Unit* up = &u;
    nn::ModuleHooks h;
    h.pre_forward = [this, up](nn::Module&) { unit_pre_forward(*up); };
    h.post_forward = [this, up](nn::Module&) {
      if (opt_.reshard_after_forward || !nn::grad_enabled()) release_unit(*up);
    };
    h.pre_backward = [this, up](nn::Module&) { unit_pre_backward(*up); };
    h.post_backward = [this, up](nn::Module&) { release_unit(*up); };
    u.module->set_module_hooks(std::move(h));
  }
}

void DistributedDataParallel::gather_unit(Unit& u) {
  if (u.state != Unit::State::released) return;
  const Bucket& b = *buckets_[static_cast<std::size_t>(u.bucket)];
  const std::int64_t n = shard_communicator().size(), chunk = b.numel / n;
  Device& dev = u.shard.device();
  u.gathered = Tensor::empty(Shape{b.numel}, DType::f32, dev);
  float* flat = u.gathered.data<float>();
  std::memcpy(flat + shard_communicator().rank() * chunk, u.shard.raw(),
              static_cast<std::size_t>(chunk) * sizeof(float));
  u.issue_us = trace::now_us();
  u.work = shard_communicator().allgather(flat + shard_communicator().rank() * chunk, flat,
                                          static_cast<std::size_t>(chunk), DType::f32);
  u.state = Unit::State::gathering;
}

void DistributedDataParallel::materialize_unit(Unit& u) {
  if (u.state == Unit::State::alive) return;
  gather_unit(u);
  {
    trace::Span span("zero3 gather wait", "comm");
    with_context("DistributedDataParallel (zero_stage 3): the all-gather of unit '" +
                     (u.module ? u.path : std::string("(root)")) + "'s parameters",
                 [&] { u.work->wait(); });
  }
  // Issue to completion: the part outside "zero3 gather wait" ran beside compute (prefetched).
  trace::record("allgather unit", "comm", u.issue_us, trace::now_us() - u.issue_us);
  u.work.reset();
  const Bucket& b = *buckets_[static_cast<std::size_t>(u.bucket)];
  std::int64_t off = 0;
  for (int m : b.members) {
    Parameter& p = *params_[static_cast<std::size_t>(m)].param;
    const std::int64_t numel = p.value.numel();
    p.value = u.gathered.slice(off, off + numel).reshape(p.value.shape());
    off += detail::bucket_slot(numel);
  }
  u.state = Unit::State::alive;
}

void DistributedDataParallel::release_unit(Unit& u) {
  if (shard_communicator().size() == 1 || u.state == Unit::State::released) return;
  if (u.state == Unit::State::gathering) u.work->wait();  // the buffer is written until then
  u.work.reset();
  for (int m : buckets_[static_cast<std::size_t>(u.bucket)]->members) {
    Parameter& p = *params_[static_cast<std::size_t>(m)].param;
    p.value = Tensor::released(p.value.shape(), p.value.dtype());
  }
  u.gathered = Tensor();
  u.state = Unit::State::released;
}

void DistributedDataParallel::write_back_unit(Unit& u) {
  if (shard_communicator().size() == 1 || u.state != Unit::State::alive) return;
  const std::int64_t chunk = u.shard.numel();
  std::memcpy(u.shard.raw(), u.gathered.data<float>() + shard_communicator().rank() * chunk,
              static_cast<std::size_t>(chunk) * sizeof(float));
}

void DistributedDataParallel::unit_pre_forward(Unit& u) {
  forward_order_.push_back(&u);
  materialize_unit(u);
  // The next unit of the last forward, if this forward has followed it so far.
  const std::size_t k = forward_order_.size() - 1;
  if (opt_.prefetch && k + 1 < last_forward_order_.size() && last_forward_order_[k] == &u)
    gather_unit(*last_forward_order_[k + 1]);
}

void DistributedDataParallel::unit_pre_backward(Unit& u) {
  materialize_unit(u);
  if (!opt_.prefetch) return;
  // Backward runs the forward's units in reverse: the one before this in the forward is next.
  for (std::size_t k = forward_order_.size(); k-- > 1;)
    if (forward_order_[k] == &u) {
      gather_unit(*forward_order_[k - 1]);
      return;
    }
}

void DistributedDataParallel::begin_sharded_forward() {
  if (!forward_order_.empty()) last_forward_order_ = forward_order_;
  forward_order_.clear();
  // The root unit sorts where its first parameter puts it (first, when it holds the head).
  const auto r = std::find_if(units_.begin(), units_.end(),
                              [](const auto& u) { return u->module == nullptr; });
  Unit* root = r == units_.end() ? nullptr : r->get();
  if (root) gather_unit(*root);
  if (opt_.prefetch && !last_forward_order_.empty()) gather_unit(*last_forward_order_.front());
  if (root) materialize_unit(*root);
}

void DistributedDataParallel::end_sharded_step() {
  for (auto& u : units_) release_unit(*u);
}

DistributedDataParallel::FullParams::FullParams(DistributedDataParallel* ddp, bool writeback)
    : ddp_(ddp), writeback_(writeback) {}

DistributedDataParallel::FullParams::FullParams(FullParams&& other) noexcept
    : ddp_(other.ddp_), writeback_(other.writeback_) {
  other.ddp_ = nullptr;
}

DistributedDataParallel::FullParams::~FullParams() {
  if (ddp_ == nullptr) return;
  for (auto& u : ddp_->units_) {
    if (writeback_) ddp_->write_back_unit(*u);
    try {
      ddp_->release_unit(*u);
    } catch (const std::exception&) {
      // Every unit was waited for when the guard was made: release waits for nothing.
    }
  }
}

DistributedDataParallel::FullParams DistributedDataParallel::summon_full_params(bool writeback) {
  if (!shards_values()) return FullParams(nullptr, false);
  with_context("DistributedDataParallel::summon_full_params (all-gather of every unit)", [&] {
    for (auto& u : units_) gather_unit(*u);
    for (auto& u : units_) materialize_unit(*u);
  });
  return FullParams(this, writeback);
}

std::vector<std::pair<std::string, std::vector<std::string>>>
DistributedDataParallel::shard_unit_layout() const {
  std::vector<std::pair<std::string, std::vector<std::string>>> out;
  for (const auto& u : units_) {
    out.emplace_back(u->path, std::vector<std::string>{});
    for (int m : u->members) out.back().second.push_back(params_[static_cast<std::size_t>(m)].name);
  }
  return out;
}

}  // namespace cohort::parallel
