// make_subgroup (cohort/collectives/subgroup.hpp): a Communicator whose collectives are the
// parent's point-to-point messages, exchanged with every member at once, and finished on the host.
#include "cohort/collectives/subgroup.hpp"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <functional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "cohort/core/error.hpp"
#include "detail/reduce.hpp"
#include "detail/validate.hpp"

namespace cohort::comm {
namespace {

constexpr const char* kName = "subgroup";  // what its argument errors are attributed to
constexpr int kTagBase = 0x800000, kTagSpan = 0x10000, kMaxId = 63;
constexpr int kCollectiveTag = kTagSpan - 1;  // the subgroup's collectives; user tags below

void copy_bytes(void* dst, const void* src, std::size_t n) {
  if (n && dst != src) std::memmove(dst, src, n);
}

// Done when its parts are, and the earlier collective of the same subgroup is; then `finish`
// (the local reduction) runs once, on the thread that saw it done.
class SubWork final : public Work {
 public:
  SubWork(std::vector<WorkHandle> parts, std::shared_ptr<SubWork> previous,
          std::function<void(std::uint8_t*)> finish, std::vector<std::uint8_t> scratch)
      : parts_(std::move(parts)),
        previous_(std::move(previous)),
        finish_(std::move(finish)),
        scratch_(std::move(scratch)) {}
  bool test() override {
    if (done_) return true;
    if (previous_ && !previous_->test()) return false;
    previous_.reset();
    bool all = true;
    for (auto& w : parts_) all = w->test() && all;  // every part polled: each advances its own
    if (all) complete();
    return all;
  }
  void wait() override {
    if (done_) return;
    if (previous_) previous_->wait();
    previous_.reset();
    for (auto& w : parts_) w->wait();
    complete();
  }

 private:
  void complete() {
    if (finish_) finish_(scratch_.data());
    finish_ = nullptr;
    parts_.clear();
    scratch_ = {};
    done_ = true;
  }
  std::vector<WorkHandle> parts_;
  std::shared_ptr<SubWork> previous_;
  std::function<void(std::uint8_t*)> finish_;
  std::vector<std::uint8_t> scratch_;  // what the parts receive into (moving it keeps its data)
  bool done_ = false;
};

class Subgroup final : public Communicator {
 public:
  Subgroup(std::shared_ptr<Communicator> parent, std::vector<int> ranks, int me, int id)
      : parent_(std::move(parent)),
        ranks_(std::move(ranks)),
        me_(me),
        tag_(kTagBase + id * kTagSpan) {}

  std::string backend() const override { return parent_->backend(); }
  void declare_dead(int rank, const std::string& why) override {
    if (rank >= 0 && rank < size())
      parent_->declare_dead(ranks_[static_cast<std::size_t>(rank)], why);
  }
  int rank() const override { return me_; }
  int size() const override { return static_cast<int>(ranks_.size()); }
  Capabilities capabilities() const override { return parent_->capabilities(); }

  WorkHandle allgather(const void* send, void* recv, std::size_t count, DType dtype,
                       Timeout timeout) override {
    detail::check_allgather(kName, send, recv, count, dtype, me_, size());
    if (count == 0) return issue({}, nullptr, {});
    const std::size_t bytes = count * dtype_size(dtype);
    auto* out = static_cast<std::uint8_t*>(recv);
    copy_bytes(out + static_cast<std::size_t>(me_) * bytes, send, bytes);
    return issue(exchange(send, out, count, dtype, 0, count, timeout), nullptr, {});
  }

  WorkHandle allreduce(const void* send, void* recv, std::size_t count, DType dtype, ReduceOp op,
                       Timeout timeout) override {
    detail::check_allreduce(kName, send, recv, count, dtype);
    if (count == 0) return issue({}, nullptr, {});
    const std::size_t bytes = count * dtype_size(dtype);
    std::vector<std::uint8_t> all(bytes * ranks_.size());
    copy_bytes(all.data() + static_cast<std::size_t>(me_) * bytes, send, bytes);
    auto parts = exchange(send, all.data(), count, dtype, 0, count, timeout);
    return issue_reducing(std::move(parts), std::move(all), recv, count, dtype, op);
  }

  WorkHandle reduce_scatter(const void* send, void* recv, std::size_t count, DType dtype,
                            ReduceOp op, Timeout timeout) override {
    detail::check_reduce_scatter(kName, send, recv, count, dtype, me_, size());
    if (count == 0) return issue({}, nullptr, {});
    const std::size_t bytes = count * dtype_size(dtype);
    const auto* in = static_cast<const std::uint8_t*>(send);
    // Slot r of `all`: member r's contribution to this member's chunk.
    std::vector<std::uint8_t> all(bytes * ranks_.size());
    copy_bytes(all.data() + static_cast<std::size_t>(me_) * bytes,
               in + static_cast<std::size_t>(me_) * bytes, bytes);
    std::vector<WorkHandle> parts;
    for (int s = 1; s < size(); ++s) {
      const int to = (me_ + s) % size(), from = (me_ - s + size()) % size();
      parts.push_back(parent_->recv(all.data() + static_cast<std::size_t>(from) * bytes, count,
                                    dtype, peer(from), tag_ + kCollectiveTag, timeout));
      parts.push_back(parent_->send(in + static_cast<std::size_t>(to) * bytes, count, dtype,
                                    peer(to), tag_ + kCollectiveTag, timeout));
    }
    return issue_reducing(std::move(parts), std::move(all), recv, count, dtype, op);
  }

  WorkHandle broadcast(void* buf, std::size_t count, DType dtype, int root,
                       Timeout timeout) override {
    detail::check_broadcast(kName, buf, count, dtype, root, size());
    if (count == 0) return issue({}, nullptr, {});
    std::vector<WorkHandle> parts;
    if (me_ == root) {
      for (int r = 0; r < size(); ++r)
        if (r != me_)
          parts.push_back(
              parent_->send(buf, count, dtype, peer(r), tag_ + kCollectiveTag, timeout));
    } else {
      parts.push_back(parent_->recv(buf, count, dtype, peer(root), tag_ + kCollectiveTag, timeout));
    }
    return issue(std::move(parts), nullptr, {});
  }

  WorkHandle barrier(Timeout timeout) override {
    std::vector<std::uint8_t> flags(ranks_.size(), 1);
    auto parts = exchange(flags.data() + me_, flags.data(), 1, DType::u8, 0, 1, timeout);
    return issue(std::move(parts), nullptr, std::move(flags));
  }

  WorkHandle send(const void* buf, std::size_t count, DType dtype, int peer_rank, int tag,
                  Timeout timeout) override {
    detail::check_p2p(kName, "send", buf, count, dtype, peer_rank, size());
    return parent_->send(buf, count, dtype, peer(peer_rank), user_tag(tag, "send"), timeout);
  }
  WorkHandle recv(void* buf, std::size_t count, DType dtype, int peer_rank, int tag,
                  Timeout timeout) override {
    detail::check_p2p(kName, "recv", buf, count, dtype, peer_rank, size());
    return parent_->recv(buf, count, dtype, peer(peer_rank), user_tag(tag, "recv"), timeout);
  }

 private:
  int peer(int r) const {
    COHORT_CHECK(r >= 0 && r < size(), "subgroup: rank ", r, " is outside the group of ", size());
    return ranks_[static_cast<std::size_t>(r)];
  }
  int user_tag(int tag, const char* op) const {
    COHORT_CHECK(tag >= 0 && tag < kCollectiveTag, "subgroup ", op, ": tag ", tag,
                 " is outside [0, ", kCollectiveTag, ")");
    return tag_ + tag;
  }
  // This member's `count` elements (> 0) at `send` to every other member, and every other
  // member's into slot r of `out` (slot size `stride` elements, from element `offset`). Count 0
  // sends nothing at all (the callers return at once): a message of 0 bytes would be matched by
  // the next receive from that member.
  std::vector<WorkHandle> exchange(const void* send, std::uint8_t* out, std::size_t count,
                                   DType dtype, std::size_t offset, std::size_t stride,
                                   Timeout timeout) {
    const std::size_t es = dtype_size(dtype);
    std::vector<WorkHandle> parts;
    for (int s = 1; s < size(); ++s) {
      const int to = (me_ + s) % size(), from = (me_ - s + size()) % size();
      parts.push_back(parent_->recv(out + (static_cast<std::size_t>(from) * stride + offset) * es,
                                    count, dtype, peer(from), tag_ + kCollectiveTag, timeout));
      parts.push_back(parent_->send(send, count, dtype, peer(to), tag_ + kCollectiveTag, timeout));
    }
    return parts;
  }
  // Reduces the n slots of `all` in member order into recv once the parts are done.
  WorkHandle issue_reducing(std::vector<WorkHandle> parts, std::vector<std::uint8_t> all,
                            void* recv, std::size_t count, DType dtype, ReduceOp op) {
    const int n = size();
    const std::size_t bytes = count * dtype_size(dtype);
    return issue(
        std::move(parts),
        [recv, count, dtype, op, n, bytes](std::uint8_t* slots) {
          std::vector<const void*> srcs;
          for (int r = 0; r < n; ++r) srcs.push_back(slots + static_cast<std::size_t>(r) * bytes);
          if (count) detail::reduce_sources(recv, nullptr, srcs.data(), n, count, dtype, op, n);
        },
        std::move(all));
  }
  WorkHandle issue(std::vector<WorkHandle> parts, std::function<void(std::uint8_t*)> finish,
                   std::vector<std::uint8_t> scratch) {
    auto work = std::make_shared<SubWork>(std::move(parts), last_.lock(), std::move(finish),
                                          std::move(scratch));
    last_ = work;
    return work;
  }

  std::shared_ptr<Communicator> parent_;
  std::vector<int> ranks_;
  int me_;
  int tag_;
  std::weak_ptr<SubWork> last_;  // the latest collective: the next one completes after it
};

}  // namespace

std::shared_ptr<Communicator> make_subgroup(std::shared_ptr<Communicator> parent,
                                            std::vector<int> ranks, int id) {
  COHORT_CHECK(parent != nullptr, "make_subgroup: the parent communicator is null");
  COHORT_CHECK(!ranks.empty(), "make_subgroup: the rank list is empty");
  COHORT_CHECK(id >= 0 && id <= kMaxId, "make_subgroup: id ", id, " is outside [0, ", kMaxId, "]");
  std::set<int> seen;
  int me = -1;
  for (std::size_t i = 0; i < ranks.size(); ++i) {
    const int r = ranks[i];
    COHORT_CHECK(r >= 0 && r < parent->size(), "make_subgroup: rank ", r,
                 " is outside the parent's group of ", parent->size());
    COHORT_CHECK(seen.insert(r).second, "make_subgroup: rank ", r, " is listed twice");
    if (r == parent->rank()) me = static_cast<int>(i);
  }
  COHORT_CHECK(me >= 0, "make_subgroup: this rank (", parent->rank(),
               " of the parent) is not among the ranks given");
  return std::make_shared<Subgroup>(std::move(parent), std::move(ranks), me, id);
}

}  // namespace cohort::comm
