// The shm backend with ranks as threads of one process over a memory store (as Gloo's tests do):
// quick to run and easy to debug. The conformance suite runs the same backend as real processes.
#include <doctest/doctest.h>

#include <chrono>
#include <functional>
#include <mutex>
#include <numeric>
#include <thread>
#include <vector>

#include "cohort/collectives/registry.hpp"
#include "cohort/core/error.hpp"
#include "detail/backoff.hpp"
#include "detail/env.hpp"
#include "env_guard.hpp"

using namespace cohort;
using namespace cohort::comm;
using namespace std::chrono_literals;

namespace {

// Runs body(comm) on `world` threads, one shm rank each; failures are collected under a mutex
// and reported from the main thread (doctest's CHECK is not thread-safe).
std::vector<std::string> run_ranks(int world,
                                   const std::function<void(Communicator&, std::vector<std::string>&)>& body) {
  auto store = make_memory_store();
  std::mutex mu;
  std::vector<std::string> errors;
  std::vector<std::thread> ts;
  for (int r = 0; r < world; ++r)
    ts.emplace_back([&, r] {
      std::vector<std::string> mine;
      try {
        ProcessGroupInfo g;
        g.rank = g.local_rank = r;
        g.world_size = g.local_world_size = world;
        g.job_id = "threads";
        auto c = create_communicator("shm", g, store);
        body(*c, mine);
      } catch (const std::exception& e) {
        mine.push_back("rank " + std::to_string(r) + ": " + e.what());
      }
      std::lock_guard<std::mutex> lock(mu);
      errors.insert(errors.end(), mine.begin(), mine.end());
    });
  for (auto& t : ts) t.join();
  return errors;
}

}  // namespace

TEST_SUITE("shm_threads") {
  TEST_CASE("allreduce across the one-step and pipelined algorithms, and p2p") {
    test::EnvGuard env;
    for (int world : {1, 2, 3}) {
      CAPTURE(world);
      const auto errors = run_ranks(world, [world](Communicator& c, std::vector<std::string>& err) {
        for (std::size_t n : {std::size_t{1}, std::size_t{1000}, std::size_t{4096},
                              std::size_t{300001}}) {
          std::vector<double> x(n);
          for (std::size_t i = 0; i < n; ++i) x[i] = static_cast<double>(c.rank() + 1) * i;
          c.allreduce(x.data(), x.data(), n, DType::f64, ReduceOp::sum)->wait();
          const double f = world * (world + 1) / 2.0;
          for (std::size_t i = 0; i < n; ++i)
            if (x[i] != f * i) {
              err.push_back("allreduce n=" + std::to_string(n) + " wrong at " + std::to_string(i));
              break;
            }
        }
        // Ring exchange with two tags received in the opposite order from the sends.
        const int to = (c.rank() + 1) % world, from = (c.rank() + world - 1) % world;
        std::vector<int> a(100000, c.rank()), b(7, 10 + c.rank()), ra(100000), rb(7);
        auto s1 = c.send(a.data(), a.size(), DType::i32, to, 1);
        auto s2 = c.send(b.data(), b.size(), DType::i32, to, 2);
        auto r2 = c.recv(rb.data(), rb.size(), DType::i32, from, 2);
        auto r1 = c.recv(ra.data(), ra.size(), DType::i32, from, 1);
        r2->wait();
        r1->wait();
        s1->wait();
        s2->wait();
        if (ra != std::vector<int>(100000, from) || rb != std::vector<int>(7, 10 + from))
          err.push_back("p2p payload wrong");
        c.barrier()->wait();
      });
      CHECK(errors.empty());
      for (const auto& e : errors) MESSAGE(e);
    }
  }

  TEST_CASE("a rank that does not arrive is named; its peers' communicators are then unusable") {
    test::EnvGuard env;
    std::mutex mu;
    std::vector<std::string> messages(3);
    run_ranks(3, [&](Communicator& c, std::vector<std::string>&) {
      float x = 1;
      if (c.rank() == 2) {
        std::this_thread::sleep_for(1500ms);  // never joins the allreduce below
        try {
          c.barrier(5000ms)->wait();  // the others have failed: told at once, no 5 s wait
        } catch (const cohort::Error& e) {
          std::lock_guard<std::mutex> lock(mu);
          messages[2] = e.what();
        }
        return;
      }
      try {
        c.allreduce(&x, &x, 1, DType::f32, ReduceOp::sum, 200ms)->wait();
      } catch (const cohort::Error& e) {
        std::lock_guard<std::mutex> lock(mu);
        messages[static_cast<std::size_t>(c.rank())] = e.what();
      }
      try {
        c.barrier();
      } catch (const cohort::Error& e) {
        std::lock_guard<std::mutex> lock(mu);
        messages[static_cast<std::size_t>(c.rank())] += std::string(" | ") + e.what();
      }
    });
    for (int r = 0; r < 2; ++r) {
      CAPTURE(messages[r]);
      // Either this rank timed out itself, or it learnt that the other one did.
      CHECK(messages[r].find("rank 2 did not arrive") != std::string::npos);
      CHECK(messages[r].find("timed out after 200 ms") != std::string::npos);
      CHECK(messages[r].find("unusable after an earlier failure") != std::string::npos);
    }
    CAPTURE(messages[2]);
    CHECK(messages[2].find("failed: shm allreduce #1") != std::string::npos);
  }
  TEST_CASE("COHORT_YIELD_WHEN_IDLE: 1 and 0 override the host's rank count; bad values named") {
    {
      test::EnvGuard env;
      const int cpus = comm::detail::usable_cpus();
      CHECK(comm::detail::yield_when_idle(cpus) == false);
      CHECK(comm::detail::yield_when_idle(cpus + 1) == true);
    }
    {
      test::EnvGuard env{{"COHORT_YIELD_WHEN_IDLE", "1"}};
      CHECK(comm::detail::yield_when_idle(1) == true);
    }
    {
      test::EnvGuard env{{"COHORT_YIELD_WHEN_IDLE", "0"}};
      CHECK(comm::detail::yield_when_idle(1 << 20) == false);
    }
    // Either way the waits still complete (2 ranks as threads: yielding, then spinning).
    for (const char* v : {"1", "0"}) {
      CAPTURE(v);
      test::EnvGuard env{{"COHORT_YIELD_WHEN_IDLE", v}};
      const auto errors = run_ranks(2, [](Communicator& c, std::vector<std::string>& err) {
        for (int i = 0; i < 200; ++i) {
          float x = static_cast<float>(c.rank() + i);
          c.allreduce(&x, &x, 1, DType::f32, ReduceOp::sum)->wait();
          if (x != static_cast<float>(1 + 2 * i)) err.push_back("allreduce " + std::to_string(i));
        }
      });
      CHECK(errors.empty());
      for (const auto& e : errors) MESSAGE(e);
    }
    test::EnvGuard env{{"COHORT_YIELD_WHEN_IDLE", "yes"}};
    const auto errors = run_ranks(1, [](Communicator&, std::vector<std::string>&) {});
    REQUIRE(errors.size() == 1);
    CHECK(errors[0].find("COHORT_YIELD_WHEN_IDLE='yes' must be 1") != std::string::npos);
  }
}
