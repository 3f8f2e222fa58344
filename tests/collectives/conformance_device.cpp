// The conformance suite on device memory, for backends whose capabilities() say device_memory
// (nccl): the same inputs and references as the host cases (conformance_values.hpp), uploaded to
// this rank's GPU (cohort::device("cuda"): local rank i on GPU i, the GPU the communicator uses),
// run there and downloaded to check. conformance_main.cpp runs this suite only for such backends,
// and the host suite only for backends with host_memory. Label gpu: without a GPU the backend is
// not available and the whole run exits 77 (skipped) with the reason.
#include <doctest/doctest.h>

#include <chrono>
#include <cstdint>
#include <cstring>
#include <vector>

#include "cohort/core/error.hpp"
#include "cohort/devices.hpp"
#include "conformance.hpp"
#include "conformance_values.hpp"

using namespace cohort;
using namespace cohort::comm;
using namespace conformance::values;
using namespace std::chrono_literals;

namespace {

Communicator* cm() { return conformance::communicator; }
int me() { return cm()->rank(); }
int world() { return cm()->size(); }
Device& gpu() {
  static Device& d = cohort::device("cuda");
  return d;
}

// A device buffer of `n` elements of `dt` with a host mirror.
struct DevBuf {
  DType dt;
  std::size_t n, bytes;
  void* p = nullptr;
  std::vector<std::uint8_t> host;
  DevBuf(DType t, std::size_t count)
      : dt(t), n(count), bytes(count * dtype_size(t)), host(buffer(t, count)) {
    p = gpu().allocate(bytes);
  }
  ~DevBuf() { gpu().deallocate(p, bytes); }
  DevBuf(const DevBuf&) = delete;
  DevBuf& operator=(const DevBuf&) = delete;
  char* at(std::size_t elem) const { return static_cast<char*>(p) + elem * dtype_size(dt); }
  void up() {
    if (bytes) gpu().copy_from_host(p, host.data(), bytes);
  }
  void down() {
    if (bytes) gpu().copy_to_host(host.data(), p, bytes);
  }
};

bool same_everywhere(std::uint64_t v) {
  DevBuf mine(DType::i64, 1), all(DType::i64, static_cast<std::size_t>(world()));
  std::memcpy(mine.host.data(), &v, 8);
  mine.up();
  cm()->allgather(mine.p, all.p, 1, DType::i64)->wait();
  all.down();
  for (int q = 0; q < world(); ++q) {
    std::uint64_t x;
    std::memcpy(&x, all.host.data() + 8 * q, 8);
    if (x != v) return false;
  }
  return true;
}

}  // namespace

TEST_SUITE("conformance_device") {
  TEST_CASE("capabilities: device memory") {
    const Capabilities c = cm()->capabilities();
    CHECK(c.device_memory);
    CHECK(c.dtypes.size() == 7);
  }

  TEST_CASE("allreduce: every dtype, op and size, in place and out of place") {
    std::uint64_t seed = 10001;
    for (DType dt : kTypes)
      for (ReduceOp op : kOps)
        for (std::size_t n : sizes(dt))
          for (bool in_place : {false, true}) {
            CAPTURE(what(dt, n, in_place ? " in place" : " out of place"));
            CAPTURE(reduce_op_name(op));
            ++seed;
            DevBuf in(dt, n), out(dt, n);
            fill(in.host.data(), dt, me(), n, seed);
            in.up();
            void* dst = in_place ? in.p : out.p;
            cm()->allreduce(in.p, dst, n, dt, op)->wait();
            DevBuf& res = in_place ? in : out;
            res.down();
            std::size_t bad = 0;
            for (std::size_t i = 0; i < n; ++i)
              bad += !reduction_ok(dt, op, world(), i, seed, get(res.host.data(), dt, i));
            CHECK(bad == 0);
            CHECK(same_everywhere(digest(res.host.data(), res.bytes)));
          }
  }

  TEST_CASE("allreduce reads what the compute stream wrote just before (no host wait between)") {
    const std::size_t n = 1 << 20;
    DevBuf src(DType::f32, n), dst(DType::f32, n);
    fill(src.host.data(), DType::f32, me(), n, 777);
    src.up();
    gpu().copy(dst.p, src.p, src.bytes);  // enqueued on the compute stream, not waited for
    cm()->allreduce(dst.p, dst.p, n, DType::f32, ReduceOp::sum)->wait();
    dst.down();
    std::size_t bad = 0;
    for (std::size_t i = 0; i < n; ++i)
      bad += !reduction_ok(DType::f32, ReduceOp::sum, world(), i, 777, get(dst.host.data(), DType::f32, i));
    CHECK(bad == 0);
  }

  TEST_CASE("broadcast, allgather, reduce_scatter: every dtype and size") {
    std::uint64_t seed = 20001;
    for (DType dt : kTypes)
      for (std::size_t n : sizes(dt)) {
        CAPTURE(what(dt, n));
        for (int root = 0; root < world(); ++root) {
          DevBuf b(dt, n);
          fill(b.host.data(), dt, me(), n, ++seed);
          b.up();
          cm()->broadcast(b.p, n, dt, root)->wait();
          b.down();
          std::size_t bad = 0;
          for (std::size_t i = 0; i < n; ++i) bad += get(b.host.data(), dt, i) != gen(dt, root, i, seed);
          CHECK(bad == 0);
        }
        const std::size_t total = n * static_cast<std::size_t>(world());
        for (bool in_place : {false, true}) {
          CAPTURE(in_place);
          DevBuf in(dt, n), out(dt, total);
          ++seed;
          DevBuf& src = in_place ? out : in;
          const std::size_t first = in_place ? static_cast<std::size_t>(me()) * n : 0;
          fill(src.host.data() + first * dtype_size(dt), dt, me(), n, seed);
          src.up();
          cm()->allgather(in_place ? out.at(first) : in.p, out.p, n, dt)->wait();
          out.down();
          std::size_t bad = 0;
          for (int q = 0; q < world(); ++q)
            for (std::size_t i = 0; i < n; ++i)
              bad += get(out.host.data(), dt, static_cast<std::size_t>(q) * n + i) != gen(dt, q, i, seed);
          CHECK(bad == 0);
        }
        for (ReduceOp op : kOps)
          for (bool in_place : {false, true}) {
            CAPTURE(reduce_op_name(op));
            CAPTURE(in_place);
            DevBuf in(dt, total), out(dt, n);
            fill(in.host.data(), dt, me(), total, ++seed);
            in.up();
            const std::size_t offset = static_cast<std::size_t>(me()) * n;
            cm()->reduce_scatter(in.p, in_place ? in.at(offset) : out.p, n, dt, op)->wait();
            std::size_t bad = 0;
            if (in_place) {
              in.down();
              for (std::size_t i = 0; i < n; ++i)
                bad += !reduction_ok(dt, op, world(), offset + i, seed, get(in.host.data(), dt, offset + i));
            } else {
              out.down();
              for (std::size_t i = 0; i < n; ++i)
                bad += !reduction_ok(dt, op, world(), offset + i, seed, get(out.host.data(), dt, i));
            }
            CHECK(bad == 0);
          }
      }
  }

  TEST_CASE("barrier: nobody leaves before the last rank arrives") {
    conformance::check_barrier_waits_for_last_rank();
  }

  TEST_CASE("send/recv: a ring (recv posted first) and every rank to every rank") {
    const int to = (me() + 1) % world(), from = (me() + world() - 1) % world();
    std::uint64_t seed = 30001;
    for (DType dt : kTypes)
      for (std::size_t n : {std::size_t{1}, std::size_t{1000}, std::size_t{250001}}) {
        CAPTURE(what(dt, n));
        DevBuf out(dt, n), in(dt, n);
        fill(out.host.data(), dt, me(), n, ++seed);
        out.up();
        auto r = cm()->recv(in.p, n, dt, from, 3);
        auto s = cm()->send(out.p, n, dt, to, 3);
        r->wait();
        s->wait();
        in.down();
        std::size_t bad = 0;
        for (std::size_t i = 0; i < n; ++i) bad += get(in.host.data(), dt, i) != gen(dt, from, i, seed);
        CHECK(bad == 0);
      }
    std::vector<std::unique_ptr<DevBuf>> outs, ins;
    std::vector<WorkHandle> work;
    for (int q = 0; q < world(); ++q) {
      const std::size_t len = 1000u * static_cast<std::size_t>(1 + q + me());
      outs.push_back(std::make_unique<DevBuf>(DType::i32, len));
      const std::size_t in_len = 1000u * static_cast<std::size_t>(1 + q + me());
      ins.push_back(std::make_unique<DevBuf>(DType::i32, in_len));
      for (std::size_t i = 0; i < len; ++i) put(outs.back()->host.data(), DType::i32, i, me() * 100 + q);
      outs.back()->up();
      work.push_back(cm()->recv(ins.back()->p, in_len, DType::i32, q, 9));
      work.push_back(cm()->send(outs.back()->p, len, DType::i32, q, 9));
    }
    for (auto& w : work) w->wait();
    for (int q = 0; q < world(); ++q) {
      ins[static_cast<std::size_t>(q)]->down();
      std::size_t bad = 0;
      for (std::size_t i = 0; i < ins[static_cast<std::size_t>(q)]->n; ++i)
        bad += get(ins[static_cast<std::size_t>(q)]->host.data(), DType::i32, i) != q * 100 + me();
      CHECK(bad == 0);
    }
  }

  TEST_CASE("many back-to-back asynchronous ops, waited for in reverse order; test() polls") {
    constexpr int kOpsCount = 60;
    const int n = world();
    std::vector<std::unique_ptr<DevBuf>> a, b;
    std::vector<WorkHandle> work;
    for (int k = 0; k < kOpsCount; ++k) {
      const std::size_t len = 17 + 13u * static_cast<std::size_t>(k);
      a.push_back(std::make_unique<DevBuf>(DType::f32, len * static_cast<std::size_t>(n)));
      b.push_back(std::make_unique<DevBuf>(DType::f32, len * static_cast<std::size_t>(n)));
      for (std::size_t i = 0; i < a.back()->n; ++i) put(a.back()->host.data(), DType::f32, i, me() + k);
      a.back()->up();
      switch (k % 3) {
        case 0: work.push_back(cm()->allreduce(a[k]->p, a[k]->p, len, DType::f32, ReduceOp::sum)); break;
        case 1: work.push_back(cm()->allgather(a[k]->p, b[k]->p, len, DType::f32)); break;
        case 2: work.push_back(cm()->barrier()); break;
      }
    }
    const auto deadline = std::chrono::steady_clock::now() + 60s;
    while (!work.back()->test() && std::chrono::steady_clock::now() < deadline) {
    }
    for (int k = kOpsCount - 1; k >= 0; --k) work[static_cast<std::size_t>(k)]->wait();
    std::size_t bad = 0;
    for (int k = 0; k < kOpsCount; ++k) {
      const std::size_t len = 17 + 13u * static_cast<std::size_t>(k);
      a[k]->down();
      b[k]->down();
      for (std::size_t i = 0; i < len; ++i) {
        if (k % 3 == 0) bad += get(a[k]->host.data(), DType::f32, i) != n * (n - 1) / 2 + n * k;
        if (k % 3 == 1)
          for (int q = 0; q < n; ++q)
            bad += get(b[k]->host.data(), DType::f32, static_cast<std::size_t>(q) * len + i) != q + k;
      }
    }
    CHECK(bad == 0);
  }

  TEST_CASE("host pointers are refused with an error that says so") {
    if (cm()->capabilities().host_memory) return;
    std::vector<float> x(8, 1.f);
    CHECK_THROWS_WITH_AS(cm()->allreduce(x.data(), x.data(), 8, DType::f32, ReduceOp::sum),
                         doctest::Contains("is host memory"), cohort::Error);
    // Nothing was enqueued: the communicator still works.
    DevBuf one(DType::f32, 1);
    put(one.host.data(), DType::f32, 0, 1.0);
    one.up();
    cm()->allreduce(one.p, one.p, 1, DType::f32, ReduceOp::sum)->wait();
    one.down();
    CHECK(get(one.host.data(), DType::f32, 0) == world());
  }
}
