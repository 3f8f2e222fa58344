// make_checked (see checked.hpp).
#include "detail/checked.hpp"

#include <mutex>
#include <string>
#include <vector>

#include "cohort/collectives/host_collectives.hpp"
#include "cohort/core/error.hpp"
#include "detail/op_desc.hpp"

namespace cohort::comm::detail {
namespace {

class CheckedCommunicator final : public Communicator {
 public:
  CheckedCommunicator(std::shared_ptr<Communicator> inner, Device* staging)
      : inner_(std::move(inner)), staging_(staging) {}

  std::string backend() const override { return inner_->backend(); }
  void declare_dead(int rank, const std::string& why) override { inner_->declare_dead(rank, why); }
  int rank() const override { return inner_->rank(); }
  int size() const override { return inner_->size(); }
  Capabilities capabilities() const override { return inner_->capabilities(); }

  WorkHandle allreduce(const void* send, void* recv, std::size_t count, DType dtype, ReduceOp op,
                       Timeout timeout) override {
    agree(op_desc(OpKind::allreduce, count, dtype, op), timeout);
    return inner_->allreduce(send, recv, count, dtype, op, timeout);
  }
  WorkHandle broadcast(void* buf, std::size_t count, DType dtype, int root,
                       Timeout timeout) override {
    agree(op_desc(OpKind::broadcast, count, dtype, ReduceOp::sum, root), timeout);
    return inner_->broadcast(buf, count, dtype, root, timeout);
  }
  WorkHandle allgather(const void* send, void* recv, std::size_t count, DType dtype,
                       Timeout timeout) override {
    agree(op_desc(OpKind::allgather, count, dtype), timeout);
    return inner_->allgather(send, recv, count, dtype, timeout);
  }
  WorkHandle reduce_scatter(const void* send, void* recv, std::size_t count, DType dtype,
                            ReduceOp op, Timeout timeout) override {
    agree(op_desc(OpKind::reduce_scatter, count, dtype, op), timeout);
    return inner_->reduce_scatter(send, recv, count, dtype, op, timeout);
  }
  WorkHandle barrier(Timeout timeout) override {
    agree(op_desc(OpKind::barrier, 0, DType::u8), timeout);
    return inner_->barrier(timeout);
  }
  WorkHandle send(const void* buf, std::size_t count, DType dtype, int peer, int tag,
                  Timeout timeout) override {
    throw_if_failed();
    return inner_->send(buf, count, dtype, peer, tag, timeout);
  }
  WorkHandle recv(void* buf, std::size_t count, DType dtype, int peer, int tag,
                  Timeout timeout) override {
    throw_if_failed();
    return inner_->recv(buf, count, dtype, peer, tag, timeout);
  }
  std::unique_ptr<CommBuffer> alloc_buffer(std::size_t bytes, Timeout timeout) override {
    throw_if_failed();
    return inner_->alloc_buffer(bytes, timeout);
  }

 private:
  void throw_if_failed() {
    std::lock_guard<std::mutex> lk(mu_);
    COHORT_CHECK_IN(inner_->backend().c_str(), failed_.empty(), failed_);
  }

  // All ranks exchange their description of this collective; throws on every rank when they
  // differ. Calls from several threads are serialised, as the collectives themselves must be.
  void agree(OpDesc mine, Timeout timeout) {
    std::lock_guard<std::mutex> lk(mu_);
    COHORT_CHECK_IN(inner_->backend().c_str(), failed_.empty(), failed_);
    mine.seq = ++seq_;
    std::vector<OpDesc> all(static_cast<std::size_t>(inner_->size()));
    try {
      allgather_host(*inner_, staging_, &mine, all.data(), sizeof(OpDesc), DType::u8, timeout);
    } catch (const Error& e) {  // a rank late or gone: say which collective was being checked
      ::cohort::detail::throw_error(
          __FILE__, __LINE__, "", inner_->backend().c_str(),
          ::cohort::detail::concat("checking that every rank issues ", mine.str(), ": ", e.what()));
    }
    for (std::size_t r = 1; r < all.size(); ++r) {
      if (same_collective(all[0], all[r])) continue;
      failed_ = mismatch_message(0, all[0], static_cast<int>(r), all[r]);
      COHORT_CHECK_IN(inner_->backend().c_str(), false, failed_);
    }
  }

  std::shared_ptr<Communicator> inner_;
  Device* staging_;
  std::mutex mu_;
  std::uint64_t seq_ = 0;
  std::string failed_;  // the mismatch, once one was found
};

}  // namespace

std::unique_ptr<Communicator> make_checked(std::shared_ptr<Communicator> inner, Device* staging) {
  COHORT_CHECK(inner != nullptr, "make_checked: no communicator");
  return std::make_unique<CheckedCommunicator>(std::move(inner), staging);
}

}  // namespace cohort::comm::detail
