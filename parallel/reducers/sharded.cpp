// The sharded reducers (DDPOptions::zero_stage >= 1, ZeRO's reduce-scatter): the flat f32 bucket
// of n equal chunks, chunk k owned by rank k. After complete() a rank's own chunk holds the
// average over ranks of everyone's chunk, and the rest of its bucket is zero: those gradients
// belong to their owners now, and the next backward accumulates into zeros (the optimizer, which
// sees only the owned chunks, zeroes only those). Two ways, one class:
//  - plain: the backend's reduce_scatter(avg) into a chunk-sized buffer, copied into the chunk;
//  - deterministic: every chunk sent to its owner (send/recv, all ranks at once), each owner
//    summing the n contributions in rank order 0..n-1 in f32 and dividing by n, the arithmetic of
//    the deterministic all-reduce reducer (deterministic.cpp) element for element, so a sharded
//    run's averages are bit-identical to a deterministic DDP's. Each rank sends and receives
//    (n-1)/n of the bucket, as a reduce-scatter does.
// The reduce-scatter's output (a chunk) or the received chunks ((n-1)/n of the bucket) are scratch
// from the device's caching allocator, taken by launch() and given back by complete(): between
// steps a rank holds only the bucket, so its memory is ZeRO-1's formula.
// Stage 2 (release): the bucket itself is scratch too. acquire_bucket() (DDP calls it when the
// first of its gradients is needed in backward, or at launch()) takes it zeroed from the caching
// allocator; complete() adds the own chunk's average to the persistent chunk-sized gradient shard
// (the optimizer's view, zeroed by its zero_grad) and gives the bucket back. Between steps a rank
// holds the shard alone: ZeRO-2's 4P/n of gradients.
// Hybrid sharding (a replica communicator, DDPOptions::shard_group_size): the collective above
// runs over the shard group, then a second over the replica group (the ranks holding the same
// chunk in the other shard groups) once it is done: plain, the chunk's average all-reduced
// (avg); deterministic, every shard group's contributions (own chunk and the received ones, in
// shard order) all-gathered, so each owner sums all n x r of them in global rank order.
// Host parameters only: DDP refuses sharding on a device (no GPU path exists untested).
#include <algorithm>
#include <cstring>
#include <functional>
#include <memory>
#include <vector>

#include "cohort/core/error.hpp"
#include "reducer.hpp"
#include "reducers/bucket_buffer.hpp"

namespace cohort::parallel::detail {
namespace {

// The tag of the chunks' messages: apart from the tags other users of send/recv pick.
constexpr int kShardTag = 0x5a0;

// Done when every one of its parts is.
class AllWork final : public comm::Work {
 public:
  explicit AllWork(std::vector<comm::WorkHandle> parts) : parts_(std::move(parts)) {}
  bool test() override {
    bool all = true;
    for (auto& w : parts_) all = w->test() && all;  // test every part: each advances its own
    return all;
  }
  void wait() override {
    for (auto& w : parts_) w->wait();
  }

 private:
  std::vector<comm::WorkHandle> parts_;
};

// The first op, then the one `next` starts once the first is done.
class ThenWork final : public comm::Work {
 public:
  ThenWork(comm::WorkHandle first, std::function<comm::WorkHandle()> next)
      : first_(std::move(first)), next_(std::move(next)) {}
  bool test() override {
    if (!second_) {
      if (!first_->test()) return false;
      second_ = next_();
    }
    return second_->test();
  }
  void wait() override {
    if (!second_) {
      first_->wait();
      second_ = next_();
    }
    second_->wait();
  }
  bool second_issued() const { return second_ != nullptr; }

 private:
  comm::WorkHandle first_, second_;
  std::function<comm::WorkHandle()> next_;
};

class ShardedReducer final : public Reducer {
 public:
  ShardedReducer(comm::Communicator& comm, Device& dev, std::int64_t numel, bool deterministic,
                 bool release, comm::Communicator* replica)
      : comm_(comm),
        replica_(replica),
        dev_(dev),
        n_(comm.size()),
        rank_(comm.rank()),
        groups_(replica ? replica->size() : 1),
        group_(replica ? replica->rank() : 0),
        numel_(numel),
        chunk_(static_cast<std::size_t>(numel / comm.size())),
        deterministic_(deterministic),
        release_(release) {
    COHORT_CHECK(dev.host_accessible(), "sharded reducer: host parameters only, got ",
                 dev.name());
    COHORT_CHECK(numel % n_ == 0, "sharded reducer: bucket of ", numel,
                 " elements does not split into ", n_, " equal chunks");
    if (release_) {
      shard_ = Tensor::zeros(Shape{static_cast<std::int64_t>(chunk_)}, DType::f32, dev);
      return;
    }
    std::shared_ptr<comm::CommBuffer> buf =
        comm.alloc_buffer(static_cast<std::size_t>(numel) * sizeof(float));
    void* p = buf->data();
    flat_ = Tensor::wrap(p, Shape{numel}, DType::f32, dev, std::move(buf));
  }

  const char* name() const override {
    return deterministic_ ? "sharded_deterministic" : "sharded";
  }
  Tensor flat_bucket() const override { return flat_; }
  // With replicas the second collective starts when the first is done, from DDP's test() of it:
  // DDP tests a later bucket only once this is true, so every rank issues the replica groups'
  // collectives in bucket order, as the subgroup's contract requires.
  bool collective_issued() const override { return !then_ || then_->second_issued(); }
  void acquire_bucket() override {
    if (release_ && !flat_.defined()) flat_ = Tensor::zeros(Shape{numel_}, DType::f32, dev_);
  }
  Tensor owned_gradient() const override {
    if (release_) return shard_;
    const auto lo = static_cast<std::int64_t>(chunk_) * rank_;
    return flat_.slice(lo, lo + static_cast<std::int64_t>(chunk_));
  }

  comm::WorkHandle launch(const std::vector<Tensor>& grads) override {
    if (release_) acquire_bucket();
    pack_into_bucket(grads, flat_);
    wait_for_compute(comm_, dev_);
    float* flat = static_cast<float*>(flat_.raw());
    // Plain: the chunk's average. Deterministic: the contributions to the own chunk, n - 1 of
    // them (slot_of), or with replicas all n x groups_, in global rank order (contribution).
    const std::size_t scratch = !deterministic_ ? chunk_
                                : replica_      ? chunk_ * static_cast<std::size_t>(n_ * groups_)
                                                : chunk_ * static_cast<std::size_t>(n_ - 1);
    scratch_ = Tensor::empty(Shape{static_cast<std::int64_t>(scratch)}, DType::f32, dev_);
    float* out = static_cast<float*>(scratch_.raw());
    if (!deterministic_) {
      comm::WorkHandle w = comm_.reduce_scatter(flat, out, chunk_, DType::f32, comm::ReduceOp::avg);
      if (!replica_) return w;
      then_ = std::make_shared<ThenWork>(std::move(w), [this, out] {
        return replica_->allreduce(out, out, chunk_, DType::f32, comm::ReduceOp::avg);
      });
      return then_;
    }
    if (replica_)
      std::memcpy(contribution(group_ * n_ + rank_),
                  flat + static_cast<std::size_t>(rank_) * chunk_, chunk_ * sizeof(float));
    // Every peer's chunk to it, every peer's contribution to ours into its slot. Peers in a
    // rotating order, so that the ranks do not all send to rank 0 first.
    std::vector<comm::WorkHandle> parts;
    for (int s = 1; s < n_; ++s) {
      const int to = (rank_ + s) % n_, from = (rank_ - s + n_) % n_;
      float* into = replica_ ? contribution(group_ * n_ + from) : slot_of(from);
      parts.push_back(comm_.recv(into, chunk_, DType::f32, from, kShardTag));
      parts.push_back(comm_.send(flat + static_cast<std::size_t>(to) * chunk_, chunk_,
                                 DType::f32, to, kShardTag));
    }
    comm::WorkHandle w = std::make_shared<AllWork>(std::move(parts));
    if (!replica_) return w;
    // This shard group's n contributions to every replica, theirs into their places.
    then_ = std::make_shared<ThenWork>(std::move(w), [this] {
      const std::size_t block = chunk_ * static_cast<std::size_t>(n_);
      return replica_->allgather(contribution(group_ * n_), contribution(0), block, DType::f32);
    });
    return then_;
  }

  void complete(const std::vector<Tensor>& grads) override {
    float* flat = static_cast<float*>(flat_.raw());
    float* own = flat + static_cast<std::size_t>(rank_) * chunk_;
    if (!deterministic_) {
      std::memcpy(own, scratch_.raw(), chunk_ * sizeof(float));
    } else {
      // acc = c_0 + c_1 + ... + c_{n-1} in that order, / n: deterministic.cpp's arithmetic.
      if (replica_) {
        const int total = n_ * groups_;
        for (std::size_t i = 0; i < chunk_; ++i) {
          float acc = contribution(0)[i];
          for (int r = 1; r < total; ++r) acc += contribution(r)[i];
          own[i] = acc / static_cast<float>(total);
        }
      } else {
        for (std::size_t i = 0; i < chunk_; ++i) {
          float acc = rank_ == 0 ? own[i] : slot_of(0)[i];
          for (int r = 1; r < n_; ++r) acc += r == rank_ ? own[i] : slot_of(r)[i];
          own[i] = acc / static_cast<float>(n_);
        }
      }
    }
    scratch_ = Tensor();
    then_.reset();
    if (release_) {
      // Accumulates as a gradient does: shard + average (the shard is zero after zero_grad).
      float* shard = static_cast<float*>(shard_.raw());
      for (std::size_t i = 0; i < chunk_; ++i) shard[i] += own[i];
      flat_ = Tensor();
      return;
    }
    // Everything but the own chunk goes back to zero.
    std::fill(flat, own, 0.0f);
    std::fill(own + chunk_, flat + chunk_ * static_cast<std::size_t>(n_), 0.0f);
    unpack_from_bucket(flat_, grads);
  }

 private:
  float* slot_of(int from) {
    const int i = from < rank_ ? from : from - 1;
    return static_cast<float*>(scratch_.raw()) + static_cast<std::size_t>(i) * chunk_;
  }
  // With replicas: global rank r's contribution to the own chunk.
  float* contribution(int r) {
    return static_cast<float*>(scratch_.raw()) + static_cast<std::size_t>(r) * chunk_;
  }

  comm::Communicator& comm_;
  comm::Communicator* replica_;  // hybrid sharding: the ranks with the same chunk; else null
  Device& dev_;
  const int n_, rank_;
  const int groups_, group_;  // replica groups, and this rank's (1 and 0 without replicas)
  const std::int64_t numel_;
  const std::size_t chunk_;
  const bool deterministic_, release_;
  Tensor flat_;   // stage 2: from launch() to complete() only
  Tensor shard_;  // stage 2: the own chunk's gradient, persistent
  // From launch() to complete(): plain, reduce_scatter's output; deterministic, the n - 1 peers'
  // contributions to our chunk.
  Tensor scratch_;
  std::shared_ptr<ThenWork> then_;  // with replicas: launch()'s two collectives, until complete()
};

}  // namespace

std::unique_ptr<Reducer> make_sharded_reducer(comm::Communicator& comm, Device& dev,
                                              std::int64_t numel, bool deterministic, bool release,
                                              comm::Communicator* replica) {
  return std::make_unique<ShardedReducer>(comm, dev, numel, deterministic, release, replica);
}

}  // namespace cohort::parallel::detail
