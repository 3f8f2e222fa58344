// Failures, on every backend (its own ctest entries, 2 and 3 ranks; each case uses a communicator
// of its own since a failure leaves a communicator unusable):
//  - a rank that never arrives is named in the others' errors, which name the op and the timeout;
//  - a rank that dies makes the others fail (the shm backend notices before the timeout).
#include <doctest/doctest.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <thread>

#include "cohort/core/error.hpp"
#include "conformance.hpp"

using namespace cohort;
using namespace cohort::comm;
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

TEST_SUITE("failures") {
  TEST_CASE("a rank that does not arrive is named, with the op and the timeout") {
    auto c = conformance::make_communicator("never-arrives");
    const int late = c->size() - 1;
    REQUIRE(late > 0);
    if (c->rank() == late) {
      // Skip the allreduce; afterwards the others have failed, so any op fails too.
      std::this_thread::sleep_for(1500ms);
      const auto t0 = Clock::now();
      CHECK_THROWS_AS(c->barrier(2000ms)->wait(), cohort::Error);
      CHECK(Clock::now() - t0 < 5s);  // bounded by its own timeout at worst
      return;
    }
    float x = 1;
    std::string msg;
    try {
      c->allreduce(&x, &x, 1, DType::f32, ReduceOp::sum, 500ms)->wait();
    } catch (const cohort::Error& e) {
      msg = e.what();
    }
    CAPTURE(msg);
    CHECK(msg.find("allreduce") != std::string::npos);
    CHECK(msg.find("500 ms") != std::string::npos);
    CHECK(msg.find("did not arrive") != std::string::npos);
    CHECK(msg.find("rank " + std::to_string(late)) != std::string::npos);
    // The communicator is now unusable: every later call throws.
    CHECK_THROWS_AS(c->barrier()->wait(), cohort::Error);
  }

  TEST_CASE("a rank that dies makes the others fail") {
    auto c = conformance::make_communicator("dies");
    const int dying = c->size() - 1;
    c->barrier()->wait();  // everybody is connected
    if (c->rank() == dying) {
      // Tell rank 0 it need not wait for this rank at the end, then vanish mid-job.
      conformance::store->add("finished", 1);
      std::fflush(nullptr);
      ::_exit(0);
    }
    std::vector<float> x(1000, 1.f);
    const auto t0 = Clock::now();
    std::string msg;
    try {
      c->allreduce(x.data(), x.data(), x.size(), DType::f32, ReduceOp::sum, 8000ms)->wait();
    } catch (const cohort::Error& e) {
      msg = e.what();
    }
    const auto took = Clock::now() - t0;
    CAPTURE(msg);
    CHECK(!msg.empty());
    CHECK(msg.find("rank " + std::to_string(dying)) != std::string::npos);
    if (conformance::backend == "shm") {
      CHECK(msg.find("exited") != std::string::npos);
      CHECK(took < 5s);
    }
  }
}
