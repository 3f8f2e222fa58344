// The self backend (world size 1): copies only where send and recv differ, completes at issue,
// and send/recv to itself through its mailbox, with timeouts.
#include <doctest/doctest.h>

#include <chrono>
#include <numeric>
#include <vector>

#include "cohort/collectives/registry.hpp"
#include "cohort/core/error.hpp"
#include "env_guard.hpp"

using namespace cohort;
using namespace cohort::comm;
using namespace std::chrono_literals;

namespace {
std::unique_ptr<Communicator> make_self() {
  ProcessGroupInfo g;
  return create_communicator("self", g, nullptr);
}
}  // namespace

TEST_SUITE("self") {
  TEST_CASE("collectives copy out of place and leave in-place buffers alone") {
    auto c = make_self();
    CHECK(c->rank() == 0);
    CHECK(c->size() == 1);
    CHECK(c->capabilities().host_memory);
    CHECK_FALSE(c->capabilities().device_memory);
    CHECK(c->capabilities().dtypes.size() == 7);
    std::vector<float> in(7), out(7, -1.f);
    std::iota(in.begin(), in.end(), 1.f);
    auto w = c->allreduce(in.data(), out.data(), 7, DType::f32, ReduceOp::avg);
    CHECK(w->test());  // complete at issue
    w->wait();
    CHECK(out == in);
    c->allreduce(in.data(), in.data(), 7, DType::f32, ReduceOp::sum)->wait();
    CHECK(in[6] == 7.f);
    std::vector<std::int64_t> a{1, 2, 3}, b(3);
    c->allgather(a.data(), b.data(), 3, DType::i64)->wait();
    CHECK(b == a);
    std::vector<std::int64_t> r(3);
    c->reduce_scatter(a.data(), r.data(), 3, DType::i64, ReduceOp::max)->wait();
    CHECK(r == a);
    c->broadcast(a.data(), 3, DType::i64, 0)->wait();
    c->barrier()->wait();
    c->allreduce(nullptr, nullptr, 0, DType::f32, ReduceOp::sum)->wait();
  }

  TEST_CASE("bad arguments are errors") {
    auto c = make_self();
    std::vector<float> x(4);
    CHECK_THROWS_WITH_AS(c->broadcast(x.data(), 4, DType::f32, 1),
                         doctest::Contains("root 1 is not a rank of this group of 1"), cohort::Error);
    CHECK_THROWS_WITH_AS(c->send(x.data(), 4, DType::f32, 2),
                         doctest::Contains("peer 2 is not a rank"), cohort::Error);
    CHECK_THROWS_WITH_AS(c->allreduce(x.data(), x.data() + 1, 3, DType::f32, ReduceOp::sum),
                         doctest::Contains("overlap"), cohort::Error);
    CHECK_THROWS_WITH_AS(c->allreduce(nullptr, x.data(), 3, DType::f32, ReduceOp::sum),
                         doctest::Contains("null buffer"), cohort::Error);
  }

  TEST_CASE("send and recv to itself, in order per tag") {
    auto c = make_self();
    std::vector<int> got1(3), got2(2);
    auto r1 = c->recv(got1.data(), 3, DType::i32, 0, /*tag=*/1);
    CHECK_FALSE(r1->test());  // nothing sent yet
    std::vector<int> m2{8, 9}, m1{1, 2, 3};
    c->send(m2.data(), 2, DType::i32, 0, /*tag=*/2)->wait();
    CHECK_FALSE(r1->test());  // tag 2 does not match
    c->send(m1.data(), 3, DType::i32, 0, /*tag=*/1)->wait();
    m1[0] = -5;               // the send completed: its buffer is free again
    r1->wait();
    CHECK(got1 == std::vector<int>{1, 2, 3});
    c->recv(got2.data(), 2, DType::i32, 0, 2)->wait();
    CHECK(got2 == std::vector<int>{8, 9});
  }

  TEST_CASE("a recv nobody sends to times out, and the communicator is then unusable") {
    auto c = make_self();
    int x = 0;
    auto r = c->recv(&x, 1, DType::i32, 0, 5, 100ms);
    const auto t0 = std::chrono::steady_clock::now();
    CHECK_THROWS_WITH_AS(r->wait(),
                         doctest::Contains("recv (from rank 0, tag 5, 4 bytes) timed out after 100 ms"),
                         cohort::Error);
    CHECK(std::chrono::steady_clock::now() - t0 < 2s);
    CHECK_THROWS_WITH_AS(c->barrier(), doctest::Contains("unusable after an earlier failure"),
                         cohort::Error);
  }

  TEST_CASE("COHORT_COMM_TIMEOUT_MS must be a positive number") {
    test::EnvGuard g({{"COHORT_COMM_TIMEOUT_MS", "soon"}});
    ProcessGroupInfo info;
    CHECK_THROWS_WITH_AS(create_communicator("self", info, nullptr),
                         doctest::Contains("COHORT_COMM_TIMEOUT_MS='soon'"), cohort::Error);
  }
}
