// The conformance suite: every op and dtype on the backend under test, against references
// computed independently on every rank from the same deterministic inputs. Integers compare
// exactly (with the documented wrap-around), floats against a double-precision reference with a
// bound on the rounding error; reductions must also give bit-identical results on every rank.
// Sizes: 0, 1, odd ones on both sides of the small-message path, a multi-step odd one, and 64 MiB.
#include <doctest/doctest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <thread>
#include <vector>

#include <unistd.h>

#include "cohort/core/dtype.hpp"
#include "cohort/core/error.hpp"
#include "conformance.hpp"
#include "conformance_values.hpp"

using namespace cohort;
using namespace cohort::comm;
using namespace std::chrono_literals;
using namespace conformance::values;
Communicator* cm() { return conformance::communicator; }

namespace {

int me() { return cm()->rank(); }
int world() { return cm()->size(); }

// True when every rank passes the same value.
bool same_everywhere(std::uint64_t v) {
  std::vector<std::uint64_t> all(static_cast<std::size_t>(world()));
  cm()->allgather(&v, all.data(), 1, DType::i64)->wait();
  for (auto x : all)
    if (x != v) return false;
  return true;
}

// All-reduces n elements at `in` (filled here) into `out` (== in: in place) and checks every
// result against the reference, the input untouched (out of place), and the same bits everywhere.
void check_allreduce_at(void* in, void* out, DType dt, ReduceOp op, std::size_t n,
                        std::uint64_t seed) {
  CAPTURE(what(dt, n, in == out ? " in place" : " out of place"));
  CAPTURE(reduce_op_name(op));
  fill(in, dt, me(), n, seed);
  const std::uint64_t before = digest(in, n * dtype_size(dt));
  cm()->allreduce(in, out, n, dt, op)->wait();
  std::size_t bad = 0, first_bad = n;
  for (std::size_t i = 0; i < n; ++i)
    if (!reduction_ok(dt, op, world(), i, seed, get(out, dt, i))) {
      if (!bad) first_bad = i;
      ++bad;
    }
  CAPTURE(first_bad);
  CHECK(bad == 0);
  if (in != out) CHECK(digest(in, n * dtype_size(dt)) == before);
  CHECK(same_everywhere(digest(out, n * dtype_size(dt))));
}

void check_allreduce(DType dt, ReduceOp op, std::size_t n, bool in_place, std::uint64_t seed) {
  auto in = buffer(dt, n), out = buffer(dt, n);
  check_allreduce_at(in.data(), in_place ? in.data() : out.data(), dt, op, n, seed);
}

}  // namespace

// Shared by the host and device suites (conformance_device.cpp): a barrier holds no data.
void conformance::check_barrier_waits_for_last_rank() {
  cm()->barrier()->wait();
  const bool late = me() == world() - 1;
  if (late) std::this_thread::sleep_for(300ms);
  const auto t0 = std::chrono::steady_clock::now();
  cm()->barrier()->wait();
  const auto waited = std::chrono::steady_clock::now() - t0;
  if (!late) CHECK(waited >= 100ms);  // (margin for a loaded machine)
}

TEST_SUITE("conformance") {
  // shm maps every rank's buffer into every rank and reduces from the peers' inputs in place from
  // 512 KiB up (docs/COLLECTIVES.md); the other backends give plain memory. Either way the
  // results must be the references, with buffers at different offsets on different ranks, in
  // place and out of place, and with ranks that mix such memory with ordinary memory.
  TEST_CASE("alloc_buffer: zeroed, aligned memory that every all-reduce takes, mixed freely") {
    const std::size_t bytes = (3u << 20) + 12;
    auto a = cm()->alloc_buffer(bytes);
    auto b = cm()->alloc_buffer(bytes);
    REQUIRE(a);
    REQUIRE(b);
    CHECK(a->bytes() == bytes);
    CHECK(reinterpret_cast<std::uintptr_t>(a->data()) % 64 == 0);
    // Page-aligned, and small buffers on pages of their own: a device page-locks each one
    // separately (HostStage), and the driver locks whole pages (review finding G12).
    const auto page = static_cast<std::uintptr_t>(sysconf(_SC_PAGESIZE));
    CHECK(reinterpret_cast<std::uintptr_t>(a->data()) % page == 0);
    {
      auto s1 = cm()->alloc_buffer(100);
      auto s2 = cm()->alloc_buffer(100);
      const auto p1 = reinterpret_cast<std::uintptr_t>(s1->data());
      const auto p2 = reinterpret_cast<std::uintptr_t>(s2->data());
      CHECK(p1 % page == 0);
      CHECK(p2 % page == 0);
      CHECK(p1 / page != p2 / page);
    }
    const auto* z = static_cast<const unsigned char*>(a->data());
    CHECK(std::all_of(z, z + bytes, [](unsigned char c) { return c == 0; }));
    CHECK(a->data() != b->data());

    std::uint64_t seed = 5000;
    for (DType dt : {DType::f32, DType::f64, DType::bf16, DType::i32}) {
      const std::size_t esz = dtype_size(dt);
      const std::size_t n = (1u << 20) / esz + 7;  // above shm's 512 KiB threshold, odd
      // A different offset on every rank: each rank announces its own.
      char* in = static_cast<char*>(a->data()) + 64 * static_cast<std::size_t>(me());
      char* out = static_cast<char*>(b->data()) + 128 * static_cast<std::size_t>(me() % 2);
      for (ReduceOp op : {ReduceOp::sum, ReduceOp::avg, ReduceOp::max}) {
        check_allreduce_at(in, out, dt, op, n, ++seed);  // both in communicator buffers
        check_allreduce_at(in, in, dt, op, n, ++seed);   // in place
      }
      // Rank 0 in a communicator buffer, the others in ordinary memory, and the other way round.
      auto plain = buffer(dt, n);
      auto plain_out = buffer(dt, n);
      void* p = plain.data();
      check_allreduce_at(me() == 0 ? static_cast<void*>(in) : p, plain_out.data(), dt,
                         ReduceOp::sum, n, ++seed);
      void* q = me() == 0 ? p : static_cast<void*>(in);
      check_allreduce_at(q, q, dt, ReduceOp::sum, n, ++seed);
    }
    // Small inputs (below the threshold) and a multi-step large one, in the buffer.
    check_allreduce_at(a->data(), b->data(), DType::f32, ReduceOp::sum, 1000, ++seed);
    check_allreduce_at(a->data(), a->data(), DType::f32, ReduceOp::avg, (3u << 20) / 4, ++seed);
  }

  TEST_CASE("alloc_buffer: zero bytes, and buffers freed in any order") {
    auto z = cm()->alloc_buffer(0);
    REQUIRE(z);
    CHECK(z->bytes() == 0);
    auto a = cm()->alloc_buffer(1 << 20);
    auto c = cm()->alloc_buffer(1 << 20);
    a.reset();  // freed first: c keeps working
    float* x = static_cast<float*>(c->data());
    const std::size_t n = (1u << 20) / 4;
    for (std::size_t i = 0; i < n; ++i) x[i] = static_cast<float>(me() + 1);
    cm()->allreduce(x, x, n, DType::f32, ReduceOp::sum)->wait();
    const float want = static_cast<float>(world() * (world() + 1) / 2);
    CHECK(std::all_of(x, x + n, [want](float v) { return v == want; }));
  }

  TEST_CASE("capabilities") {
    const Capabilities c = cm()->capabilities();
    CHECK(c.host_memory);
    CHECK(c.dtypes.size() == 7);
    CHECK(cm()->size() == conformance::info.world_size);
    CHECK(cm()->rank() == conformance::info.rank);
  }

  TEST_CASE("allreduce: every dtype, op and size, in place and out of place") {
    std::uint64_t seed = 1;
    for (DType dt : kTypes)
      for (ReduceOp op : kOps)
        for (std::size_t n : sizes(dt))
          for (bool in_place : {false, true}) check_allreduce(dt, op, n, in_place, ++seed);
  }

  TEST_CASE("allreduce: 64 MiB of f32, sum and avg, in place and out of place") {
    check_allreduce(DType::f32, ReduceOp::sum, kBig, false, 1001);
    check_allreduce(DType::f32, ReduceOp::avg, kBig + 3, true, 1002);
  }

  TEST_CASE("broadcast: every dtype, size and root") {
    std::uint64_t seed = 2000;
    for (DType dt : kTypes)
      for (std::size_t n : sizes(dt))
        for (int root = 0; root < world(); ++root) {
          CAPTURE(what(dt, n));
          CAPTURE(root);
          auto buf = buffer(dt, n);
          fill(buf.data(), dt, me(), n, ++seed);
          cm()->broadcast(buf.data(), n, dt, root)->wait();
          std::size_t bad = 0;
          for (std::size_t i = 0; i < n; ++i) bad += get(buf.data(), dt, i) != gen(dt, root, i, seed);
          CHECK(bad == 0);
        }
    auto big = buffer(DType::f32, kBig);
    fill(big.data(), DType::f32, me(), kBig, 2999);
    cm()->broadcast(big.data(), kBig, DType::f32, world() - 1)->wait();
    std::size_t bad = 0;
    for (std::size_t i = 0; i < kBig; ++i)
      bad += get(big.data(), DType::f32, i) != gen(DType::f32, world() - 1, i, 2999);
    CHECK(bad == 0);
  }

  TEST_CASE("allgather: every dtype and size, in place and out of place, and 64 MiB") {
    std::uint64_t seed = 3000;
    for (DType dt : kTypes) {
      auto cases = sizes(dt);
      if (dt == DType::f32) cases.push_back(kBig / static_cast<std::size_t>(world()));
      for (std::size_t n : cases)
        for (bool in_place : {false, true}) {
          CAPTURE(what(dt, n, in_place ? " in place" : " out of place"));
          ++seed;
          const std::size_t esz = dtype_size(dt);
          auto out = buffer(dt, n * static_cast<std::size_t>(world()));
          auto in = buffer(dt, n);
          void* send = in_place ? out.data() + static_cast<std::size_t>(me()) * n * esz : in.data();
          fill(send, dt, me(), n, seed);
          cm()->allgather(send, out.data(), n, dt)->wait();
          std::size_t bad = 0;
          for (int q = 0; q < world(); ++q)
            for (std::size_t i = 0; i < n; ++i)
              bad += get(out.data(), dt, static_cast<std::size_t>(q) * n + i) != gen(dt, q, i, seed);
          CHECK(bad == 0);
        }
    }
  }

  TEST_CASE("reduce_scatter: every dtype, op and size, in place and out of place, and 64 MiB") {
    std::uint64_t seed = 4000;
    for (DType dt : kTypes)
      for (ReduceOp op : kOps) {
        auto cases = sizes(dt);
        if (dt == DType::f32 && op == ReduceOp::sum) cases.push_back(kBig / static_cast<std::size_t>(world()));
        for (std::size_t n : cases)
          for (bool in_place : {false, true}) {
            CAPTURE(what(dt, n, in_place ? " in place" : " out of place"));
            CAPTURE(reduce_op_name(op));
            ++seed;
            const std::size_t total = n * static_cast<std::size_t>(world());
            auto in = buffer(dt, total), out = buffer(dt, n);
            fill(in.data(), dt, me(), total, seed);
            const std::size_t offset = static_cast<std::size_t>(me()) * n;
            void* recv = in_place ? in.data() + offset * dtype_size(dt) : out.data();
            cm()->reduce_scatter(in.data(), recv, n, dt, op)->wait();
            std::size_t bad = 0;
            for (std::size_t i = 0; i < n; ++i)
              bad += !reduction_ok(dt, op, world(), offset + i, seed, get(recv, dt, i));
            CHECK(bad == 0);
          }
      }
  }

  TEST_CASE("barrier: nobody leaves before the last rank arrives") {
    conformance::check_barrier_waits_for_last_rank();
  }

  TEST_CASE("send/recv: a ring, every dtype, small to multi-chunk messages") {
    std::uint64_t seed = 5000;
    const int to = (me() + 1) % world(), from = (me() + world() - 1) % world();
    for (DType dt : kTypes)
      for (std::size_t n : {std::size_t{0}, std::size_t{1}, std::size_t{1000}, std::size_t{250001}}) {
        CAPTURE(what(dt, n));
        ++seed;
        auto out = buffer(dt, n), in = buffer(dt, n);
        fill(out.data(), dt, me(), n, seed);
        auto r = cm()->recv(in.data(), n, dt, from, 3);
        auto s = cm()->send(out.data(), n, dt, to, 3);
        r->wait();
        s->wait();
        std::size_t bad = 0;
        for (std::size_t i = 0; i < n; ++i) bad += get(in.data(), dt, i) != gen(dt, from, i, seed);
        CHECK(bad == 0);
      }
  }

  TEST_CASE("send/recv: tags are matched whatever order the receives are posted in") {
    const int to = (me() + 1) % world(), from = (me() + world() - 1) % world();
    const std::size_t lens[3] = {70001, 5, 300000};
    std::vector<std::vector<std::int64_t>> out(3), in(3);
    std::vector<WorkHandle> sends;
    for (int t = 0; t < 3; ++t) {
      out[t].assign(lens[t], me() * 10 + t);
      in[t].assign(lens[t], -1);
      sends.push_back(cm()->send(out[t].data(), lens[t], DType::i64, to, /*tag=*/t));
    }
    // Receive in the order 2, 0, 1: messages 0 and 1 arrive first and must wait their turn.
    for (int t : {2, 0, 1}) cm()->recv(in[t].data(), lens[t], DType::i64, from, t)->wait();
    for (auto& s : sends) s->wait();
    for (int t = 0; t < 3; ++t) CHECK(in[t] == std::vector<std::int64_t>(lens[t], from * 10 + t));
  }

  TEST_CASE("send/recv: every rank to every rank, itself included, all at once") {
    const int n = world();
    std::vector<std::vector<std::int32_t>> out(static_cast<std::size_t>(n)), in(static_cast<std::size_t>(n));
    std::vector<WorkHandle> work;
    for (int q = 0; q < n; ++q) {
      const std::size_t len = 1000u * static_cast<std::size_t>(1 + q + me());
      out[q].assign(len, me() * 100 + q);
      in[q].assign(len, -1);
      work.push_back(cm()->recv(in[q].data(), len, DType::i32, q, 9));
      work.push_back(cm()->send(out[q].data(), len, DType::i32, q, 9));
    }
    for (auto& w : work) w->wait();
    for (int q = 0; q < n; ++q) CHECK(in[q] == std::vector<std::int32_t>(in[q].size(), q * 100 + me()));
  }

  TEST_CASE("many back-to-back asynchronous ops, waited for in reverse order") {
    constexpr int kOpsCount = 120;
    const int n = world();
    std::vector<std::vector<float>> a(kOpsCount), b(kOpsCount);
    std::vector<WorkHandle> work;
    for (int k = 0; k < kOpsCount; ++k) {
      const std::size_t len = 17 + 13u * static_cast<std::size_t>(k);
      a[k].assign(len * static_cast<std::size_t>(n), static_cast<float>(me() + k));
      b[k].assign(len * static_cast<std::size_t>(n), -1.f);
      switch (k % 5) {
        case 0: work.push_back(cm()->allreduce(a[k].data(), a[k].data(), len, DType::f32, ReduceOp::sum)); break;
        case 1: work.push_back(cm()->broadcast(a[k].data(), len, DType::f32, k % n)); break;
        case 2: work.push_back(cm()->allgather(a[k].data(), b[k].data(), len, DType::f32)); break;
        case 3: work.push_back(cm()->reduce_scatter(a[k].data(), b[k].data(), len, DType::f32, ReduceOp::max)); break;
        case 4: work.push_back(cm()->barrier()); break;
      }
    }
    for (int k = kOpsCount - 1; k >= 0; --k) work[static_cast<std::size_t>(k)]->wait();
    std::size_t bad = 0;
    for (int k = 0; k < kOpsCount; ++k) {
      const std::size_t len = 17 + 13u * static_cast<std::size_t>(k);
      for (std::size_t i = 0; i < len; ++i) {
        switch (k % 5) {
          case 0: bad += a[k][i] != static_cast<float>(n * (n - 1) / 2 + n * k); break;
          case 1: bad += a[k][i] != static_cast<float>(k % n + k); break;
          case 2:
            for (int q = 0; q < n; ++q) bad += b[k][static_cast<std::size_t>(q) * len + i] != static_cast<float>(q + k);
            break;
          case 3: bad += b[k][i] != static_cast<float>(n - 1 + k); break;
        }
      }
    }
    CHECK(bad == 0);
  }

  TEST_CASE("Work::test() polls an op to completion") {
    std::vector<double> x(100000, 1.0);
    auto w = cm()->allreduce(x.data(), x.data(), x.size(), DType::f64, ReduceOp::sum);
    const auto deadline = std::chrono::steady_clock::now() + 30s;
    while (!w->test() && std::chrono::steady_clock::now() < deadline) {
    }
    CHECK(w->test());
    CHECK(x[0] == world());
    CHECK(x.back() == world());
  }

  TEST_CASE("count 0 is a no-op that completes, on every op") {
    std::vector<WorkHandle> w;
    w.push_back(cm()->allreduce(nullptr, nullptr, 0, DType::f32, ReduceOp::sum));
    w.push_back(cm()->broadcast(nullptr, 0, DType::u8, 0));
    w.push_back(cm()->allgather(nullptr, nullptr, 0, DType::i64));
    w.push_back(cm()->reduce_scatter(nullptr, nullptr, 0, DType::bf16, ReduceOp::avg));
    const int to = (me() + 1) % world(), from = (me() + world() - 1) % world();
    w.push_back(cm()->recv(nullptr, 0, DType::f32, from, 77));
    w.push_back(cm()->send(nullptr, 0, DType::f32, to, 77));
    for (auto& x : w) x->wait();
  }

  TEST_CASE("bad arguments are errors that name the values (and break nothing)") {
    std::vector<float> x(8);
    const std::string root_error = "root " + std::to_string(world()) + " is not a rank";
    CHECK_THROWS_WITH_AS(cm()->broadcast(x.data(), 8, DType::f32, world()),
                         doctest::Contains(root_error.c_str()), cohort::Error);
    CHECK_THROWS_WITH_AS(cm()->send(x.data(), 8, DType::f32, -1), doctest::Contains("peer -1"),
                         cohort::Error);
    CHECK_THROWS_WITH_AS(cm()->allreduce(x.data(), x.data() + 2, 4, DType::f32, ReduceOp::sum),
                         doctest::Contains("overlap"), cohort::Error);
    // The communicator still works.
    float one = 1;
    cm()->allreduce(&one, &one, 1, DType::f32, ReduceOp::sum)->wait();
    CHECK(one == static_cast<float>(world()));
  }
}
