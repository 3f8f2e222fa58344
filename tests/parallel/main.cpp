// Entry point of the DDP tests: picks the test device (COHORT_TEST_DEVICE, else the host; on a
// GPU with deterministic algorithms, so that a rank's gradients equal the local reference's bit
// for bit), creates the job's communicator (COHORT_COMM, else auto), skips with exit 77 (ctest:
// skipped) when that device or backend is not in this build or cannot serve the group, runs the
// doctest cases on every rank, and ends all ranks together.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "../common/comm_backend.hpp"
#include "cohort/collectives/registry.hpp"
#include "cohort/core/error.hpp"
#include "cohort/core/math_mode.hpp"
#include "cohort/devices.hpp"
#include "ddp_test.hpp"

namespace {
std::shared_ptr<cohort::comm::Communicator> g_comm;
cohort::Device* g_device = nullptr;
}

std::shared_ptr<cohort::comm::Communicator> ddp_test::shared_comm() { return g_comm; }
cohort::Device& ddp_test::test_device() { return *g_device; }

int main(int argc, char** argv) {
  using namespace cohort::comm;
  try {
    const char* dev_env = std::getenv("COHORT_TEST_DEVICE");
    const std::string dev_spec = dev_env && *dev_env ? dev_env : "host";
    try {
      g_device = &cohort::device(dev_spec);
    } catch (const cohort::Error& e) {
      std::printf("parallel tests: skipped: no device '%s': %s\n", dev_spec.c_str(), e.what());
      return 77;
    }
    if (!g_device->host_accessible()) cohort::set_deterministic_algorithms(true);
    const char* env = std::getenv("COHORT_COMM");
    const std::string backend = env && *env ? env : "auto";
    const ProcessGroupInfo info = ProcessGroupInfo::from_env();
    if (std::string why; !cohort::testing::comm_backend_serves(backend, info, &why)) {
      std::printf("parallel tests: skipped: backend '%s' cannot serve %s: %s\n", backend.c_str(),
                  info.str().c_str(), why.c_str());
      return 77;
    }
    g_comm = init_process_group(backend == "auto" ? "" : backend);
    if (info.rank == 0)
      std::printf("parallel tests: backend %s, %s, device %s\n", g_comm->backend().c_str(),
                  info.str().c_str(), g_device->name().c_str());
    std::fflush(stdout);
    doctest::Context ctx(argc, argv);
    const int rc = ctx.run();
    // End together: no rank tears its communicator down while a peer still uses it. A test that
    // broke the communicator on purpose (COHORT_TEST_BREAKS_COMM=1) has already met its peers in
    // the failed collective.
    const char* broken = std::getenv("COHORT_TEST_BREAKS_COMM");
    if (!(broken && *broken == '1')) g_comm->barrier()->wait();
    g_comm.reset();
    return rc;
  } catch (const cohort::Error& e) {
    std::fprintf(stderr, "parallel tests: %s\n", e.what());
    return 1;
  }
}
