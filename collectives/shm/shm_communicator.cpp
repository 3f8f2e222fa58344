#include "shm/shm_communicator.hpp"

#include <exception>

#include "cohort/core/error.hpp"
#include "detail/env.hpp"
#include "detail/reduce.hpp"
#include "detail/validate.hpp"
#include "shm/algorithms.hpp"
#include "shm/p2p.hpp"

namespace cohort::comm::shm {
namespace {

constexpr const char* kName = "shm";

class ShmCommunicator final : public Communicator {
 public:
  explicit ShmCommunicator(std::shared_ptr<Engine> engine) : eng_(std::move(engine)) {}
  // Pending ops are finished first (bounded by their timeouts); while an exception propagates
  // they are abandoned instead and the peers are told, so they fail fast rather than time out.
  ~ShmCommunicator() override { eng_->shutdown(std::uncaught_exceptions() > 0); }

  std::string backend() const override { return kName; }
  int rank() const override { return eng_->rank; }
  int size() const override { return eng_->world; }
  Capabilities capabilities() const override {
    Capabilities c;
    c.host_memory = true;
    c.device_memory = false;
    c.dtypes = detail::reducible_dtypes();
    return c;
  }

  WorkHandle allreduce(const void* send, void* recv, std::size_t count, DType dtype, ReduceOp op,
                       Timeout timeout) override {
    detail::check_allreduce(kName, send, recv, count, dtype);
    return eng_->submit(make_allreduce(eng_, send, recv, count, dtype, op, eng_->resolve(timeout)));
  }

  WorkHandle broadcast(void* buf, std::size_t count, DType dtype, int root,
                       Timeout timeout) override {
    detail::check_broadcast(kName, buf, count, dtype, root, size());
    return eng_->submit(make_broadcast(eng_, buf, count, dtype, root, eng_->resolve(timeout)));
  }

  WorkHandle allgather(const void* send, void* recv, std::size_t count, DType dtype,
                       Timeout timeout) override {
    detail::check_allgather(kName, send, recv, count, dtype, rank(), size());
    return eng_->submit(make_allgather(eng_, send, recv, count, dtype, eng_->resolve(timeout)));
  }

  WorkHandle reduce_scatter(const void* send, void* recv, std::size_t count, DType dtype,
                            ReduceOp op, Timeout timeout) override {
    detail::check_reduce_scatter(kName, send, recv, count, dtype, rank(), size());
    return eng_->submit(
        make_reduce_scatter(eng_, send, recv, count, dtype, op, eng_->resolve(timeout)));
  }

  std::unique_ptr<CommBuffer> alloc_buffer(std::size_t bytes, Timeout timeout) override {
    return eng_->alloc_buffer(bytes, timeout);
  }

  WorkHandle barrier(Timeout timeout) override {
    return eng_->submit(make_barrier(eng_, eng_->resolve(timeout)));
  }

  WorkHandle send(const void* buf, std::size_t count, DType dtype, int peer, int tag,
                  Timeout timeout) override {
    detail::check_p2p(kName, "send", buf, count, dtype, peer, size());
    return eng_->submit(
        std::make_shared<SendOp>(eng_, buf, count, dtype, peer, tag, eng_->resolve(timeout)));
  }

  WorkHandle recv(void* buf, std::size_t count, DType dtype, int peer, int tag,
                  Timeout timeout) override {
    detail::check_p2p(kName, "recv", buf, count, dtype, peer, size());
    return eng_->submit(
        std::make_shared<RecvOp>(eng_, buf, count, dtype, peer, tag, eng_->resolve(timeout)));
  }

 private:
  std::shared_ptr<Engine> eng_;
};

}  // namespace

CommunicatorFactory factory() {
  CommunicatorFactory f;
  f.name = kName;
  f.score = 50;
  f.available = [](const ProcessGroupInfo& info, std::string* why_not) {
    if (info.local_world_size == info.world_size) return true;
    if (why_not)
      *why_not = "needs every rank on one host (world size " + std::to_string(info.world_size) +
                 ", " + std::to_string(info.local_world_size) + " on this host)";
    return false;
  };
  f.create = [](const ProcessGroupInfo& info,
                std::shared_ptr<Store> store) -> std::unique_ptr<Communicator> {
    if (!store) {
      COHORT_CHECK_IN(kName, info.world_size == 1, "a group of ", info.world_size,
                      " ranks needs a store to exchange the segment name");
      store = make_memory_store();
    }
    const Timeout timeout = detail::default_timeout_from_env();
    auto segment = Segment::attach(info, *store, timeout);
    auto engine = std::make_shared<Engine>(info.rank, info.world_size, std::move(segment),
                                           std::move(store), timeout);
    return std::make_unique<ShmCommunicator>(std::move(engine));
  };
  return f;
}

}  // namespace cohort::comm::shm
