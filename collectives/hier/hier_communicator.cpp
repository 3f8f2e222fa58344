// The hierarchical communicator (see hier_communicator.hpp): set-up from the store, the worker
// thread that runs collectives in issue order, and each collective's stages.
#include "hier/hier_communicator.hpp"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "cohort/collectives/cost_model.hpp"
#include "cohort/collectives/process_group.hpp"
#include "cohort/core/error.hpp"
#include "detail/backoff.hpp"
#include "detail/communicator_base.hpp"
#include "detail/env.hpp"
#include "detail/op_desc.hpp"
#include "detail/reduce.hpp"
#include "shm/shm_communicator.hpp"
#include "ucx/ucx_communicator.hpp"

namespace cohort::comm::hier {
namespace {

using detail::OpKind;

constexpr const char* kName = "hier";
// The pipeline's chunk (allreduce_pipelined), measured on the 10 Gbit/s testbed (2 hosts x 2
// ranks, 2 cores; docs/benchmarks/multihost.md): 8 MiB took 64 MiB from 109 to 98 ms and left
// 16 MiB within noise; 2 MiB chunks were slower up to 16 MiB (37 against 26 ms), each chunk
// paying a shm and a ucx op's software time.
constexpr std::size_t kDefaultChunkBytes = 8u << 20;

// memcpy that accepts an empty range (a count-0 op's buffers may be null).
void copy_bytes(void* dst, const void* src, std::size_t n) {
  if (n) std::memcpy(dst, src, n);
}

// A failed op's error as plain strings: the waiting thread throws a new cohort::Error from them
// rather than rethrowing the worker thread's exception object. Passing that object between
// threads (std::exception_ptr) leaves its lifetime to reference counts inside libstdc++, which
// ThreadSanitizer cannot see, and it reports the worker freeing it as a race.
struct Failure {
  std::string file, expr, backend, why;
  int line = 0, rank = -1;
  static Failure of(const std::exception& e, int rank) {
    if (const auto* err = dynamic_cast<const Error*>(&e))
      return {err->file(), err->expression(), err->backend(), err->why(), err->line(), err->rank()};
    return {__FILE__, "", kName, e.what(), __LINE__, rank};
  }
  [[noreturn]] void raise() const { throw Error(file, line, expr, backend, rank, why); }
};

// The Work of one queued collective: run by the worker thread, or by the caller that waits for it
// (HierCommunicator::run_until), and completed (or failed) by whichever ran it.
class QueuedWork final : public Work {
 public:
  // `run_until`: runs the communicator's queue on the calling thread until this work is done;
  // `polled`: wakes the worker for a work that is polled. Both are the communicator's, which
  // finishes every queued work before it is destroyed: a done work never calls them.
  QueuedWork(std::function<void(QueuedWork&)> run_until, std::function<void()> polled)
      : run_until_(std::move(run_until)), polled_(std::move(polled)) {}
  bool test() override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (failed_) failure_.raise();
      if (done_) return true;
    }
    polled_();
    return false;
  }
  // Every stage runs under the op's timeout, so whoever runs it finishes each op in bounded time.
  void wait() override {
    if (!done()) run_until_(*this);
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [this] { return done_; });
    if (failed_) failure_.raise();
  }
  bool done() {
    std::lock_guard<std::mutex> lock(mu_);
    return done_;
  }
  void finish(const Failure* failure) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      done_ = true;
      if (failure) failed_ = true, failure_ = *failure;
    }
    cv_.notify_all();
  }

 private:
  std::function<void(QueuedWork&)> run_until_;
  std::function<void()> polled_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool done_ = false;
  bool failed_ = false;
  Failure failure_;
};

class HierCommunicator final : public detail::CommunicatorBase {
 public:
  HierCommunicator(const ProcessGroupInfo& info, std::shared_ptr<Store> store)
      : CommunicatorBase(kName),
        rank_(info.rank),
        size_(info.world_size),
        timeout_(detail::default_timeout_from_env()) {
    // Every rank's host key, through the store.
    store->set_string("hier/key/" + std::to_string(rank_), host_key());
    std::vector<std::string> keys;
    for (int r = 0; r < size_; ++r)
      keys.push_back(store->get_string("hier/key/" + std::to_string(r), timeout_));
    map_ = map_hosts(keys);
    host_ = map_.host_of[static_cast<std::size_t>(rank_)];
    if (rank_ == 0 && std::getenv("COHORT_HIER_LOG") && std::string(std::getenv("COHORT_HIER_LOG")) == "1")
      std::fprintf(stderr, "cohort hier: %s\n", describe(keys).c_str());
    notice_layout(info);
    const auto& mine = map_.members[static_cast<std::size_t>(host_)];
    wake_ =
        std::make_unique<detail::LazyWake>(detail::yield_when_idle(static_cast<int>(mine.size())));

    ProcessGroupInfo local = info;
    local.rank = map_.local_of[static_cast<std::size_t>(rank_)];
    local.world_size = static_cast<int>(mine.size());
    local.local_rank = local.rank;
    local.local_world_size = local.world_size;
    local.job_id = info.job_id + ".hier.h" + std::to_string(host_);
    store_ = make_prefix_store(store, "hier/");
    local_ = shm::factory().create(
        local, make_prefix_store(store, "hier/h" + std::to_string(host_) + "/"));
    if (map_.hosts() > 1) {
      if (local.rank == 0) {
        ProcessGroupInfo leaders = info;
        leaders.rank = host_;
        leaders.world_size = map_.hosts();
        leaders_ = ucx::factory().create(leaders, make_prefix_store(store, "hier/leaders/"));
      }
      flat_ = ucx::factory().create(info, make_prefix_store(store, "hier/flat/"));
    }
    choose_allreduce(*store);
    chunk_bytes_ = static_cast<std::size_t>(detail::bytes_from_env(
        "COHORT_HIER_CHUNK_BYTES", kDefaultChunkBytes, 0, std::uint64_t{1} << 40, kName));
    worker_ = std::thread([this] { run(); });
  }

  // Elastic training (Communicator::declare_dead): a dead rank of this host is the shm stages'
  // (shm sees a local exit by itself); a dead leader of another host fails the leaders' ucx
  // stages at once; the flat ucx communicator (point-to-point, flat all-reduces) hears of every
  // rank. A dead non-leader elsewhere fails its own host's shm stage, hence that host's leader,
  // which the group's watcher then declares dead here in turn.
  void declare_dead(int rank, const std::string& why) override {
    COHORT_CHECK(rank >= 0 && rank < size_, "declare_dead: rank ", rank, " is not a rank of this ",
                 size_, "-rank hier communicator");
    const auto r = static_cast<std::size_t>(rank);
    if (same_host(rank))
      local_->declare_dead(map_.local_of[r], why);
    else if (leaders_ && map_.local_of[r] == 0)
      leaders_->declare_dead(map_.host_of[r], why);
    if (flat_) flat_->declare_dead(rank, why);
  }

  ~HierCommunicator() override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    worker_.join();  // queued ops finish first, each within its timeout
  }

  std::string backend() const override { return kName; }
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  Capabilities capabilities() const override { return host_capabilities(); }

 protected:
  Timeout default_timeout() const override { return timeout_; }
  void check_usable() override {
    std::lock_guard<std::mutex> lock(mu_);
    COHORT_CHECK_IN(kName, broken_.empty(),
                    "the communicator is unusable after an earlier failure: ", broken_);
  }

  WorkHandle start_allreduce(const void* send, void* recv, std::size_t count, DType dtype,
                             ReduceOp op, Timeout t) override {
    return enqueue(detail::op_desc(OpKind::allreduce, count, dtype, op),
                   [=] { allreduce_stages(send, recv, count, dtype, op, t); });
  }

  WorkHandle start_broadcast(void* buf, std::size_t count, DType dtype, int root,
                             Timeout t) override {
    return enqueue(detail::op_desc(OpKind::broadcast, count, dtype, ReduceOp::sum, root), [=] {
      const int root_host = map_.host_of[static_cast<std::size_t>(root)];
      if (host_ == root_host)
        stage("shm broadcast on the root's host", [&] {
          return local_->broadcast(buf, count, dtype, map_.local_of[static_cast<std::size_t>(root)],
                                   t);
        });
      if (map_.hosts() == 1) return;
      // The root's host, too, waits for its leader's status: a failure among the leaders (a
      // mismatch, a dead host) then fails every rank in this op. Had they returned once the shm
      // broadcast was done, a rank would learn of it only at its next collective.
      if (host_ == root_host) {
        leader_stage(
            kLeaderBroadcast, [&] { return leaders_->broadcast(buf, count, dtype, root_host, t); },
            t);
        return;
      }
      leader_stage(
          kLeaderBroadcast, [&] { return leaders_->broadcast(buf, count, dtype, root_host, t); },
          t);
      stage("shm broadcast from the host leader",
            [&] { return local_->broadcast(buf, count, dtype, 0, t); });
    });
  }

  WorkHandle start_allgather(const void* send, void* recv, std::size_t count, DType dtype,
                             Timeout t) override {
    return enqueue(detail::op_desc(OpKind::allgather, count, dtype),
                   [=] { allgather_stages(send, recv, count, dtype, t); });
  }

  // The stages of an all-gather (see the header), on the thread that runs the collective.
  void allgather_stages(const void* send, void* recv, std::size_t count, DType dtype, Timeout t) {
    {
      const std::size_t block = count * dtype_size(dtype);
      const auto& mine = map_.members[static_cast<std::size_t>(host_)];
      std::vector<char> host_blocks(mine.size() * block);  // this host's ranks, in local order
      stage("shm allgather on the host",
            [&] { return local_->allgather(send, host_blocks.data(), count, dtype, t); });
      char* out = static_cast<char*>(recv);
      std::vector<char> all;  // the leaders' gather: every host's blocks
      if (map_.hosts() == 1) {
        for (std::size_t i = 0; i < mine.size(); ++i)
          copy_bytes(out + static_cast<std::size_t>(mine[i]) * block,
                      host_blocks.data() + i * block, block);
        return;
      }
      leader_stage(
          "ucx allgather among the host leaders",
          [&] {
            // Hosts may hold different numbers of ranks: each contributes max_local blocks.
            const std::size_t width = static_cast<std::size_t>(map_.max_local());
            host_blocks.resize(width * block);
            all.resize(static_cast<std::size_t>(map_.hosts()) * width * block);
            return leaders_->allgather(host_blocks.data(), all.data(), width * count, dtype, t);
          },
          t);
      if (leaders_) {
        const std::size_t width = static_cast<std::size_t>(map_.max_local());
        for (int h = 0; h < map_.hosts(); ++h) {
          const auto& ranks = map_.members[static_cast<std::size_t>(h)];
          for (std::size_t i = 0; i < ranks.size(); ++i)
            copy_bytes(out + static_cast<std::size_t>(ranks[i]) * block,
                        all.data() + (static_cast<std::size_t>(h) * width + i) * block, block);
        }
      }
      stage("shm broadcast from the host leader", [&] {
        return local_->broadcast(recv, count * static_cast<std::size_t>(size_), dtype, 0, t);
      });
    }
  }

  WorkHandle start_reduce_scatter(const void* send, void* recv, std::size_t count, DType dtype,
                                  ReduceOp op, Timeout t) override {
    return enqueue(detail::op_desc(OpKind::reduce_scatter, count, dtype, op), [=] {
      const std::size_t es = dtype_size(dtype);
      std::vector<char> whole(count * static_cast<std::size_t>(size_) * es);
      allreduce_stages(send, whole.data(), count * static_cast<std::size_t>(size_), dtype, op, t);
      copy_bytes(recv, whole.data() + static_cast<std::size_t>(rank_) * count * es, count * es);
    });
  }

  WorkHandle start_barrier(Timeout t) override {
    return enqueue(detail::op_desc(OpKind::barrier, 0, DType::u8), [=] {
      stage("shm barrier on the host", [&] { return local_->barrier(t); });
      if (map_.hosts() == 1) return;
      // The leader's status broadcast releases the host once every host has arrived.
      leader_stage(
          "ucx barrier among the host leaders", [&] { return leaders_->barrier(t); }, t);
    });
  }

  WorkHandle start_send(const void* buf, std::size_t count, DType dtype, int peer, int tag,
                        Timeout t) override {
    if (same_host(peer))
      return local_->send(buf, count, dtype, map_.local_of[static_cast<std::size_t>(peer)], tag, t);
    return flat_->send(buf, count, dtype, peer, tag, t);
  }
  WorkHandle start_recv(void* buf, std::size_t count, DType dtype, int peer, int tag,
                        Timeout t) override {
    if (same_host(peer))
      return local_->recv(buf, count, dtype, map_.local_of[static_cast<std::size_t>(peer)], tag, t);
    return flat_->recv(buf, count, dtype, peer, tag, t);
  }

 private:
  bool same_host(int peer) const { return map_.host_of[static_cast<std::size_t>(peer)] == host_; }

  // COHORT_HIER_ALGO: hierarchical (the default without a model), flat (every all-reduce on the
  // flat ucx communicator of all ranks), or auto (per size, the cost model's pick:
  // COHORT_COST_MODEL names the file of cohort-bench --calibrate). Rank 0's model goes to every
  // rank through the store, so all ranks choose alike even where their files differ.
  void choose_allreduce(Store& store) {
    const char* env = std::getenv("COHORT_HIER_ALGO");
    const std::string want = env && *env ? env : "";
    COHORT_CHECK_IN(kName,
                    want.empty() || want == "hierarchical" || want == "flat" || want == "auto",
                    "COHORT_HIER_ALGO='", want, "' must be hierarchical, flat or auto");
    const char* path = std::getenv("COHORT_COST_MODEL");
    const bool use_model = want == "auto" || (want.empty() && path && *path);
    algo_ = want == "flat" ? Algo::flat : use_model ? Algo::model : Algo::hierarchical;
    if (algo_ == Algo::model) {
      COHORT_CHECK_IN(kName, path && *path,
                      "COHORT_HIER_ALGO=auto needs COHORT_COST_MODEL=FILE "
                      "(cohort-bench --calibrate FILE makes one)");
      if (rank_ == 0) {
        const CostModel m = load_cost_model(path);
        check_cost_model_fits(m, path, size_, map_.hosts());
        store.set_string("hier/model", format_cost_model(m));
      }
      model_ = parse_cost_model(store.get_string("hier/model", timeout_),
                                "rank 0's " + std::string(path));
    }
    if ((algo_ != Algo::hierarchical) && map_.hosts() == 1) {
      if (rank_ == 0)
        std::fprintf(stderr,
                     "cohort hier: one host, so every all-reduce is the host's own "
                     "(COHORT_HIER_ALGO=%s does not apply)\n",
                     want.empty() ? "auto" : want.c_str());
      algo_ = Algo::hierarchical;
    }
  }

  bool flat_allreduce(std::size_t bytes) const {
    if (algo_ == Algo::flat) return true;
    if (algo_ != Algo::model) return false;
    return pick_allreduce(model_, static_cast<double>(bytes), size_, map_.hosts()) !=
           AllreduceAlgo::hierarchical;
  }

  // recv = op over all ranks of send: each host's sum, then the leaders' sum, then back out. avg
  // sums and divides once at the end, so hosts of different sizes weigh by their ranks. Where the
  // choice (choose_allreduce) is flat: one all-reduce of every rank over ucx instead.
  void allreduce_stages(const void* send, void* recv, std::size_t count, DType dtype, ReduceOp op,
                        Timeout t) {
    if (flat_allreduce(count * dtype_size(dtype))) {
      stage("ucx allreduce of every rank (flat)",
            [&] { return flat_->allreduce(send, recv, count, dtype, op, t); });
      return;
    }
    const ReduceOp inner = op == ReduceOp::avg ? ReduceOp::sum : op;
    const std::size_t chunk = chunk_bytes_ / dtype_size(dtype);
    if (map_.hosts() > 1 && chunk > 0 && count >= 2 * chunk) {
      if (checks_) agree(t);
      allreduce_pipelined(send, recv, count, dtype, inner, t, chunk);
      if (op == ReduceOp::avg) detail::finish_avg(recv, count, dtype, size_);
      return;
    }
    stage("shm allreduce on the host",
          [&] { return local_->allreduce(send, recv, count, dtype, inner, t); });
    if (map_.hosts() == 1) {
      if (op == ReduceOp::avg) detail::finish_avg(recv, count, dtype, size_);
      return;
    }
    const auto leaders = [&] { return leaders_->allreduce(recv, recv, count, dtype, inner, t); };
    const std::size_t bytes = count * dtype_size(dtype);
    if (bytes <= kStatusCarries) {
      // The result rides in the leader's status: one shm op on the host instead of two.
      leader_stage(kLeaderAllreduce, leaders, t, recv, bytes);
    } else {
      leader_stage(kLeaderAllreduce, leaders, t);
      stage("shm broadcast from the host leader",
            [&] { return local_->broadcast(recv, count, dtype, 0, t); });
    }
    if (op == ReduceOp::avg) detail::finish_avg(recv, count, dtype, size_);
  }

  // The three stages of a large all-reduce as a pipeline over chunks of `chunk` elements, so that
  // the leaders' exchange of one chunk overlaps the host's reduction of the next and the
  // broadcast back of the one before. Every rank of a host issues the same shm ops in the same
  // order (the chunks' all-reduces, then their broadcasts, then the leader's status), so shm's
  // issue-order matching holds. A leader whose leaders' stage fails still broadcasts every chunk
  // (its host's ranks are waiting in those broadcasts), then the failure in the status, so the
  // host fails at once, as leader_stage() does for the unpipelined stages.
  void allreduce_pipelined(const void* send, void* recv, std::size_t count, DType dtype,
                           ReduceOp inner, Timeout t, std::size_t chunk) {
    const std::size_t es = dtype_size(dtype), n = (count + chunk - 1) / chunk;
    auto in = [&](std::size_t k) { return static_cast<const char*>(send) + k * chunk * es; };
    auto out = [&](std::size_t k) { return static_cast<char*>(recv) + k * chunk * es; };
    auto len = [&](std::size_t k) { return std::min(chunk, count - k * chunk); };
    std::vector<WorkHandle> host(n), lead(n), back(n);
    auto in_stage = [&](const char* what, auto&& body) {
      try {
        body();
      } catch (const Error& e) {
        ::cohort::detail::throw_error(
            __FILE__, __LINE__, "", kName,
            ::cohort::detail::concat("stage '", what, "' (rank ", rank_, ", host ", host_, " of ",
                                     map_.hosts(), " hosts, pipelined in ", n,
                                     " chunks): ", e.what()));
      }
    };
    in_stage("shm allreduce on the host", [&] {
      for (std::size_t k = 0; k < n; ++k)
        host[k] = local_->allreduce(in(k), out(k), len(k), dtype, inner, t);
    });
    Status st;
    st.ok = 1;
    std::exception_ptr failed;
    if (leaders_) {
      try {
        for (std::size_t k = 0; k < n; ++k) {
          in_stage("shm allreduce on the host", [&] { host[k]->wait(); });
          in_stage(kLeaderAllreduce,
                   [&] { lead[k] = leaders_->allreduce(out(k), out(k), len(k), dtype, inner, t); });
        }
        // The leaders' exchanges of later chunks run on ucx's progress thread while this thread
        // broadcasts the earlier ones (shm moves only while a rank calls into it, so this thread
        // waits on each broadcast rather than polling both: polling starved ucx's thread). With
        // more ranks than cores that thread is first woken when chunk 1's exchange is queued
        // (detail::LazyWake), so chunk 0's waits for it.
        for (std::size_t k = 0; k < n; ++k) {
          in_stage(kLeaderAllreduce, [&] { lead[k]->wait(); });
          in_stage("shm broadcast from the host leader", [&] {
            back[k] = local_->broadcast(out(k), len(k), dtype, 0, t);
            back[k]->wait();
          });
        }
      } catch (const Error& e) {
        failed = std::current_exception();
        st.ok = 0;
        std::snprintf(st.why, sizeof st.why, "%s", e.what());
        for (std::size_t k = 0; k < n; ++k)  // the host's ranks wait in these
          if (!back[k]) back[k] = local_->broadcast(out(k), len(k), dtype, 0, t);
      }
    } else {
      for (std::size_t k = 0; k < n; ++k)
        in_stage("shm broadcast from the host leader",
                 [&] { back[k] = local_->broadcast(out(k), len(k), dtype, 0, t); });
      in_stage("shm allreduce on the host", [&] {
        for (auto& w : host) w->wait();
      });
    }
    in_stage("shm broadcast from the host leader", [&] {
      for (auto& w : back) w->wait();
    });
    share_status(st, failed, t);
  }

  static constexpr const char* kLeaderAllreduce = "ucx allreduce among the host leaders";
  static constexpr const char* kLeaderBroadcast = "ucx broadcast among the host leaders";

  // What a leader tells its host after a leaders' stage: whether it succeeded and, if not, its
  // error (truncated), so the host's other ranks fail at once instead of waiting out their
  // timeout in the next stage.
  struct Status {
    std::uint32_t ok = 0;
    char why[1020] = {};
  };

  // An all-reduce's result up to this size travels in the leader's status broadcast (with it,
  // one shm op after the leaders' stage instead of two: each costs the host's ranks a wake-up).
  static constexpr std::size_t kStatusCarries = 4096;

  // `start` on this host's leader (a ucx op among the leaders), then one shm broadcast of its
  // Status to the host, followed by `bytes` of `data` (the leader's, after `start`) when given:
  // the others receive them into `data` when the leader succeeded. The other ranks wait for it
  // up to twice `t`: the leader's stage may take `t` to fail. Every rank of the host calls this;
  // only the leader runs `start`.
  template <class Start>
  void leader_stage(const char* what, Start start, Timeout t, void* data = nullptr,
                    std::size_t bytes = 0) {
    Status st;
    std::exception_ptr failed;
    if (leaders_) {
      try {
        stage(what, start, "; in the leaders' communicator a rank is a host: " + leader_names());
        st.ok = 1;
      } catch (const Error& e) {
        failed = std::current_exception();
        std::snprintf(st.why, sizeof st.why, "%s", e.what());
      }
    }
    share_status(st, failed, t, data, bytes);
  }

  // The end of a leaders' stage on every rank of the host: the leader's Status (and `bytes` of
  // `data`) goes to the host (the others wait up to twice `t`: the leader's stage may take `t`
  // to fail), then the leader rethrows its own failure and the others throw the one the Status
  // carries.
  void share_status(Status& st, const std::exception_ptr& failed, Timeout t, void* data = nullptr,
                    std::size_t bytes = 0) {
    if (map_.members[static_cast<std::size_t>(host_)].size() > 1) {
      const Timeout wait = leaders_ ? t : Timeout(2 * t.count() + 1000);
      if (bytes == 0) {
        stage("shm status from the host leader",
              [&] { return local_->broadcast(&st, sizeof st, DType::u8, 0, wait); });
      } else {
        std::vector<unsigned char> msg(sizeof st + bytes);
        if (leaders_) {
          std::memcpy(msg.data(), &st, sizeof st);
          if (st.ok) std::memcpy(msg.data() + sizeof st, data, bytes);
        }
        stage("shm status and result from the host leader",
              [&] { return local_->broadcast(msg.data(), msg.size(), DType::u8, 0, wait); });
        if (!leaders_) {
          std::memcpy(&st, msg.data(), sizeof st);
          if (st.ok) std::memcpy(data, msg.data() + sizeof st, bytes);
        }
      }
    }
    if (failed) std::rethrow_exception(failed);
    COHORT_CHECK_IN(kName, st.ok == 1, "the host leader (rank ",
                    map_.members[static_cast<std::size_t>(host_)][0], ") failed: ", st.why);
  }

  // Says once (rank 0, or the rank that sees it) what the map makes of the job where it is not
  // what hier is for, or not what the launcher said; the job goes on by the host keys.
  void notice_layout(const ProcessGroupInfo& info) const {
    const int here = static_cast<int>(map_.members[static_cast<std::size_t>(host_)].size());
    if (rank_ == 0 && size_ > 1 && map_.max_local() == 1)
      std::fprintf(stderr,
                   "cohort hier: every host has one rank (%d hosts), so hier is flat ucx with "
                   "extra stages; --comm ucx does the same with less work\n",
                   map_.hosts());
    if (rank_ == 0 && size_ > 1 && map_.hosts() == 1)
      std::fprintf(stderr,
                   "cohort hier: all %d ranks are on one host, so hier is shm with a worker "
                   "thread; --comm shm does the same with less work\n",
                   size_);
    // A rank given COHORT_HOSTID (cohortrun --simulate-hosts) declared its host: the launcher's
    // count of ranks on the machine is expected to differ then.
    if (info.local_world_size > 0 && info.local_world_size != here &&
        map_.local_of[static_cast<std::size_t>(rank_)] == 0 && !std::getenv("COHORT_HOSTID"))
      std::fprintf(stderr,
                   "cohort hier (rank %d): the launcher says %d rank(s) share this host "
                   "(LOCAL_WORLD_SIZE), the host keys say %d (ranks%s); going by the host keys "
                   "(COHORT_HOSTID overrides a rank's key)\n",
                   rank_, info.local_world_size, here, ranks_here().c_str());
  }
  std::string ranks_here() const {
    std::string s;
    for (int r : map_.members[static_cast<std::size_t>(host_)]) s += " " + std::to_string(r);
    return s;
  }

  // "2 hosts: host 0 = ranks 0 1 (key K0), host 1 = ranks 2 3 (key K1); leaders: ranks 0 2".
  std::string describe(const std::vector<std::string>& keys) const {
    std::string s = std::to_string(map_.hosts()) + (map_.hosts() == 1 ? " host:" : " hosts:");
    std::string leaders;
    for (int h = 0; h < map_.hosts(); ++h) {
      const auto& ranks = map_.members[static_cast<std::size_t>(h)];
      s += (h ? ", host " : " host ") + std::to_string(h) + " = ranks";
      for (int r : ranks) s += " " + std::to_string(r);
      s += " (key " + keys[static_cast<std::size_t>(ranks[0])] + ")";
      leaders += " " + std::to_string(ranks[0]);
    }
    return s + "; leaders: ranks" + leaders;
  }

  // "host 0 = rank 0, host 1 = rank 2, ..." (at most 8 named).
  std::string leader_names() const {
    std::string s;
    for (int h = 0; h < map_.hosts() && h < 8; ++h)
      s += (h ? ", host " : "host ") + std::to_string(h) + " = rank " +
           std::to_string(map_.members[static_cast<std::size_t>(h)][0]);
    if (map_.hosts() > 8) s += ", ...";
    return s;
  }

  // Runs one stage to completion; its error comes back naming the stage (and `context`).
  template <class Start>
  void stage(const char* what, Start start, const std::string& context = "") {
    try {
      start()->wait();
    } catch (const Error& e) {
      ::cohort::detail::throw_error(
          __FILE__, __LINE__, "", kName,
          ::cohort::detail::concat("stage '", what, "' (rank ", rank_, ", host ", host_, " of ",
                                   map_.hosts(), " hosts", context, "): ", e.what()));
    }
  }

  struct Task {
    detail::OpDesc desc;  // the collective as the caller issued it, numbered in issue order
    std::function<void()> body;
    std::shared_ptr<QueuedWork> work;
  };

  // Queues an op. Who runs it: the caller that waits for it (run_until), as ucx's engine does,
  // or the worker thread for ops nobody waits for (DDP's buckets issued during backward). Each
  // way the ops run one at a time, in issue order (run_mu_). Running it in the wait saves two
  // thread wake-ups per op (the worker's, then the caller's). With more ranks than cores the
  // worker is not even woken for the first op queued (each wake-up is a context switch on a core
  // some rank needs): a second op queued before anyone waited, a test(), or its 2 ms timer
  // wakes it. On the 2 x 2-rank testbed at 10 Gbit/s, hier's 16-byte all-reduce went from 149-163
  // us to 57 (Open MPI: 42).
  WorkHandle enqueue(detail::OpDesc desc, std::function<void()> body) {
    auto work =
        std::make_shared<QueuedWork>([this](QueuedWork& w) { run_until(w); }, [this] { polled(); });
    {
      std::lock_guard<std::mutex> lock(mu_);
      desc.seq = ++seq_;
      queue_.push_back({desc, std::move(body), work});
    }
    if (wake_->queued()) cv_.notify_all();
    return work;
  }

  void polled() {
    if (wake_->polled()) cv_.notify_all();
  }

  // A waiting caller: runs the queue in order up to and including `w`. Holding run_mu_, `w` is
  // either done (the worker ran it) or still queued.
  void run_until(QueuedWork& w) {
    std::lock_guard<std::mutex> run(run_mu_);
    wake_->driving();
    while (!w.done()) {
      Task task;
      {
        std::lock_guard<std::mutex> lock(mu_);
        if (queue_.empty()) break;
        task = std::move(queue_.front());
        queue_.pop_front();
      }
      execute(task);
    }
  }

  void run() {
    for (;;) {
      {
        std::unique_lock<std::mutex> lock(mu_);
        const auto ready = [this] { return stop_ || !queue_.empty(); };
        if (wake_->lazy())
          cv_.wait_for(lock, kWorkerPoll, ready);  // ops enqueue() did not wake it for
        else
          cv_.wait(lock, ready);
        if (queue_.empty()) {
          if (stop_) return;  // stopping, nothing left
          continue;
        }
      }
      std::lock_guard<std::mutex> run(run_mu_);
      Task task;
      {
        std::lock_guard<std::mutex> lock(mu_);
        if (queue_.empty()) continue;  // a waiting caller ran it meanwhile
        task = std::move(queue_.front());
        queue_.pop_front();
      }
      execute(task);
    }
  }

  void execute(Task& task) {
    std::string broken;
    {
      std::lock_guard<std::mutex> lock(mu_);
      broken = broken_;
    }
    Failure failure;
    bool failed = false;
    try {
      COHORT_CHECK_IN(kName, broken.empty(), task.desc.str(),
                      " not run: an earlier collective failed: ", broken);
      // Every stage this body issues carries the collective's fingerprint
      // (detail::OuterCollective).
      detail::OuterCollective outer(task.desc);
      running_ = task.desc;
      task.body();
    } catch (const std::exception& e) {
      failed = true;
      failure = Failure::of(e, rank_);
      // Every backend words a mismatch with detail::mismatch_message ("collective mismatch: ..."),
      // as a leader's status passes it on to its host.
      if (broken.empty() && std::strstr(e.what(), "collective mismatch"))
        failure.why = name_mismatch(task.desc, failure.why);
      std::lock_guard<std::mutex> lock(mu_);
      if (broken_.empty()) broken_ = task.desc.str() + ": " + failure.why;
    }
    task.work->finish(failed ? &failure : nullptr);
  }

  // Every rank's description of the running collective, all-gathered through the stages; throws
  // the mismatch, naming both sides, where they differ. Only before a pipelined all-reduce (16
  // MiB and up by default), where it costs one small all-gather against milliseconds: once its
  // chunks are issued, a mismatch found in the first chunk's stages would still leave every
  // chunk to be unwound on every rank.
  void agree(Timeout t) {
    std::vector<detail::OpDesc> all(static_cast<std::size_t>(size_));
    allgather_stages(&running_, all.data(), sizeof(detail::OpDesc), DType::u8, t);
    const std::string mismatch = first_mismatch(all, std::vector<bool>(all.size(), true));
    COHORT_CHECK_IN(kName, mismatch.empty(), mismatch);
  }

  // The mismatch message for the first two of `all` that differ (among those `have` marks), this
  // rank against each other first (its own side named), then any two others; empty if none.
  std::string first_mismatch(const std::vector<detail::OpDesc>& all,
                             const std::vector<bool>& have) const {
    const auto differ = [&](int a, int b) {
      const auto i = static_cast<std::size_t>(a), j = static_cast<std::size_t>(b);
      return a != b && have[i] && have[j] && !detail::same_collective(all[i], all[j]);
    };
    const auto named = [&](int a, int b) {
      return detail::mismatch_message(a, all[static_cast<std::size_t>(a)], b,
                                      all[static_cast<std::size_t>(b)]);
    };
    for (int b = 0; b < size_; ++b)
      if (differ(rank_, b)) return named(rank_, b);
    for (int a = 0; a < size_; ++a)
      for (int b = a + 1; b < size_; ++b)
        if (differ(a, b)) return named(a, b);
    return "";
  }

  // A stage found a collective mismatch (its own descriptions differ, or only their outer
  // fingerprints: detail::OuterCollective). The stage can name only its own ops, so the ranks
  // that fail put their description of the whole collective in the store, and each names the
  // first pair that differ, in the words of every backend's check ("collective mismatch: rank 0
  // issued allreduce #2 (1000 x f32, sum) where rank 2 issued allreduce #2 (999 x f32, avg)"),
  // followed by what the stage found. It waits up to kNameMismatchWait for the others' entries:
  // a rank whose own stages matched (three or more hosts: ucx compares each leader with the one
  // before) has none, and learns of the failure at its next collective, as on flat ucx.
  std::string name_mismatch(const detail::OpDesc& mine, const std::string& found) {
    const std::string key = "mismatch/" + std::to_string(mine.seq) + "/";
    std::vector<std::uint8_t> bytes(sizeof mine);
    std::memcpy(bytes.data(), &mine, sizeof mine);
    std::vector<std::string> keys;
    for (int r = 0; r < size_; ++r) keys.push_back(key + std::to_string(r));
    std::vector<detail::OpDesc> all(static_cast<std::size_t>(size_));
    std::vector<bool> have(static_cast<std::size_t>(size_));
    try {
      store_->set(keys[static_cast<std::size_t>(rank_)], bytes);
      try {
        store_->wait(keys, kNameMismatchWait);
      } catch (const Error&) {  // someone's stages matched: name those that did not
      }
      for (int r = 0; r < size_; ++r) {
        const auto i = static_cast<std::size_t>(r);
        if (r != rank_ && !store_->check({keys[i]})) continue;
        const auto v = r == rank_ ? bytes : store_->get(keys[i], kNameMismatchWait);
        if (v.size() != sizeof(detail::OpDesc)) continue;
        std::memcpy(&all[i], v.data(), v.size());
        have[i] = true;
      }
    } catch (const std::exception&) {
      return found;  // the store is gone too: the stage's words are all there is
    }
    const std::string mismatch = first_mismatch(all, have);
    if (!mismatch.empty()) return mismatch + " (hier found it in " + found + ")";
    // No differing description arrived in time: at least this rank's own side in the user's words.
    return "rank " + std::to_string(rank_) + " issued " + mine.str() + "; no rank's differing "
           "description reached the store within " + std::to_string(kNameMismatchWait.count()) +
           " ms; hier found: " + found;
  }

  enum class Algo { hierarchical, flat, model };
  const int rank_, size_;
  const Timeout timeout_;
  Algo algo_ = Algo::hierarchical;
  CostModel model_;
  HostMap map_;
  int host_ = 0;
  std::unique_ptr<Communicator> local_, leaders_, flat_;
  // COHORT_HIER_CHUNK_BYTES: all-reduces of at least two chunks run pipelined (0: never).
  std::size_t chunk_bytes_ = 0;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Task> queue_;
  std::mutex run_mu_;  // held by whoever runs queued ops: the worker or a waiting caller
  // Whether enqueue() wakes the worker (set with the host's rank count).
  std::unique_ptr<detail::LazyWake> wake_;
  static constexpr auto kWorkerPoll = std::chrono::milliseconds(2);
  // 1 s: at 500 ms a loaded 2-core machine (ctest -j2, 3 ranks) once left the odd rank's entry
  // out (comm_failures_hier_2hosts_np3, 2026-12-03); a rank that never posts costs this once.
  static constexpr auto kNameMismatchWait = std::chrono::milliseconds(1000);
  std::shared_ptr<Store> store_;  // prefixed "hier/": name_mismatch's entries
  std::uint64_t seq_ = 0;         // collectives issued (under mu_)
  detail::OpDesc running_;        // the collective being run (under run_mu_)
  // COHORT_COLLECTIVE_CHECKS (on unless 0): the stages read it themselves; agree() follows it.
  const bool checks_ = detail::collective_checks_from_env();
  bool stop_ = false;
  std::string broken_;
  std::thread worker_;
};

}  // namespace

CommunicatorFactory factory() {
  CommunicatorFactory f;
  f.name = kName;
  f.score = 60;  // above shm and ucx, where "auto" considers it at all (auto_ok)
  f.available = [](const ProcessGroupInfo& info, std::string* why_not) {
    return ucx::factory().available(info, why_not);
  };
  f.auto_ok = [](const ProcessGroupInfo& info) {
    return info.local_world_size > 1 && info.local_world_size < info.world_size;
  };
  f.create = [](const ProcessGroupInfo& info,
                std::shared_ptr<Store> store) -> std::unique_ptr<Communicator> {
    if (!store) {
      COHORT_CHECK_IN(kName, info.world_size == 1, "a group of ", info.world_size,
                      " ranks needs a store to find its hosts");
      store = make_memory_store();
    }
    // No whole-collective check around it (detail::make_checked, one hierarchical all-gather
    // per collective: it cost the 16-byte all-reduce 3.6x its time). Each stage's own check
    // compares the whole collective's fingerprint too (detail::OuterCollective), and
    // name_mismatch names both sides.
    return std::make_unique<HierCommunicator>(info, std::move(store));
  };
  return f;
}

}  // namespace cohort::comm::hier
