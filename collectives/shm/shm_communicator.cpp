// The shm Communicator and its factory: one host, POSIX shared memory. Argument checks and timeout
// resolution are CommunicatorBase's; each op here is only handed to the engine (engine.hpp: the
// op queue and progress on the calling thread) as the algorithm's op (algorithms.hpp).
#include "shm/shm_communicator.hpp"

#include <exception>

#include "cohort/core/error.hpp"
#include "detail/communicator_base.hpp"
#include "detail/env.hpp"
#include "shm/algorithms.hpp"
#include "shm/p2p.hpp"

namespace cohort::comm::shm {
namespace {

constexpr const char* kName = "shm";

class ShmCommunicator final : public detail::CommunicatorBase {
 public:
  explicit ShmCommunicator(std::shared_ptr<Engine> engine)
      : CommunicatorBase(kName), eng_(std::move(engine)) {}
  // Pending ops are finished first (bounded by their timeouts); while an exception propagates
  // they are abandoned instead and the peers are told, so they fail fast rather than time out.
  ~ShmCommunicator() override { eng_->shutdown(std::uncaught_exceptions() > 0); }

  std::string backend() const override { return kName; }
  int rank() const override { return eng_->rank; }
  int size() const override { return eng_->world; }
  Capabilities capabilities() const override { return host_capabilities(); }

  std::unique_ptr<CommBuffer> alloc_buffer(std::size_t bytes, Timeout timeout) override {
    return eng_->alloc_buffer(bytes, timeout);
  }

 private:
  // Arguments checked and the timeout resolved by CommunicatorBase.
  Timeout default_timeout() const override { return eng_->default_timeout(); }
  WorkHandle start_allreduce(const void* send, void* recv, std::size_t count, DType dtype,
                             ReduceOp op, Timeout t) override {
    return eng_->submit(make_allreduce(eng_, send, recv, count, dtype, op, t));
  }
  WorkHandle start_broadcast(void* buf, std::size_t count, DType dtype, int root,
                             Timeout t) override {
    return eng_->submit(make_broadcast(eng_, buf, count, dtype, root, t));
  }
  WorkHandle start_allgather(const void* send, void* recv, std::size_t count, DType dtype,
                             Timeout t) override {
    return eng_->submit(make_allgather(eng_, send, recv, count, dtype, t));
  }
  WorkHandle start_reduce_scatter(const void* send, void* recv, std::size_t count, DType dtype,
                                  ReduceOp op, Timeout t) override {
    return eng_->submit(make_reduce_scatter(eng_, send, recv, count, dtype, op, t));
  }
  WorkHandle start_barrier(Timeout t) override { return eng_->submit(make_barrier(eng_, t)); }
  WorkHandle start_send(const void* buf, std::size_t count, DType dtype, int peer, int tag,
                        Timeout t) override {
    return eng_->submit(std::make_shared<SendOp>(eng_, buf, count, dtype, peer, tag, t));
  }
  WorkHandle start_recv(void* buf, std::size_t count, DType dtype, int peer, int tag,
                        Timeout t) override {
    return eng_->submit(std::make_shared<RecvOp>(eng_, buf, count, dtype, peer, tag, t));
  }

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
