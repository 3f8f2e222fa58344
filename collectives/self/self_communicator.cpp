// The self backend. Every collective over one rank is a copy (or nothing, in place), so ops run at
// issue and return a shared, already completed Work: no allocation, no thread. Only recv can be
// pending (until this process sends to itself); messages are copied at send, so a send completes
// at once and its buffer is free again, as an eager MPI send.
#include "self/self_communicator.hpp"

#include <condition_variable>
#include <cstring>
#include <deque>
#include <mutex>

#include "cohort/core/error.hpp"
#include "detail/communicator_base.hpp"
#include "detail/env.hpp"
#include "detail/format.hpp"
#include "detail/op_desc.hpp"
#include "detail/work.hpp"

namespace cohort::comm::self {
namespace {

constexpr const char* kName = "self";

// Messages this process sent to itself and the receives still waiting for one.
struct Mailbox {
  struct Message {
    int tag;
    std::vector<std::uint8_t> data;
  };
  std::mutex mu;
  std::condition_variable cv;
  std::deque<Message> messages;
  std::string failure;  // set once an op failed: the communicator is then unusable
};

class RecvWork final : public Work {
 public:
  RecvWork(std::shared_ptr<Mailbox> box, void* buf, const detail::OpDesc& desc, Timeout timeout)
      : box_(std::move(box)), buf_(buf), desc_(desc),
        bytes_(desc.count * dtype_size(desc.dtype)), timeout_(timeout),
        deadline_(std::chrono::steady_clock::now() + timeout) {}

  bool test() override {
    std::lock_guard<std::mutex> lock(box_->mu);
    if (try_match_locked()) return true;
    if (std::chrono::steady_clock::now() >= deadline_) fail_locked();
    return false;
  }

  void wait() override {
    std::unique_lock<std::mutex> lock(box_->mu);
    if (box_->cv.wait_until(lock, deadline_, [&] { return try_match_locked(); })) return;
    fail_locked();
  }

 private:
  // True once this receive has its message; throws if the communicator failed meanwhile.
  bool try_match_locked() {
    if (done_) return true;
    if (!box_->failure.empty())
      COHORT_CHECK_IN(kName, false, "communicator unusable after an earlier failure: ",
                      box_->failure);
    for (auto it = box_->messages.begin(); it != box_->messages.end(); ++it) {
      if (it->tag != desc_.tag) continue;
      if (it->data.size() != bytes_) {
        box_->failure = "recv (from rank 0, tag " + std::to_string(desc_.tag) + ") of " +
                        std::to_string(bytes_) + " bytes matched a send of " +
                        std::to_string(it->data.size()) + " bytes";
        COHORT_CHECK_IN(kName, false, box_->failure);
      }
      if (bytes_) std::memcpy(buf_, it->data.data(), bytes_);
      box_->messages.erase(it);
      done_ = true;
      return true;
    }
    return false;
  }

  [[noreturn]] void fail_locked() {
    box_->failure = "recv (from rank 0, tag " + std::to_string(desc_.tag) + ", " +
                    std::to_string(bytes_) + " bytes) timed out after " +
                    detail::format_timeout(timeout_) +
                    ": rank 0 (this process) did not send a matching message";
    COHORT_CHECK_IN(kName, false, box_->failure);
  }

  std::shared_ptr<Mailbox> box_;
  void* buf_;
  detail::OpDesc desc_;  // recv from rank 0 (messages here say bytes, as they always have)
  std::size_t bytes_;
  Timeout timeout_;
  std::chrono::steady_clock::time_point deadline_;
  bool done_ = false;
};

class SelfCommunicator final : public detail::CommunicatorBase {
 public:
  explicit SelfCommunicator(Timeout default_timeout)
      : CommunicatorBase(kName), default_timeout_(default_timeout) {}

  std::string backend() const override { return kName; }
  int rank() const override { return 0; }
  int size() const override { return 1; }
  Capabilities capabilities() const override { return host_capabilities(); }

 private:
  // Arguments checked and the timeout resolved by CommunicatorBase, after check_usable().
  Timeout default_timeout() const override { return default_timeout_; }
  void check_usable() override {
    std::lock_guard<std::mutex> lock(box_->mu);
    COHORT_CHECK_IN(kName, box_->failure.empty(),
                    "communicator unusable after an earlier failure: ", box_->failure);
  }

  WorkHandle start_allreduce(const void* send, void* recv, std::size_t count, DType dtype,
                             ReduceOp op, Timeout) override {
    (void)op;  // every op over one rank is the identity (avg divides by 1)
    copy(recv, send, count * dtype_size(dtype));
    return detail::completed_work();
  }

  WorkHandle start_broadcast(void*, std::size_t, DType, int, Timeout) override {
    return detail::completed_work();
  }

  WorkHandle start_allgather(const void* send, void* recv, std::size_t count, DType dtype,
                             Timeout) override {
    copy(recv, send, count * dtype_size(dtype));
    return detail::completed_work();
  }

  WorkHandle start_reduce_scatter(const void* send, void* recv, std::size_t count, DType dtype,
                                  ReduceOp, Timeout) override {
    copy(recv, send, count * dtype_size(dtype));
    return detail::completed_work();
  }

  WorkHandle start_barrier(Timeout) override { return detail::completed_work(); }

  WorkHandle start_send(const void* buf, std::size_t count, DType dtype, int, int tag,
                        Timeout) override {
    const auto* p = static_cast<const std::uint8_t*>(buf);
    {
      std::lock_guard<std::mutex> lock(box_->mu);
      box_->messages.push_back({tag, std::vector<std::uint8_t>(p, p + count * dtype_size(dtype))});
    }
    box_->cv.notify_all();
    return detail::completed_work();
  }

  WorkHandle start_recv(void* buf, std::size_t count, DType dtype, int, int tag,
                        Timeout t) override {
    auto work = std::make_shared<RecvWork>(
        box_, buf, detail::op_desc(detail::OpKind::recv, count, dtype, ReduceOp::sum, 0, tag), t);
    work->test();  // matches at once when the message is already here
    return work;
  }

  static void copy(void* dst, const void* src, std::size_t bytes) {
    if (bytes && dst != src) std::memcpy(dst, src, bytes);
  }

  Timeout default_timeout_;
  std::shared_ptr<Mailbox> box_ = std::make_shared<Mailbox>();
};

}  // namespace

CommunicatorFactory factory() {
  CommunicatorFactory f;
  f.name = kName;
  f.score = 100;  // nothing beats no communication at all
  f.available = [](const ProcessGroupInfo& info, std::string* why_not) {
    if (info.world_size == 1) return true;
    if (why_not)
      *why_not = "needs world size 1 (this group has " + std::to_string(info.world_size) +
                 " ranks)";
    return false;
  };
  f.create = [](const ProcessGroupInfo&, std::shared_ptr<Store>) -> std::unique_ptr<Communicator> {
    return std::make_unique<SelfCommunicator>(detail::default_timeout_from_env());
  };
  return f;
}

}  // namespace cohort::comm::self
