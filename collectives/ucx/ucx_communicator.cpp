// The ucx Communicator: arguments are checked and the timeout resolved on the caller's thread
// (CommunicatorBase: errors surface at the call, with the values at fault); each op is then
// handed to the engine's progress thread (progress.cpp), returning the op's Work handle at once.
#include "ucx/ucx_communicator.hpp"

#include <cstdlib>
#include <string>

#include "detail/communicator_base.hpp"
#include "detail/env.hpp"
#include "ucx/engine.hpp"

namespace cohort::comm::ucx {
namespace {

using detail::OpArgs;
using detail::OpKind;
using detail::OpState;
namespace common = ::cohort::comm::detail;

constexpr const char* kName = "ucx";
constexpr int kMaxRanks = 1 << 16;  // the tag has 16 bits for the source rank
constexpr int kTagLimit = 1 << 24;  // and 24 for a point-to-point tag

std::size_t env_bytes(const char* name, std::size_t fallback) {
  return static_cast<std::size_t>(
      common::bytes_from_env(name, fallback, 1, std::uint64_t{1} << 40, kName));
}

// Defaults (select_algorithm.cpp) unless COHORT_UCX_ALLREDUCE (auto | ring | rd | rab),
// COHORT_UCX_RING_MIN_BYTES, COHORT_UCX_CHUNK_BYTES or COHORT_UCX_CHAIN_MIN_BYTES say otherwise.
detail::Tuning tuning_from_env() {
  detail::Tuning t = detail::default_tuning();
  if (const char* a = std::getenv("COHORT_UCX_ALLREDUCE"); a != nullptr && *a != '\0') {
    const std::string s = a;
    if (s == "ring")
      t.allreduce = detail::Tuning::Allreduce::ring;
    else if (s == "rd")
      t.allreduce = detail::Tuning::Allreduce::recursive_doubling;
    else if (s == "rab")
      t.allreduce = detail::Tuning::Allreduce::rabenseifner;
    else
      COHORT_CHECK_IN(kName, s == "auto", "COHORT_UCX_ALLREDUCE='", s,
                      "' is not one of auto, ring, rd, rab");
  }
  t.ring_min_bytes = env_bytes("COHORT_UCX_RING_MIN_BYTES", t.ring_min_bytes);
  t.chunk_bytes = env_bytes("COHORT_UCX_CHUNK_BYTES", t.chunk_bytes);
  t.chain_min_bytes = env_bytes("COHORT_UCX_CHAIN_MIN_BYTES", t.chain_min_bytes);
  return t;
}

class UcxCommunicator final : public common::CommunicatorBase {
 public:
  UcxCommunicator(const ProcessGroupInfo& info, std::shared_ptr<Store> store)
      : CommunicatorBase(kName),
        engine_(info, std::move(store), common::default_timeout_from_env(), tuning_from_env()) {}

  std::string backend() const override { return kName; }
  int rank() const override { return engine_.rank(); }
  void declare_dead(int rank, const std::string& why) override { engine_.declare_dead(rank, why); }
  int size() const override { return engine_.size(); }
  // Debian's UCX has no CUDA support (docs/UCX.md): host memory only.
  Capabilities capabilities() const override { return host_capabilities(); }

 private:
  // Arguments checked and the timeout resolved by CommunicatorBase.
  Timeout default_timeout() const override { return engine_.default_timeout(); }

  WorkHandle start_allreduce(const void* send, void* recv, std::size_t count, DType dtype,
                             ReduceOp op, Timeout timeout) override {
    OpArgs d = base(OpKind::allreduce, count, dtype, timeout);
    d.send = send;
    d.recv = recv;
    d.op = op;
    return submit(d);
  }

  WorkHandle start_broadcast(void* buf, std::size_t count, DType dtype, int root,
                             Timeout timeout) override {
    OpArgs d = base(OpKind::broadcast, count, dtype, timeout);
    d.recv = buf;
    d.peer = root;
    return submit(d);
  }

  WorkHandle start_allgather(const void* send, void* recv, std::size_t count, DType dtype,
                             Timeout timeout) override {
    OpArgs d = base(OpKind::allgather, count, dtype, timeout);
    d.send = send;
    d.recv = recv;
    return submit(d);
  }

  WorkHandle start_reduce_scatter(const void* send, void* recv, std::size_t count, DType dtype,
                                  ReduceOp op, Timeout timeout) override {
    OpArgs d = base(OpKind::reduce_scatter, count, dtype, timeout);
    d.send = send;
    d.recv = recv;
    d.op = op;
    return submit(d);
  }

  WorkHandle start_barrier(Timeout timeout) override {
    return submit(base(OpKind::barrier, 0, DType::u8, timeout));
  }

  WorkHandle start_send(const void* buf, std::size_t count, DType dtype, int peer, int tag,
                        Timeout timeout) override {
    check_tag("send", tag);
    OpArgs d = base(OpKind::send, count, dtype, timeout);
    d.send = buf;
    d.peer = peer;
    d.tag = tag;
    return submit(d);
  }

  WorkHandle start_recv(void* buf, std::size_t count, DType dtype, int peer, int tag,
                        Timeout timeout) override {
    check_tag("recv", tag);
    OpArgs d = base(OpKind::recv, count, dtype, timeout);
    d.recv = buf;
    d.peer = peer;
    d.tag = tag;
    return submit(d);
  }

  // `timeout` is already resolved.
  static OpArgs base(OpKind kind, std::size_t count, DType dtype, Timeout timeout) {
    OpArgs d;
    d.kind = kind;
    d.count = count;
    d.dtype = dtype;
    d.timeout = timeout;
    // Inside a composing communicator's stage (hier): the outer collective's fingerprint, which
    // the mismatch check compares with the rest (detail/op_desc.hpp). send/recv set their own.
    d.tag = common::outer_collective_tag();
    return d;
  }

  static void check_tag(const char* op, int tag) {
    COHORT_CHECK_IN(kName, tag >= 0 && tag < kTagLimit, op, ": tag ", tag, " is outside [0, ",
                    kTagLimit, ") (the ucx backend has 24 bits for it)");
  }

  // count == 0 ops go through the queue too, so that Work handles complete in issue order.
  WorkHandle submit(const OpArgs& d) {
    auto op = std::make_shared<OpState>(d, engine_.driver());
    engine_.submit(op);
    return op;
  }

  detail::Engine engine_;
};

}  // namespace

CommunicatorFactory factory() {
  CommunicatorFactory f;
  f.name = kName;
  f.score = 10;
  f.available = [](const ProcessGroupInfo& info, std::string* why_not) {
    if (info.world_size < 1 || info.world_size > kMaxRanks) {
      if (why_not)
        *why_not = "needs between 1 and " + std::to_string(kMaxRanks) + " ranks, the group has " +
                   std::to_string(info.world_size);
      return false;
    }
    return detail::ucx_usable(why_not);
  };
  f.create = [](const ProcessGroupInfo& info,
                std::shared_ptr<Store> store) -> std::unique_ptr<Communicator> {
    COHORT_CHECK_IN(kName, info.world_size >= 1 && info.world_size <= kMaxRanks,
                    "needs between 1 and ", kMaxRanks, " ranks, the group has ", info.world_size);
    COHORT_CHECK_IN(kName, info.rank >= 0 && info.rank < info.world_size, "rank ", info.rank,
                    " is not in a group of ", info.world_size);
    return std::make_unique<UcxCommunicator>(info, std::move(store));
  };
  return f;
}

}  // namespace cohort::comm::ucx
