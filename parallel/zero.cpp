// ZeRO stages 1 and 2 on DistributedDataParallel's buckets (DDPOptions::zero_stage; contracts in
// cohort/parallel/ddp.hpp and zero.hpp). The split is of the flat buckets, not of parameters:
// bucket b of E elements (a multiple of n) gives rank k its elements [k E/n, (k+1) E/n), whatever
// parameters they belong to, so every rank owns the same number of elements (ZeroRedundancy-
// Optimizer's whole-parameter partition leaves ranks unbalanced). The sharded reducer
// (reducers/sharded.cpp) leaves each rank the average of its chunk; the optimizer updates the
// parameters' owned elements through views (shard_parameters); gather_parameters() hands every
// rank's updated elements to all. A parameter's elements keep their bucket position through
// this round trip, so an element is updated on one rank from the same values DDP would use.
// clip_grad_norm and shard_grad_scaler give what reads the whole gradient (a norm, the inf check)
// the group's view: one small all-reduce each.
#include "cohort/parallel/ddp.hpp"

#include <algorithm>
#include <cstring>
#include <unordered_map>

#include "cohort/collectives/host_collectives.hpp"
#include "cohort/collectives/subgroup.hpp"
#include "cohort/core/error.hpp"
#include "cohort/core/trace.hpp"
#include "cohort/layers/clip_grad.hpp"
#include "cohort/optim/grad_scaler.hpp"
#include "cohort/optim/optimizer.hpp"
#include "cohort/parallel/zero.hpp"
#include "ddp_bucket.hpp"
#include "reducers/bucket_buffer.hpp"

namespace cohort::parallel {

void DistributedDataParallel::check_zero_options() const {
  const int s = opt_.zero_stage;
  COHORT_CHECK(s >= 0 && s <= 3, "DistributedDataParallel: zero_stage ", s,
               " is not a ZeRO stage (0: plain DDP, 1: optimizer state sharded, 2: gradients "
               "too, 3: parameters too)");
  COHORT_CHECK(s == 3 || opt_.shard_units.empty(), "DistributedDataParallel: shard_units (",
               opt_.shard_units.size(), " given) are ZeRO stage 3's units; zero_stage is ", s);
  COHORT_CHECK(opt_.shard_group_size >= 0, "DistributedDataParallel: shard_group_size ",
               opt_.shard_group_size, " is negative (0: shard over the whole group)");
  COHORT_CHECK(s > 0 || opt_.shard_group_size == 0, "DistributedDataParallel: shard_group_size ",
               opt_.shard_group_size, " is hybrid sharding's, which needs zero_stage 1, 2 or 3");
  if (s == 0) return;
  COHORT_CHECK(opt_.shard_group_size <= comm_->size(), "DistributedDataParallel: shard_group_size ",
               opt_.shard_group_size, " is larger than the group of ", comm_->size(), " ranks");
  COHORT_CHECK(opt_.shard_group_size == 0 || comm_->size() % opt_.shard_group_size == 0,
               "DistributedDataParallel: shard_group_size ", opt_.shard_group_size,
               " does not divide the group of ", comm_->size(), " ranks into equal shard groups");
  COHORT_CHECK(opt_.gradient_as_bucket_view, "DistributedDataParallel: zero_stage ", s,
               " keeps the gradients in the buckets; gradient_as_bucket_view=false is not "
               "supported with it");
  COHORT_CHECK(!opt_.bf16_compression && !opt_.f16_compression, "DistributedDataParallel: "
               "zero_stage ", s, " reduce-scatters f32 gradients; bf16/f16 compression is not "
               "supported with it");
  for (const auto& p : model_->named_parameters())
    COHORT_CHECK(p.param->value.device().host_accessible(), "DistributedDataParallel: "
                 "zero_stage ", s, " runs on host parameters only; '", p.name, "' is on ",
                 p.param->value.device().name(), " (use zero_stage 0 on a GPU)");
}

// Hybrid sharding: shard group g = ranks [g*s, (g+1)*s), replica group k = ranks k, k+s, ...
// After an elastic change to a size that s does not divide, the shard groups grow to the
// smallest divisor of the new size above s (shards never grow in memory): at worst the whole
// group, with no replica left.
void DistributedDataParallel::make_shard_groups() {
  shard_comm_.reset();
  replica_comm_.reset();
  const int n = comm_->size();
  if (opt_.zero_stage == 0 || opt_.shard_group_size == 0) return;
  int s = std::min(opt_.shard_group_size, n);
  while (n % s != 0) ++s;
  if (s == n) return;
  const int me = comm_->rank(), g = me / s, k = me % s;
  std::vector<int> shard, replica;
  for (int j = 0; j < s; ++j) shard.push_back(g * s + j);
  for (int r = k; r < n; r += s) replica.push_back(r);
  shard_comm_ = comm::make_subgroup(comm_, std::move(shard), 1);
  replica_comm_ = comm::make_subgroup(comm_, std::move(replica), 2);
}

void DistributedDataParallel::reshard_onto_group(Retired& old) {
  const std::int64_t n = shard_communicator().size();
  for (auto& u : units_) {  // stage 3: the old group's gathers in flight are dropped
    old.work.push_back(std::move(u->work));
    old.buffers.push_back(u->gathered);
    u->work.reset();
  }
  forward_order_.clear();
  last_forward_order_.clear();
  for (const auto& p : params_) {
    p.param->grad = Tensor();
    p.param->grad_source = nullptr;
  }
  for (auto& b : buckets_) {  // the padding for n chunks (form_buckets)
    std::int64_t numel = 0;
    for (int m : b->members)
      numel += detail::bucket_slot(params_[static_cast<std::size_t>(m)].param->value.numel());
    b->numel = (numel + n - 1) / n * n;
  }
}

void DistributedDataParallel::place_new_shards(bool whole_values) {
  if (shards_values()) {
    place_unit_shards(whole_values);
    // The values the old group had gathered (summon_full_params) are views into its buffers.
    for (auto& u : units_) u->gathered = Tensor();
  }
  // The optimizer's pieces: the same objects over this rank's new ranges.
  std::vector<std::pair<std::weak_ptr<Parameter>, int>> alive;
  for (auto& [w, i] : pieces_) {
    const ParameterPtr piece = w.lock();
    if (!piece) continue;
    const auto index = static_cast<std::size_t>(i);
    const Bucket& b = *buckets_[static_cast<std::size_t>(bucket_of_[index])];
    const OwnedRange r = owned_range(index, shard_communicator().rank());
    piece->value = owned_values(index, r);
    piece->grad = b.reducer->owned_gradient().slice(r.at, r.at + (r.end - r.begin));
    alive.emplace_back(w, i);
  }
  pieces_ = std::move(alive);
}

std::vector<ParameterPtr> DistributedDataParallel::shard_parameters(
    const std::vector<ParameterPtr>& params) const {
  COHORT_CHECK(opt_.zero_stage > 0, "DistributedDataParallel::shard_parameters: zero_stage is 0 "
               "(plain DDP: build the optimizer over the model's own parameters)");
  std::unordered_map<const Parameter*, int> index;
  for (std::size_t i = 0; i < params_.size(); ++i)
    index[params_[i].param.get()] = static_cast<int>(i);
  const std::int64_t rank = shard_communicator().rank();
  std::vector<ParameterPtr> out;
  out.reserve(params.size());
  for (std::size_t k = 0; k < params.size(); ++k) {
    COHORT_CHECK(params[k] != nullptr, "DistributedDataParallel::shard_parameters: parameter ",
                 k, " is null");
    const auto it = index.find(params[k].get());
    COHORT_CHECK(it != index.end(), "DistributedDataParallel::shard_parameters: parameter ", k,
                 " (shape ", params[k]->value.shape().str(), ") is not a parameter of the "
                 "wrapped model that requires a gradient");
    const auto i = static_cast<std::size_t>(it->second);
    const Bucket& b = *buckets_[static_cast<std::size_t>(bucket_of_[i])];
    const Parameter& p = *params_[i].param;
    const OwnedRange r = owned_range(i, rank);
    auto piece = std::make_shared<Parameter>();
    piece->value = owned_values(i, r);
    piece->grad = b.reducer->owned_gradient().slice(r.at, r.at + (r.end - r.begin));
    piece->requires_grad = p.requires_grad;
    pieces_.emplace_back(piece, static_cast<int>(i));
    out.push_back(std::move(piece));
  }
  return out;
}

DistributedDataParallel::OwnedRange DistributedDataParallel::owned_range(std::size_t i,
                                                                         std::int64_t rank) const {
  const Bucket& b = *buckets_[static_cast<std::size_t>(bucket_of_[i])];
  std::int64_t off = 0;  // the parameter's place in its bucket
  for (int m : b.members) {
    if (static_cast<std::size_t>(m) == i) break;
    off += detail::bucket_slot(params_[static_cast<std::size_t>(m)].param->value.numel());
  }
  const std::int64_t chunk = b.numel / shard_communicator().size(), lo = rank * chunk,
                     hi = lo + chunk;
  const std::int64_t numel = params_[i].param->value.numel();
  const std::int64_t a = std::clamp(lo - off, std::int64_t{0}, numel);
  const std::int64_t e = std::clamp(hi - off, a, numel);
  // In the owned chunk's coordinates; an empty range (the parameter lies outside the chunk)
  // takes an empty slice at the nearer end.
  return {a, e, std::clamp(off + a - lo, std::int64_t{0}, chunk)};
}

Tensor DistributedDataParallel::owned_values(std::size_t i, const OwnedRange& r) const {
  // Stage 3: the values' own home is the unit's shard (the model's are released between uses).
  if (shards_values())
    return units_[static_cast<std::size_t>(bucket_of_[i])]->shard.slice(r.at,
                                                                        r.at + (r.end - r.begin));
  const Tensor& v = params_[i].param->value;
  return v.reshape({v.numel()}).slice(r.begin, r.end);
}

std::vector<DistributedDataParallel::ShardPiece> DistributedDataParallel::shard_pieces(
    int rank) const {
  COHORT_CHECK(opt_.zero_stage > 0,
               "DistributedDataParallel::shard_pieces: zero_stage is 0 "
               "(plain DDP holds every parameter whole on every rank)");
  COHORT_CHECK(rank >= 0 && rank < shard_communicator().size(),
               "DistributedDataParallel::shard_pieces: rank ", rank, " is outside the group of ",
               shard_communicator().size());
  std::vector<ShardPiece> out;
  for (std::size_t i = 0; i < params_.size(); ++i) {
    const OwnedRange r = owned_range(i, rank);
    ShardPiece s{params_[i].name, params_[i].param->value.shape(), r.begin, r.end, {}};
    if (rank == shard_communicator().rank()) s.values = owned_values(i, r);
    out.push_back(std::move(s));
  }
  return out;
}

int DistributedDataParallel::shard_piece_index(const Parameter& piece) const {
  for (const auto& [w, i] : pieces_)
    if (auto sp = w.lock(); sp.get() == &piece) return i;
  return -1;
}

void DistributedDataParallel::attach_optimizer(optim::Optimizer& optimizer) {
  COHORT_CHECK(opt_.zero_stage > 0, "DistributedDataParallel::attach_optimizer: zero_stage is 0");
  optimizer.register_step_post_hook([this](optim::Optimizer&) { gather_parameters(); });
}

void DistributedDataParallel::gather_parameters() {
  COHORT_CHECK(opt_.zero_stage > 0, "DistributedDataParallel::gather_parameters: zero_stage is 0");
  if (shards_values()) return;  // stage 3: the next forward gathers each unit as it runs
  const std::int64_t n = shard_communicator().size(), rank = shard_communicator().rank();
  trace::Span span("zero gather_parameters", "comm");
  // Per bucket: the owned chunk of its members' values into a flat buffer (the bucket itself at
  // stage 1; at stage 2, which keeps no bucket between steps, scratch from the caching
  // allocator), an in-place all-gather, the values read back. Stage 1 has every bucket in flight
  // at once; stage 2 at most two scratch buckets alive, so that the step's peak stays one
  // bucket above the model rather than a whole second copy of it.
  const bool scratch = releases_gradients();
  const std::size_t window = scratch ? 2 : buckets_.size();
  struct InFlight {
    std::size_t bucket;
    Tensor flat;
    std::vector<std::int64_t> offsets;
    comm::WorkHandle work;
  };
  std::vector<InFlight> flying;
  const auto read_back = [&](InFlight& f) {
    if (f.work) f.work->wait();
    Bucket& b = *buckets_[f.bucket];
    const float* flat = static_cast<const float*>(f.flat.raw());
    for (std::size_t k = 0; k < b.members.size(); ++k) {
      const Tensor& v = params_[static_cast<std::size_t>(b.members[k])].param->value;
      std::memcpy(v.data<float>(), flat + f.offsets[k],
                  static_cast<std::size_t>(v.numel()) * sizeof(float));
    }
    // Stage 1: spent gradients, so the next backward starts at zero.
    if (!scratch) std::fill(f.flat.data<float>(), f.flat.data<float>() + b.numel, 0.0f);
  };
  with_context("DistributedDataParallel::gather_parameters (all-gather of the updated shards)",
               [&] {
    for (std::size_t bi = 0; bi < buckets_.size(); ++bi) {
      if (flying.size() == window) {
        read_back(flying.front());
        flying.erase(flying.begin());
      }
      Bucket& b = *buckets_[bi];
      Device& dev = params_[static_cast<std::size_t>(b.members[0])].param->value.device();
      InFlight f{bi, scratch ? Tensor::empty(Shape{b.numel}, DType::f32, dev)
                             : b.reducer->flat_bucket(), {}, nullptr};
      float* flat = f.flat.data<float>();
      const std::int64_t chunk = b.numel / n, lo = rank * chunk, hi = lo + chunk;
      std::fill(flat + lo, flat + hi, 0.0f);  // the padding goes out as zeros
      std::int64_t off = 0;
      for (int m : b.members) {
        const Tensor& v = params_[static_cast<std::size_t>(m)].param->value;
        f.offsets.push_back(off);
        const std::int64_t a = std::max(lo, off), e = std::min(hi, off + v.numel());
        if (a < e)
          std::memcpy(flat + a, v.data<float>() + (a - off),
                      static_cast<std::size_t>(e - a) * sizeof(float));
        off += detail::bucket_slot(v.numel());
      }
      if (n > 1)
        f.work = shard_communicator().allgather(flat + lo, flat, static_cast<std::size_t>(chunk),
                                                DType::f32);
      flying.push_back(std::move(f));
    }
    for (auto& f : flying) read_back(f);
  });
}

double DistributedDataParallel::clip_grad_norm(double max_norm, double norm_type,
                                               bool error_if_nonfinite) {
  const std::vector<ParameterPtr> whole = trainable_parameters(module());
  if (opt_.zero_stage == 0) return nn::clip_grad_norm(whole, max_norm, norm_type, error_if_nonfinite);
  const std::string where =
      "DistributedDataParallel::clip_grad_norm (zero_stage " + std::to_string(opt_.zero_stage) +
      ", rank " + std::to_string(shard_communicator().rank()) + " of " +
      std::to_string(shard_communicator().size()) + ": its shard of each gradient)";
  // The device the values live on: only a communicator that takes device memory (nccl) uses it.
  Device* dev = params_.empty() ? nullptr : &buckets_.front()->reducer->owned_gradient().device();
  return with_context(where, [&] {
    return nn::clip_grad_norm(shard_parameters(whole), max_norm, norm_type, error_if_nonfinite,
                              [this, dev](double values[2], bool max) {
                                if (shard_communicator().size() == 1) return;
                                comm::allreduce_host(
                                    shard_communicator(), dev, values, 2, DType::f64,
                                    max ? comm::ReduceOp::max : comm::ReduceOp::sum);
                              });
  });
}

void DistributedDataParallel::shard_grad_scaler(optim::GradScaler& scaler) {
  if (opt_.zero_stage == 0) return;
  Device* dev = params_.empty() ? nullptr : &buckets_.front()->reducer->owned_gradient().device();
  scaler.set_found_inf_reduction([this, dev](bool found) {
    if (shard_communicator().size() == 1) return found;
    double v = found ? 1.0 : 0.0;
    with_context("GradScaler::unscale (agreeing on an inf or NaN over the ranks' shards)", [&] {
      comm::allreduce_host(shard_communicator(), dev, &v, 1, DType::f64, comm::ReduceOp::max);
    });
    return v > 0;
  });
}

std::int64_t DistributedDataParallel::owned_elements() const {
  std::int64_t total = 0;
  for (const auto& b : buckets_) total += b->numel / shard_communicator().size();
  return total;
}

std::int64_t DistributedDataParallel::bucket_elements() const {
  std::int64_t total = 0;
  for (const auto& b : buckets_) total += b->numel;
  return total;
}

}  // namespace cohort::parallel
