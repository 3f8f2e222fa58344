// Tests of the ucx communicator backend on its own (the shared conformance suite in
// tests/collectives/ runs every backend; these go deeper into what is particular to ucx: both
// allreduce algorithms and their crossover, pipelined chunks, tags of concurrent ops, timeouts
// that name the missing rank, real processes).
#include <doctest/doctest.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "cohort/core/error.hpp"
#include "harness.hpp"
#include "ucx/ucx_communicator.hpp"

using namespace ucxtest;
using cohort::comm::Timeout;
using cohort::comm::WorkHandle;

namespace {

constexpr Timeout kT{20000};  // generous per-op timeout: a wrong test fails, it does not hang

std::string join(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += x + "\n";
  return s;
}

// Runs every collective on every dtype at sizes 0, 1, 1023 and ~2 MiB, in place and out of
// place, checking each result; records mismatches and carries on, so that every rank issues the
// same ops (a rank that stopped early would leave the others waiting).
struct Conformance {
  Communicator& c;
  std::vector<std::string> errors;
  int salt = 0;

  void fail(const std::string& what) { errors.push_back(what); }

  std::vector<std::size_t> sizes(DType dt) const {
    return {0, 1, 1023, (2u << 20) / cohort::dtype_size(dt) + 3};
  }

  void allreduce(DType dt, std::size_t count, ReduceOp op, bool in_place) {
    const int n = c.size(), r = c.rank();
    const std::size_t es = cohort::dtype_size(dt);
    ++salt;
    auto in = make_input(dt, r, count, salt);
    const auto original = in;
    std::vector<std::uint8_t> out(count * es + 1, 0xAB);
    if (in_place) {
      c.allreduce(in.data(), in.data(), count, dt, op, kT)->wait();
    } else {
      c.allreduce(count ? in.data() : nullptr, count ? out.data() : nullptr, count, dt, op, kT)
          ->wait();
      if (in != original) fail("allreduce changed its send buffer");
    }
    const std::string e =
        check_reduced(dt, op, n, in_place ? in.data() : out.data(), count, 0, salt);
    if (!e.empty())
      fail("allreduce " + std::to_string(count) + (in_place ? " in place: " : ": ") + e);
  }

  void broadcast(DType dt, std::size_t count, int root) {
    const std::size_t es = cohort::dtype_size(dt);
    ++salt;
    const auto want = make_input(dt, root, count, salt);
    auto buf = c.rank() == root ? want : std::vector<std::uint8_t>(count * es + 1, 0xCD);
    c.broadcast(buf.data(), count, dt, root, kT)->wait();
    if (std::memcmp(buf.data(), want.data(), count * es) != 0)
      fail("broadcast " + std::string(cohort::dtype_name(dt)) + " x " + std::to_string(count) +
           " from root " + std::to_string(root) + ": wrong data");
  }

  void allgather(DType dt, std::size_t count, bool in_place) {
    const int n = c.size(), r = c.rank();
    const std::size_t es = cohort::dtype_size(dt), block = count * es;
    ++salt;
    const auto mine = make_input(dt, r, count, salt);
    std::vector<std::uint8_t> out(block * static_cast<std::size_t>(n) + 1, 0xEF);
    if (in_place) {
      std::memcpy(out.data() + static_cast<std::size_t>(r) * block, mine.data(), block);
      c.allgather(out.data() + static_cast<std::size_t>(r) * block, out.data(), count, dt, kT)
          ->wait();
    } else {
      c.allgather(mine.data(), out.data(), count, dt, kT)->wait();
    }
    for (int b = 0; b < n; ++b) {
      const auto want = make_input(dt, b, count, salt);
      if (std::memcmp(out.data() + static_cast<std::size_t>(b) * block, want.data(), block) != 0)
        fail("allgather " + std::string(cohort::dtype_name(dt)) + " x " + std::to_string(count) +
             (in_place ? " in place" : "") + ": block " + std::to_string(b) + " wrong");
    }
  }

  void reduce_scatter(DType dt, std::size_t count, ReduceOp op, bool in_place) {
    const int n = c.size(), r = c.rank();
    const std::size_t es = cohort::dtype_size(dt);
    ++salt;
    auto in = make_input(dt, r, count * static_cast<std::size_t>(n), salt);
    std::vector<std::uint8_t> out(count * es + 1, 0x5A);
    std::uint8_t* result = out.data();
    if (in_place) {
      result = in.data() + static_cast<std::size_t>(r) * count * es;
      c.reduce_scatter(in.data(), result, count, dt, op, kT)->wait();
    } else {
      c.reduce_scatter(in.data(), out.data(), count, dt, op, kT)->wait();
    }
    const std::string e =
        check_reduced(dt, op, n, result, count, static_cast<std::size_t>(r) * count, salt);
    if (!e.empty())
      fail("reduce_scatter " + std::to_string(count) + (in_place ? " in place: " : ": ") + e);
  }

  // Every rank sends to its right and receives from its left, sends issued first everywhere (a
  // deadlock if sends blocked until matched), then the other way round with the recv first.
  void ring_exchange(DType dt, std::size_t count) {
    const int n = c.size(), r = c.rank();
    const std::size_t es = cohort::dtype_size(dt);
    ++salt;
    const int right = (r + 1) % n, left = (r + n - 1) % n, tag = salt % 1000;
    const auto mine = make_input(dt, r, count, salt);
    std::vector<std::uint8_t> got(count * es + 1, 0);
    auto s = c.send(mine.data(), count, dt, right, tag, kT);
    auto q = c.recv(got.data(), count, dt, left, tag, kT);
    q->wait();
    s->wait();
    if (std::memcmp(got.data(), make_input(dt, left, count, salt).data(), count * es) != 0)
      fail("send/recv " + std::string(cohort::dtype_name(dt)) + " x " + std::to_string(count) +
           ": wrong data");
    std::vector<std::uint8_t> back(count * es + 1, 0);
    auto q2 = c.recv(back.data(), count, dt, right, tag, kT);
    auto s2 = c.send(mine.data(), count, dt, left, tag, kT);
    s2->wait();
    q2->wait();
    if (std::memcmp(back.data(), make_input(dt, right, count, salt).data(), count * es) != 0)
      fail("recv/send " + std::string(cohort::dtype_name(dt)) + " x " + std::to_string(count) +
           ": wrong data");
  }

  void run() {
    for (DType dt : kAllDtypes) {
      for (std::size_t count : sizes(dt)) {
        for (ReduceOp op : kAllOps)
          for (bool in_place : {false, true}) allreduce(dt, count, op, in_place);
        broadcast(dt, count, 0);
        broadcast(dt, count, c.size() - 1);
        allgather(dt, count, false);
        allgather(dt, count, true);
        for (ReduceOp op : kAllOps) reduce_scatter(dt, count, op, op == ReduceOp::max);
        reduce_scatter(dt, count, ReduceOp::sum, true);
        ring_exchange(dt, count);
      }
      c.barrier(kT)->wait();
    }
    if (!errors.empty()) throw std::runtime_error(join(errors));
  }
};

void conformance(int n) {
  const auto failures = run_ranks(n, [](Communicator& c) { Conformance{c, {}, 0}.run(); });
  CHECK_MESSAGE(failures.empty(), join(failures));
}

}  // namespace

TEST_CASE("ucx: factory, capabilities, argument checks") {
  const auto f = cohort::comm::ucx::factory();
  CHECK(f.name == "ucx");
  std::string why;
  CHECK(f.available(group_info(0, 4), &why));
  cohort::comm::ProcessGroupInfo none = group_info(0, 1);
  none.world_size = 0;
  CHECK_FALSE(f.available(none, &why));
  CHECK(why.find("the group has 0") != std::string::npos);

  const auto failures = run_ranks(2, [](Communicator& c) {
    CHECK(c.backend() == "ucx");
    CHECK(c.size() == 2);
    const auto caps = c.capabilities();
    CHECK(caps.host_memory);
    CHECK_FALSE(caps.device_memory);
    CHECK(caps.dtypes.size() == 7);
    float x[4] = {};
    CHECK_THROWS_WITH_AS(c.broadcast(x, 4, DType::f32, 2), doctest::Contains("root 2"),
                         cohort::Error);
    CHECK_THROWS_WITH_AS(c.send(x, 4, DType::f32, 5), doctest::Contains("peer 5"), cohort::Error);
    CHECK_THROWS_WITH_AS(c.recv(x, 4, DType::f32, 0, 1 << 24), doctest::Contains("tag 16777216"),
                         cohort::Error);
    CHECK_THROWS_AS(c.allreduce(x, x + 1, 2, DType::f32, ReduceOp::sum), cohort::Error);  // overlap
    CHECK_THROWS_AS(c.allreduce(x, x, 1, DType::f32, ReduceOp::sum, Timeout{-5}), cohort::Error);
    c.barrier()->wait();  // still usable: argument errors do not fail the communicator
  });
  CHECK_MESSAGE(failures.empty(), join(failures));
}

TEST_CASE("ucx: every op, dtype and size, 1 rank") { conformance(1); }
TEST_CASE("ucx: every op, dtype and size, 2 ranks") { conformance(2); }
TEST_CASE("ucx: every op, dtype and size, 3 ranks") { conformance(3); }
TEST_CASE("ucx: every op, dtype and size, 4 ranks") { conformance(4); }

// Every allreduce algorithm at sizes around the crossover and around the pipelining chunk, so
// none is only tested on one side of its threshold. Rabenseifner also on 4 ranks (two halving
// rounds) and 5 (a folded pair around them), and on counts smaller than the ranks (empty halves).
TEST_CASE("ucx: ring, recursive doubling and Rabenseifner agree at every size") {
  for (const char* algo : {"ring", "rd", "rab"}) {
    setenv("COHORT_UCX_ALLREDUCE", algo, 1);
    setenv("COHORT_UCX_CHUNK_BYTES", "4096", 1);  // many chunks per segment
    const std::vector<int> sizes =
        std::string(algo) == "rab" ? std::vector<int>{2, 3, 4, 5} : std::vector<int>{2, 3};
    for (int n : sizes) {
      const auto failures = run_ranks(n, [](Communicator& c) {
        Conformance t{c, {}, 0};
        for (std::size_t count :
             {std::size_t{1}, std::size_t{2}, std::size_t{3}, std::size_t{5}, std::size_t{1023},
              std::size_t{1024}, std::size_t{4097}, std::size_t{100003}})
          for (ReduceOp op : kAllOps)
            for (bool in_place : {false, true}) t.allreduce(DType::f32, count, op, in_place);
        t.allreduce(DType::bf16, 100003, ReduceOp::sum, false);
        t.allreduce(DType::i64, 100003, ReduceOp::avg, true);
        t.reduce_scatter(DType::i32, 5000, ReduceOp::sum, false);
        t.allgather(DType::u8, 10001, false);
        t.broadcast(DType::f64, 70000, 1);  // chain, many chunks
        if (!t.errors.empty()) throw std::runtime_error(join(t.errors));
      });
      CHECK_MESSAGE(failures.empty(), algo << ", " << n << " ranks:\n" << join(failures));
    }
    unsetenv("COHORT_UCX_ALLREDUCE");
    unsetenv("COHORT_UCX_CHUNK_BYTES");
  }
}

// Many ops in flight at once: 150 collectives and point-to-point messages issued back to back
// without waiting, then waited on in reverse order. Tags carry the op's sequence number, so
// messages of different ops never match each other even when one rank runs ahead.
// (Collectives run one after another in issue order; point-to-point ops complete on their own.)
TEST_CASE("ucx: many back-to-back asynchronous ops complete with the right data") {
  const auto failures = run_ranks(3, [](Communicator& c) {
    const int n = c.size(), r = c.rank();
    constexpr int kOps = 150;
    std::vector<std::vector<std::uint8_t>> bufs(kOps);
    std::vector<std::size_t> counts(kOps);
    std::vector<WorkHandle> work;
    for (int i = 0; i < kOps; ++i) {
      const std::size_t count =
          i % 25 == 0 ? (1u << 18) + 1 : static_cast<std::size_t>(1 + (i * 37) % 3000);
      counts[static_cast<std::size_t>(i)] = count;
      auto& b = bufs[static_cast<std::size_t>(i)];
      if (i % 5 == 4) {  // a message to the right, from the left
        b = make_input(DType::f32, r, count, 1000 + i);
        work.push_back(c.send(b.data(), count, DType::f32, (r + 1) % n, i % 7));
        bufs.emplace_back(count * 4 + 1, 0);
        work.push_back(c.recv(bufs.back().data(), count, DType::f32, (r + n - 1) % n, i % 7));
      } else {
        b = make_input(DType::f32, r, count, 1000 + i);
        work.push_back(c.allreduce(b.data(), b.data(), count, DType::f32, ReduceOp::sum));
      }
    }
    for (auto it = work.rbegin(); it != work.rend(); ++it) (*it)->wait();
    for (auto& w : work) CHECK(w->test());
    std::vector<std::string> errors;
    std::size_t extra = kOps;
    for (int i = 0; i < kOps; ++i) {
      const std::size_t count = counts[static_cast<std::size_t>(i)];
      if (i % 5 == 4) {
        const auto want = make_input(DType::f32, (r + n - 1) % n, count, 1000 + i);
        if (std::memcmp(bufs[extra++].data(), want.data(), count * 4) != 0)
          errors.push_back("message " + std::to_string(i) + " wrong");
      } else {
        const auto e = check_reduced(DType::f32, ReduceOp::sum, n,
                                     bufs[static_cast<std::size_t>(i)].data(), count, 0, 1000 + i);
        if (!e.empty()) errors.push_back("op " + std::to_string(i) + ": " + e);
      }
    }
    if (!errors.empty()) throw std::runtime_error(join(errors));
  });
  CHECK_MESSAGE(failures.empty(), join(failures));
}

// A waiting caller drives the engine itself (progress.cpp, drive_until): several threads of one
// rank waiting at once, on ops in any order, take turns and all get their data; ops nobody waits
// for are still finished by the progress thread (test() alone sees them complete).
TEST_CASE("ucx: ops waited for from several threads at once, and ops never waited for") {
  const auto failures = run_ranks(2, [](Communicator& c) {
    const int n = c.size(), r = c.rank();
    constexpr int kOps = 60, kThreads = 3;
    std::vector<std::vector<std::uint8_t>> bufs(kOps);
    std::vector<WorkHandle> work;
    for (int i = 0; i < kOps; ++i) {
      const std::size_t count = static_cast<std::size_t>(1 + (i * 613) % 20000);
      bufs[static_cast<std::size_t>(i)] = make_input(DType::f32, r, count, 2000 + i);
      auto& b = bufs[static_cast<std::size_t>(i)];
      work.push_back(c.allreduce(b.data(), b.data(), count, DType::f32, ReduceOp::sum));
    }
    // Thread t waits for ops t, t + 3, ... from the last down; the main thread only polls.
    std::vector<std::thread> waiters;
    std::atomic<int> thrown{0};
    for (int t = 0; t < kThreads; ++t)
      waiters.emplace_back([&, t] {
        try {
          for (int i = kOps - 1 - t; i >= 0; i -= kThreads) work[static_cast<std::size_t>(i)]->wait();
        } catch (...) {
          ++thrown;
        }
      });
    for (auto& w : waiters) w.join();
    if (thrown != 0) throw std::runtime_error(std::to_string(thrown.load()) + " waits threw");
    for (int i = 0; i < kOps; ++i) {
      const std::size_t count = static_cast<std::size_t>(1 + (i * 613) % 20000);
      const auto e = check_reduced(DType::f32, ReduceOp::sum, n,
                                   bufs[static_cast<std::size_t>(i)].data(), count, 0, 2000 + i);
      if (!e.empty()) throw std::runtime_error("op " + std::to_string(i) + ": " + e);
    }
    // Never waited for: only the progress thread can finish these.
    std::vector<float> x(50000, 1.0f);
    auto w = c.allreduce(x.data(), x.data(), x.size(), DType::f32, ReduceOp::sum);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (!w->test() && std::chrono::steady_clock::now() < deadline) std::this_thread::yield();
    if (!w->test()) throw std::runtime_error("an op polled with test() alone did not complete in 30 s");
    if (x[0] != static_cast<float>(n) || x.back() != static_cast<float>(n))
      throw std::runtime_error("polled all-reduce: wrong sum " + std::to_string(x[0]));
  });
  CHECK_MESSAGE(failures.empty(), join(failures));
}

// Messages from one peer with one tag are received in the order sent, whatever their sizes
// (eager and rendezvous mixed), and different tags do not match each other.
TEST_CASE("ucx: point-to-point order per (peer, tag)") {
  const auto failures = run_ranks(2, [](Communicator& c) {
    constexpr int kMsgs = 40;
    std::vector<std::vector<std::int64_t>> bufs(kMsgs);
    std::vector<WorkHandle> work;
    auto len = [](int i) { return static_cast<std::size_t>(i % 3 == 0 ? 100000 + i : 1 + i); };
    if (c.rank() == 0) {
      for (int i = 0; i < kMsgs; ++i) {
        bufs[static_cast<std::size_t>(i)].assign(len(i), i);
        work.push_back(
            c.send(bufs[static_cast<std::size_t>(i)].data(), len(i), DType::i64, 1, i % 2));
      }
    } else {
      // Receive tag 1 first, then tag 0: each tag's messages still arrive in their own order.
      for (int pass : {1, 0})
        for (int i = pass; i < kMsgs; i += 2) {
          bufs[static_cast<std::size_t>(i)].assign(len(i), -1);
          work.push_back(
              c.recv(bufs[static_cast<std::size_t>(i)].data(), len(i), DType::i64, 0, i % 2));
        }
    }
    for (auto& w : work) w->wait();
    if (c.rank() == 1)
      for (int i = 0; i < kMsgs; ++i)
        for (std::int64_t v : bufs[static_cast<std::size_t>(i)])
          if (v != i)
            throw std::runtime_error("message " + std::to_string(i) + " got data of message " +
                                     std::to_string(v));
  });
  CHECK_MESSAGE(failures.empty(), join(failures));
}

// Sends are posted for tags 0, 1, 2 and the peer receives tag 2 first: each point-to-point op
// completes when its own message is through (waiting for them in issue order would deadlock:
// the tag-0 send, a rendezvous, needs the peer's tag-0 receive, posted only after tag 2's).
TEST_CASE("ucx: point-to-point ops complete independently of each other") {
  const auto failures = run_ranks(2, [](Communicator& c) {
    const int peer = 1 - c.rank();
    const std::size_t lens[3] = {70001, 5, 300000};
    std::vector<std::vector<std::int64_t>> out(3), in(3);
    std::vector<WorkHandle> sends;
    for (int t = 0; t < 3; ++t) {
      out[static_cast<std::size_t>(t)].assign(lens[t], c.rank() * 10 + t);
      in[static_cast<std::size_t>(t)].assign(lens[t], -1);
      sends.push_back(
          c.send(out[static_cast<std::size_t>(t)].data(), lens[t], DType::i64, peer, t, kT));
    }
    for (int t : {2, 0, 1})
      c.recv(in[static_cast<std::size_t>(t)].data(), lens[t], DType::i64, peer, t, kT)->wait();
    for (auto& w : sends) w->wait();
    for (int t = 0; t < 3; ++t)
      if (in[static_cast<std::size_t>(t)] != std::vector<std::int64_t>(lens[t], peer * 10 + t))
        throw std::runtime_error("tag " + std::to_string(t) + ": wrong data");
  });
  CHECK_MESSAGE(failures.empty(), join(failures));
}

// A forced algorithm that does not exist is named with the ones that do, before anything
// connects (a one-rank group: no peer to wait for).
TEST_CASE("ucx: an unknown COHORT_UCX_ALLREDUCE is refused, naming the choices") {
  setenv("COHORT_UCX_ALLREDUCE", "fastest", 1);
  CHECK_THROWS_WITH_AS(cohort::comm::ucx::factory().create(group_info(0, 1), memory_store()),
                       doctest::Contains("COHORT_UCX_ALLREDUCE='fastest' is not one of auto, "
                                         "ring, rd, rab"),
                       cohort::Error);
  unsetenv("COHORT_UCX_ALLREDUCE");
}

// A rank that never creates its communicator: the others' create() fails after the default
// timeout, naming the store key of the missing rank's address.
TEST_CASE("ucx: create() names the rank whose address never appeared") {
  setenv("COHORT_COMM_TIMEOUT_MS", "300", 1);
  auto store = memory_store();
  std::string message;
  try {
    cohort::comm::ucx::factory().create(group_info(0, 2), store);
  } catch (const cohort::Error& e) {
    message = e.what();
  }
  unsetenv("COHORT_COMM_TIMEOUT_MS");
  INFO(message);
  CHECK(message.find("ucx/1/addr/1") != std::string::npos);
  CHECK(message.find("300 ms") != std::string::npos);
}

// One rank never calls the allreduce: the others time out, and their error names the op, the
// timeout and the rank that did not arrive; the communicator is then failed for good.
TEST_CASE("ucx: a timeout names the op, the timeout and the rank that did not arrive") {
  std::atomic<int> reported{0};
  std::vector<std::string> messages(3);
  const auto failures = run_ranks(3, [&](Communicator& c) {
    const int r = c.rank();
    std::vector<float> x(1000, 1.0f);
    c.barrier()->wait();
    if (r == 1) {  // stays away, but keeps its communicator (and progress thread) alive
      while (reported.load() < 2) std::this_thread::sleep_for(std::chrono::milliseconds(5));
      // The others told this rank that they failed, so its next op fails (at the call, or at
      // once in wait() if the news is still on its way) rather than waiting out its timeout.
      const auto t0 = std::chrono::steady_clock::now();
      CHECK_THROWS_WITH_AS(c.barrier(Timeout{10000})->wait(),
                           doctest::Contains("communicator failed: allreduce #2"), cohort::Error);
      CHECK(std::chrono::steady_clock::now() - t0 < std::chrono::seconds(5));
      return;
    }
    auto w = c.allreduce(x.data(), x.data(), x.size(), DType::f32, ReduceOp::sum, Timeout{300});
    try {
      w->wait();
      messages[static_cast<std::size_t>(r)] = "no error";
    } catch (const cohort::Error& e) {
      messages[static_cast<std::size_t>(r)] = e.what();
      CHECK(e.backend() == "ucx");
      CHECK(e.rank() == r);
    }
    CHECK_THROWS_WITH_AS(c.barrier(), doctest::Contains("unusable after an earlier failure"),
                         cohort::Error);
    ++reported;
  });
  CHECK_MESSAGE(failures.empty(), join(failures));
  for (int r : {0, 2}) {
    const std::string& m = messages[static_cast<std::size_t>(r)];
    INFO("rank ", r, ": ", m);
    CHECK(m.find("allreduce #2") != std::string::npos);  // the barrier was #1
    CHECK(m.find("timed out after 300 ms") != std::string::npos);
    CHECK(m.find("did not arrive: rank 1") != std::string::npos);
  }
}

// Ranks that issue different collectives as the same op number: with the fingerprint check (the
// default) both fail at once naming both ops; without it (COHORT_COLLECTIVE_CHECKS=0) they do
// not take each other's messages (the tag carries the op kind and shape) and the timeout report
// says who is in which op.
TEST_CASE("ucx: ranks that issue different collectives are told so") {
  for (const bool checks : {true, false}) {
    CAPTURE(checks);
    if (!checks) ::setenv("COHORT_COLLECTIVE_CHECKS", "0", 1);
    std::vector<std::string> messages(2);
    const auto t0 = std::chrono::steady_clock::now();
    const auto failures = run_ranks(2, [&](Communicator& c) {
      std::vector<float> x(256, 1.0f);
      const Timeout t{checks ? 20000 : 300};
      try {
        if (c.rank() == 0)
          c.allreduce(x.data(), x.data(), x.size(), DType::f32, ReduceOp::sum, t)->wait();
        else
          c.broadcast(x.data(), x.size(), DType::f32, 0, t)->wait();
      } catch (const cohort::Error& e) {
        messages[static_cast<std::size_t>(c.rank())] = e.what();
      }
    });
    ::unsetenv("COHORT_COLLECTIVE_CHECKS");
    CHECK_MESSAGE(failures.empty(), join(failures));
    const std::string all = messages[0] + "\n" + messages[1];
    INFO(all);
    if (checks) {
      CHECK(std::chrono::steady_clock::now() - t0 < std::chrono::seconds(5));
      for (const auto& m : messages)
        CHECK(m.find("collective mismatch: rank 0 issued allreduce #1 (256 x f32, sum) where "
                     "rank 1 issued broadcast #1 (256 x f32, root 0)") != std::string::npos);
      continue;
    }
    // Whichever rank timed out first reported; the other may have been aborted by that report.
    CHECK(all.find("issued a different collective as #1") != std::string::npos);
    CHECK((all.find("rank 1: 1 collective(s) started, the last broadcast #1") !=
               std::string::npos ||
           all.find("rank 0: 1 collective(s) started, the last allreduce #1") !=
               std::string::npos));
  }
}

TEST_CASE("ucx: a recv timeout names the peer that did not send") {
  std::string message;
  std::atomic<bool> done{false};
  const auto failures = run_ranks(2, [&](Communicator& c) {
    if (c.rank() == 1) {
      while (!done.load()) std::this_thread::sleep_for(std::chrono::milliseconds(5));
      return;
    }
    std::int32_t v = 0;
    try {
      c.recv(&v, 1, DType::i32, 1, 7, Timeout{200})->wait();
    } catch (const cohort::Error& e) {
      message = e.what();
    }
    done = true;
  });
  CHECK_MESSAGE(failures.empty(), join(failures));
  INFO(message);
  CHECK(message.find("recv (1 x i32 from rank 1, tag 7) timed out after 200 ms") !=
        std::string::npos);
  CHECK(message.find("no message from rank 1 arrived") != std::string::npos);
  CHECK(message.find("rank 1: 0 collective(s) started") != std::string::npos);
}

// Ranks that disagree on the count get an error naming both counts, not wrong data.
TEST_CASE("ucx: mismatched counts are an error, not corruption") {
  std::vector<std::string> messages(2);
  const auto failures = run_ranks(2, [&](Communicator& c) {
    std::vector<float> x(64, 1.0f);
    const std::size_t count = c.rank() == 0 ? 16 : 32;
    try {
      c.allreduce(x.data(), x.data(), count, DType::f32, ReduceOp::sum, Timeout{2000})->wait();
    } catch (const cohort::Error& e) {
      messages[static_cast<std::size_t>(c.rank())] = e.what();
    }
  });
  CHECK_MESSAGE(failures.empty(), join(failures));
  for (const auto& m : messages) {
    INFO(m);
    CHECK(m.find("collective mismatch: rank 0 issued allreduce #1 (16 x f32, sum) where rank 1 "
                 "issued allreduce #1 (32 x f32, sum)") != std::string::npos);
  }
}

// Real processes: this binary re-executed as 3 ranks over a directory store.
TEST_CASE("ucx: 3 processes") {
  char dir[] = "/tmp/cohort-ucx-test-XXXXXX";
  REQUIRE(mkdtemp(dir) != nullptr);
  const auto codes = run_processes(3, {"--ucx-worker", dir, "3"}, std::chrono::seconds(60));
  for (std::size_t r = 0; r < codes.size(); ++r)
    CHECK_MESSAGE(codes[r] == 0, "rank ", r, " exit code ", codes[r]);
  std::system((std::string("rm -rf ") + dir).c_str());
}

// The body of one rank process of the test above: a subset of the conformance run (all ops on
// f32 and i64) across process boundaries.
int ucx_worker_main(const std::string& dir, int n, int rank) {
  try {
    auto comm = cohort::comm::ucx::factory().create(group_info(rank, n), directory_store(dir));
    Conformance t{*comm, {}, 0};
    for (DType dt : {DType::f32, DType::i64})
      for (std::size_t count : t.sizes(dt)) {
        for (ReduceOp op : kAllOps) t.allreduce(dt, count, op, count % 2 == 1);
        t.broadcast(dt, count, 1);
        t.allgather(dt, count, false);
        t.reduce_scatter(dt, count, ReduceOp::sum, false);
        t.ring_exchange(dt, count);
      }
    comm->barrier(kT)->wait();
    if (!t.errors.empty()) {
      std::cerr << "rank " << rank << ":\n" << join(t.errors);
      return 1;
    }
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "rank " << rank << ": " << e.what() << "\n";
    return 2;
  }
}
