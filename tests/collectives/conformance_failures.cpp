// Failures, on every backend (its own ctest entries, 2 and 3 ranks; each case uses a communicator
// of its own since a failure leaves a communicator unusable):
//  - a rank that never arrives is named in the others' errors, which name the op and the timeout;
//  - a rank that dies makes the others fail within 5 s, naming its pid (shm: the process is
//    gone; ucx: it stops answering keep-alives);
//  - ranks that issue different collectives (count, dtype, reduction, kind, root) all fail
//    within a second with an error naming both sides, instead of "completing" with wrong sums.
#include <doctest/doctest.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <functional>
#include <thread>
#include <vector>

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

  // Every rank but the last issues `common`, the last issues `odd` (both on a fresh
  // communicator, whose first collective, a barrier, is #1). Every rank must fail, within a
  // second (the communicator timeout is 60 s), with the mismatch named from both sides.
  void expect_mismatch(const std::string& name,
                       const std::function<WorkHandle(Communicator&, std::vector<double>&)>& common,
                       const std::function<WorkHandle(Communicator&, std::vector<double>&)>& odd,
                       const std::string& common_text, const std::string& odd_text) {
    auto c = conformance::make_communicator("mismatch-" + name);
    c->barrier()->wait();
    const bool is_odd = c->rank() == c->size() - 1;
    std::vector<double> buf(4 << 20, 1.0);  // room for the largest op below, any dtype
    const auto t0 = Clock::now();
    std::string msg;
    try {
      (is_odd ? odd : common)(*c, buf)->wait();
    } catch (const cohort::Error& e) {
      msg = e.what();
    }
    // The ucx backend compares each rank with the previous one; a rank whose own part completed
    // correctly (a broadcast receiver with the right root) learns of the mismatch from the rank
    // that found it, and reports it at its next call.
    if (msg.empty() && conformance::backend == "ucx") {
      try {
        c->barrier(2000ms)->wait();
      } catch (const cohort::Error& e) {
        msg = e.what();
      }
    }
    const auto took = Clock::now() - t0;
    CAPTURE(name);
    CAPTURE(msg);
    CHECK(msg.find("collective mismatch") != std::string::npos);
    CHECK(msg.find(common_text) != std::string::npos);
    CHECK(msg.find(odd_text) != std::string::npos);
    CHECK(took < 1500ms);
    // The communicator is unusable afterwards, on every rank.
    CHECK_THROWS_AS(c->barrier(2000ms)->wait(), cohort::Error);
  }

  WorkHandle allreduce(Communicator& c, std::vector<double>& b, std::size_t n, DType t,
                       ReduceOp op = ReduceOp::sum) {
    return c.allreduce(b.data(), b.data(), n, t, op);
  }

  TEST_CASE("ranks that issue different collectives all fail, naming both sides") {
    using B = std::vector<double>;
    expect_mismatch(
        "count", [](Communicator& c, B& b) { return allreduce(c, b, 1000, DType::f32); },
        [](Communicator& c, B& b) { return allreduce(c, b, 999, DType::f32); },
        "allreduce #2 (1000 x f32, sum)", "allreduce #2 (999 x f32, sum)");
    // Large enough for the pipelined algorithms (several steps, different step counts).
    expect_mismatch(
        "large-count", [](Communicator& c, B& b) { return allreduce(c, b, 4 << 20, DType::f32); },
        [](Communicator& c, B& b) { return allreduce(c, b, 3 << 20, DType::f32); },
        "allreduce #2 (4194304 x f32, sum)", "allreduce #2 (3145728 x f32, sum)");
    // One side small (ucx at 2 ranks: its data rides in the fingerprint message), one large.
    expect_mismatch(
        "small-large", [](Communicator& c, B& b) { return allreduce(c, b, 8, DType::f32); },
        [](Communicator& c, B& b) { return allreduce(c, b, 1 << 20, DType::f32); },
        "allreduce #2 (8 x f32, sum)", "allreduce #2 (1048576 x f32, sum)");
    // Both small enough for shm's inline lines (24 bytes; fingerprints read from the same line).
    expect_mismatch(
        "inline-count", [](Communicator& c, B& b) { return allreduce(c, b, 4, DType::f32); },
        [](Communicator& c, B& b) { return allreduce(c, b, 5, DType::f32); },
        "allreduce #2 (4 x f32, sum)", "allreduce #2 (5 x f32, sum)");
    expect_mismatch(
        "inline-dtype", [](Communicator& c, B& b) { return allreduce(c, b, 2, DType::f32); },
        [](Communicator& c, B& b) { return allreduce(c, b, 2, DType::f64); },
        "allreduce #2 (2 x f32, sum)", "allreduce #2 (2 x f64, sum)");
    expect_mismatch(
        "dtype", [](Communicator& c, B& b) { return allreduce(c, b, 1000, DType::f32); },
        [](Communicator& c, B& b) { return allreduce(c, b, 1000, DType::f64); },
        "allreduce #2 (1000 x f32, sum)", "allreduce #2 (1000 x f64, sum)");
    expect_mismatch(
        "op", [](Communicator& c, B& b) { return allreduce(c, b, 8, DType::f32); },
        [](Communicator& c, B& b) { return allreduce(c, b, 8, DType::f32, ReduceOp::max); },
        "allreduce #2 (8 x f32, sum)", "allreduce #2 (8 x f32, max)");
    expect_mismatch(
        "kind",
        [](Communicator& c, B& b) { return c.broadcast(b.data(), 1000, DType::f32, 0); },
        [](Communicator& c, B& b) { return allreduce(c, b, 1000, DType::f32); },
        "broadcast #2 (1000 x f32, root 0)", "allreduce #2 (1000 x f32, sum)");
    expect_mismatch(
        "root", [](Communicator& c, B& b) { return c.broadcast(b.data(), 64, DType::f32, 0); },
        [](Communicator& c, B& b) { return c.broadcast(b.data(), 64, DType::f32, 1); },
        "broadcast #2 (64 x f32, root 0)", "broadcast #2 (64 x f32, root 1)");
    // Differences a composing communicator's stages cannot see by their own descriptions (hier:
    // both sides' stages sum; a reduce_scatter runs as an all-reduce of the whole).
    expect_mismatch(
        "avg", [](Communicator& c, B& b) { return allreduce(c, b, 8, DType::f32); },
        [](Communicator& c, B& b) { return allreduce(c, b, 8, DType::f32, ReduceOp::avg); },
        "allreduce #2 (8 x f32, sum)", "allreduce #2 (8 x f32, avg)");
    expect_mismatch(
        "reduce_scatter-whole",
        [](Communicator& c, B& b) {
          return c.reduce_scatter(b.data(), b.data() + 64, 8, DType::f32, ReduceOp::sum);
        },
        [](Communicator& c, B& b) {
          return allreduce(c, b, 8 * static_cast<std::size_t>(c.size()), DType::f32);
        },
        "reduce_scatter #2 (8 x f32, sum)", "allreduce #2 (");
    expect_mismatch(
        "barrier", [](Communicator& c, B&) { return c.barrier(); },
        [](Communicator& c, B& b) { return allreduce(c, b, 0, DType::f32); },
        "barrier #2", "allreduce #2 (0 x f32, sum)");
  }

  // shm's alloc_buffer is collective (every rank maps every rank's buffer); elsewhere it is a
  // local allocation and there is nothing to wait for.
  TEST_CASE("alloc_buffer that a rank skips fails the others within their timeout, naming it") {
    if (conformance::backend != "shm") return;
    auto c = conformance::make_communicator("alloc-skipped");
    const int late = c->size() - 1;
    if (c->rank() == late) {
      std::this_thread::sleep_for(1500ms);
      // The others have failed the communicator: this rank learns it at its next call.
      CHECK_THROWS_AS(c->barrier(2000ms)->wait(), cohort::Error);
      return;
    }
    std::string msg;
    const auto t0 = Clock::now();
    try {
      c->alloc_buffer(4096, 500ms);
    } catch (const cohort::Error& e) {
      msg = e.what();
    }
    CAPTURE(msg);
    CHECK(Clock::now() - t0 < 1500ms);
    CHECK(msg.find("alloc_buffer #1") != std::string::npos);
    CHECK(msg.find("500 ms") != std::string::npos);
    CHECK(msg.find("rank " + std::to_string(late)) != std::string::npos);
    CHECK_THROWS_AS(c->barrier(2000ms)->wait(), cohort::Error);
  }

  // Counts that differ, both inputs in communicator buffers (shm reads the peers' inputs in
  // place): the mismatch is reported, not a read past a buffer or a wrong sum.
  TEST_CASE("a count mismatch between ranks reading each other's buffers is named") {
    if (conformance::backend != "shm") return;
    auto c = conformance::make_communicator("alloc-mismatch");
    const bool odd = c->rank() == c->size() - 1;
    const std::size_t n = odd ? (2u << 20) : (1u << 20);  // floats
    // Each buffer just holds its own rank's count (sizes may differ between ranks): the odd
    // rank's count runs past the others' buffers.
    auto buf = c->alloc_buffer(n * sizeof(float));
    c->barrier()->wait();
    float* x = static_cast<float*>(buf->data());
    std::string msg;
    const auto t0 = Clock::now();
    try {
      c->allreduce(x, x, n, DType::f32, ReduceOp::sum, 5000ms)->wait();
    } catch (const cohort::Error& e) {
      msg = e.what();
    }
    CAPTURE(msg);
    CHECK(Clock::now() - t0 < 1500ms);
    CHECK(msg.find("collective mismatch") != std::string::npos);
    CHECK(msg.find("allreduce #2 (1048576 x f32, sum)") != std::string::npos);
    CHECK(msg.find("allreduce #2 (2097152 x f32, sum)") != std::string::npos);
  }

  // A peer reduces from its buffer of an allocation this rank has freed: the data is gone here.
  TEST_CASE("an all-reduce from a buffer a peer has freed is an error that says so") {
    if (conformance::backend != "shm") return;
    auto c = conformance::make_communicator("alloc-freed");
    auto buf = c->alloc_buffer(1 << 20);
    std::vector<float> plain((1u << 20) / 4, 1.0f);
    const bool freer = c->rank() == c->size() - 1;
    if (freer) buf.reset();
    float* x = freer ? plain.data() : static_cast<float*>(buf->data());
    std::string msg;
    try {
      c->allreduce(x, x, plain.size(), DType::f32, ReduceOp::sum, 2000ms)->wait();
    } catch (const cohort::Error& e) {
      msg = e.what();
    }
    CAPTURE(msg);
    CHECK(msg.find("already freed") != std::string::npos);
    CHECK(msg.find("communicator buffer #1") != std::string::npos);
  }

  // Last: the dying rank is gone for every later case.
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
    // Within 5 s on every backend (the op's own timeout is 8 s, the communicator's 60 s), naming
    // the dead rank's pid: shm sees the process gone, ucx's keep-alive goes unanswered.
    CHECK(took < 5s);
    CHECK(msg.find("pid") != std::string::npos);
    if (conformance::backend == "shm") CHECK(msg.find("exited") != std::string::npos);
    if (conformance::backend == "ucx")  // the keep-alive, or a send that failed on the way
      CHECK((msg.find("stopped answering") != std::string::npos ||
             msg.find("has that rank exited?") != std::string::npos));
  }
}
