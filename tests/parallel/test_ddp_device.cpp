// DistributedDataParallel's GPU ordering paths, on the lazy-stream test device
// (tests/common/lazy_stream_device.hpp: a device the host cannot address whose side streams land
// their copies late): the "device buckets" case (staged and device-only communicators) and the
// "host values" case (allreduce_host/allgather_host staged through the device). Compiled into
// cohort_parallel_tests with test_ddp.cpp, whose model, data and CountingComm it shares
// (ddp_fixture.hpp).
#include <doctest/doctest.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "cohort/collectives/host_collectives.hpp"
#include "cohort/core/error.hpp"
#include "cohort/devices.hpp"
#include "cohort/parallel/ddp.hpp"
#include "ddp_fixture.hpp"
#include "ddp_test.hpp"

namespace par = cohort::parallel;

using namespace ddp_test;

TEST_CASE("device buckets: parameters on a device with late side streams train as host parameters do") {
  // Parameters on a device the host cannot address, whose side streams run late
  // (tests/common/lazy_stream_device.hpp). The same ops run underneath, so the weights must equal
  // the host run's bit for bit, for every reducer and both kinds of communicator:
  //  - host-only (the job's shm/ucx): every reducer stages its bucket through page-locked host
  //    memory asynchronously; a collective started before its download landed, or an upload
  //    read after the host memory changed, changes the weights;
  //  - one that takes only device memory and orders itself after compute, as nccl does
  //    (CountingComm::device_only: host pointers are an error): the collectives run on the device
  //    bucket, and construction (broadcast, same-model check) and the digest comparison stage
  //    their few host bytes through the device.
  auto& c = ddp_test::comm();
  auto& lazy = cohort::testing::lazy_stream_device();
  struct Mode {
    std::string reducer;  // with a host-only communicator
    par::DDPOptions options;
    std::size_t buckets = 1;
  };
  std::vector<Mode> modes(6);
  modes[0].reducer = "host_staged";
  modes[1].reducer = "bf16";
  modes[1].options.bf16_compression = true;
  modes[2].reducer = "f16";
  modes[2].options.f16_compression = true;
  modes[3].reducer = "deterministic";
  modes[3].options.deterministic = true;
  // Three buckets [fc.bias] [fc.weight] [conv.bias, conv.weight] (as the "buckets" case): staged
  // collectives start in bucket order while earlier ones are still in flight.
  for (std::size_t m : {4, 5}) {
    modes[m].options.first_bucket_mb = 50.0 / (1 << 20);
    modes[m].options.bucket_cap_mb = 200.0 / (1 << 20);
    modes[m].buckets = 3;
  }
  modes[4].reducer = "host_staged";
  modes[5].reducer = "deterministic";
  modes[5].options.deterministic = true;
  const int steps = 6;
  // Several landing schedules (the lazy device's seeds): each lands the staged copies at other
  // moments, so the order in which DDP finds downloads landed differs from schedule to schedule
  // and from rank to rank; the collectives must still start in bucket order on every rank.
  std::vector<std::string> host_digests;
  for (const Mode& mode : modes) {
    par::DistributedDataParallel on_host(small_net(1), ddp_test::shared_comm(), mode.options);
    train_ddp(on_host, steps);
    host_digests.push_back(on_host.weights_digest());
  }
  for (const std::uint64_t seed : {1, 2, 3, 4, 5, 6}) {
    lazy.reseed(seed);
    for (const bool device_comm : {false, true}) {
      for (std::size_t mi = 0; mi < modes.size(); ++mi) {
        const Mode& mode = modes[mi];
        CAPTURE(seed);
        CAPTURE(device_comm);
        CAPTURE(mode.reducer);
        std::string digest;
        {
          auto comm = std::make_shared<CountingComm>(ddp_test::shared_comm());
          if (device_comm) comm->device_only = &lazy;
          auto model = small_net(1, 10, lazy);
          par::DistributedDataParallel ddp(model, comm, mode.options);
          if (device_comm) {  // the wrapper does refuse host memory, as nccl does
            std::int64_t x = 0;
            std::vector<std::int64_t> all(static_cast<std::size_t>(c.size()));
            CHECK_THROWS_WITH_AS(comm->allgather(&x, all.data(), 1, cohort::DType::i64,
                                                 cohort::comm::kDefaultTimeout),
                                 doctest::Contains("not device memory"), cohort::Error);
          }
          const std::string expected =
              device_comm && mode.reducer == "host_staged" ? "plain" : mode.reducer;
          CHECK(ddp.bucket_reducers() == std::vector<std::string>(mode.buckets, expected));
          // Views into one flat bucket on the device, in reverse parameter order, each at the
          // next 256-byte boundary after the one before (review finding G5).
          const auto ps = model->parameters();
          for (const auto& p : ps)
            CHECK(reinterpret_cast<std::uintptr_t>(p->grad.raw()) % 256 == 0);
          if (mode.buckets == 1)
            for (std::size_t i = ps.size() - 1; i > 0; --i)
              CHECK(static_cast<const char*>(ps[i - 1]->grad.raw()) ==
                    static_cast<const char*>(ps[i]->grad.raw()) +
                        (ps[i]->grad.nbytes() + 255) / 256 * 256);
          lazy.reset_counts();
          train_ddp(ddp, steps, lazy);
          if (c.size() > 1) {
            // Staged: one bucket, one asynchronous download and upload per step, from page-locked
            // memory, and the host never waits on a blocking copy. On the device: no copies at all,
            // but for the deterministic mode's read-back of the n gathered copies.
            const bool staged = !device_comm;
            const int per_step = static_cast<int>(mode.buckets);
            CHECK(lazy.async_downloads == (staged ? steps * per_step : 0));
            CHECK(lazy.async_uploads == (staged ? steps * per_step : 0));
            CHECK(lazy.unlocked_async == 0);
            const bool reads_back = device_comm && mode.reducer == "deterministic";
            CHECK(lazy.readbacks == (reads_back ? steps * per_step : 0));
            // Neither path makes the host wait for the compute stream: the download waits for it
            // on its own stream, the stream-ordered communicator on its own (wait_for_compute).
            CHECK(lazy.compute_waits == 0);
          }
          digest = ddp.weights_digest();
          CHECK(ddp.weights_identical_across_ranks());
        }
        CHECK(digest == host_digests[mi]);
        CHECK(lazy.registrations == lazy.unregistrations);  // the stages unlocked their memory
        CHECK(lazy.take_violations() == "");
      }
    }
  }
  CHECK(lazy.streams_alive == 0);
  MESSAGE("device buckets on " << c.size() << " ranks: 4 reducers (1 and 3 buckets) x 2 communicators x 6 landing schedules match the host run");
}

TEST_CASE("host values: reduced on every communicator, staged through the device where it takes only device memory") {
  auto& c = ddp_test::comm();
  auto& lazy = cohort::testing::lazy_stream_device();
  const auto n = static_cast<double>(c.size());
  for (const bool device_only : {false, true}) {
    CAPTURE(device_only);
    auto comm = std::make_shared<CountingComm>(ddp_test::shared_comm());
    if (device_only) comm->device_only = &lazy;
    double v[2] = {1.0 + c.rank(), -2.0};
    cohort::comm::allreduce_host(*comm, &lazy, v, 2, cohort::DType::f64, cohort::comm::ReduceOp::sum);
    CHECK(v[0] == n * (n + 1) / 2);
    CHECK(v[1] == -2.0 * n);
    const std::int64_t mine = 10 + c.rank();
    std::vector<std::int64_t> all(static_cast<std::size_t>(c.size()));
    cohort::comm::allgather_host(*comm, &lazy, &mine, all.data(), 1, cohort::DType::i64);
    for (int r = 0; r < c.size(); ++r) CHECK(all[static_cast<std::size_t>(r)] == 10 + r);
    if (device_only) {
      // DDP of a host model on it: refused before any collective, naming the parameter and the fix.
      CHECK_THROWS_WITH_AS(par::DistributedDataParallel(small_net(1, 10, cohort::host_device()), comm),
                           doctest::Contains("parameter 'conv.weight' is on host, and communicator"),
                           cohort::Error);
    }
    if (device_only) {  // nothing to stage through: an error that names the call and the fix
      CHECK_THROWS_WITH_AS(cohort::comm::allreduce_host(*comm, nullptr, v, 2, cohort::DType::f64,
                                                        cohort::comm::ReduceOp::sum),
                           doctest::Contains("allreduce of host values: communicator"),
                           cohort::Error);
      CHECK_THROWS_WITH_AS(
          cohort::comm::allgather_host(*comm, &cohort::host_device(), &mine, all.data(), 1,
                                       cohort::DType::i64),
          doctest::Contains("'host' is not a device it can take"), cohort::Error);
    }
  }
}
