// Entry point of the conformance suite: builds the job's store and the communicator under test,
// skips (exit 77, which ctest reports as skipped) when that backend is not in this build or cannot
// serve this group, runs the doctest suite, and ends all ranks together. Rank 0 also checks that
// the job left nothing in /dev/shm.
#define DOCTEST_CONFIG_IMPLEMENT
#include <dirent.h>
#include <doctest/doctest.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "../common/comm_backend.hpp"
#include "cohort/collectives/subgroup.hpp"
#include "cohort/core/error.hpp"
#include "conformance.hpp"
#include "detail/checked.hpp"

namespace conformance {
cohort::comm::Communicator* communicator = nullptr;
std::shared_ptr<cohort::comm::Store> store;
cohort::comm::ProcessGroupInfo info;
std::string backend;

// COHORT_TEST_CHECKED=1: every communicator under test is wrapped by the collective checker
// (detail/checked.hpp), to run the suite through it; its entries turn the backend's own check off.
bool checked() {
  const char* env = std::getenv("COHORT_TEST_CHECKED");
  return env && std::string(env) == "1";
}

std::unique_ptr<cohort::comm::Communicator> make_communicator(const std::string& prefix) {
  auto c = cohort::comm::create_communicator(backend, info,
                                             cohort::comm::make_prefix_store(store, prefix));
  if (checked()) return cohort::comm::detail::make_checked(std::move(c), nullptr);
  return c;
}
}  // namespace conformance

using namespace cohort::comm;
using namespace std::chrono_literals;

namespace {
// A case that throws (an op failed, timed out, or a peer was declared dead) leaves the ops it
// issued after the failing one in flight, and its buffers are freed as the exception unwinds:
// running the next case on the same communicator lets those ops read and write freed memory
// (ASan reported exactly that once, with the first error lost in a pipe's buffer when ASan
// aborted). So the rank stops here, saying which case threw and why, on stderr (unbuffered);
// cohortrun then ends the other ranks and the entry fails with this message.
struct StopAtException final : doctest::IReporter {
  explicit StopAtException(const doctest::ContextOptions&) {}
  void test_case_start(const doctest::TestCaseData& tc) override { current_ = tc.m_name; }
  void test_case_exception(const doctest::TestCaseException& e) override {
    std::fflush(stdout);
    std::fprintf(stderr, "conformance: case \"%s\" threw: %s\nconformance: stopping this rank: "
                 "the case's ops still in flight use buffers it freed\n",
                 current_.c_str(), e.error_string.c_str());
    std::_Exit(1);
  }
  void report_query(const doctest::QueryData&) override {}
  void test_run_start() override {}
  void test_run_end(const doctest::TestRunStats&) override {}
  void test_case_reenter(const doctest::TestCaseData&) override {}
  void test_case_end(const doctest::CurrentTestCaseStats&) override {}
  void subcase_start(const doctest::SubcaseSignature&) override {}
  void subcase_end() override {}
  void log_assert(const doctest::AssertData&) override {}
  void log_message(const doctest::MessageData&) override {}
  void test_case_skipped(const doctest::TestCaseData&) override {}

 private:
  std::string current_;
};
REGISTER_LISTENER("stop_at_exception", 1, StopAtException);
}  // namespace

int main(int argc, char** argv) {
  using namespace conformance;
  try {
    const char* env = std::getenv("COHORT_COMM");
    backend = env && *env ? env : "auto";
    info = ProcessGroupInfo::from_env();
    if (std::string why; !cohort::testing::comm_backend_serves(backend, info, &why)) {
      std::printf("conformance: skipped: backend '%s' cannot serve %s: %s\n", backend.c_str(),
                  info.str().c_str(), why.c_str());
      return 77;
    }
    if (info.world_size == 1)
      store = make_memory_store();
    else
      store = make_tcp_store(info.master_addr, info.master_port, info.rank == 0, 60000ms);
    std::shared_ptr<Communicator> c = make_communicator("main");
    // COHORT_TEST_SUBGROUP=1: the suite runs on comm::make_subgroup of the whole group (the
    // cases take rank r to be launch rank r, so in the same order), so every collective is the
    // subgroup's point-to-point algorithm over the backend. Other numberings: the hybrid
    // sharding tests (tests/parallel/test_zero_hybrid.cpp, replica groups k, k + s, ...).
    const char* sub = std::getenv("COHORT_TEST_SUBGROUP");
    const bool subgroup = sub && std::string(sub) == "1";
    if (subgroup) {
      std::vector<int> all;
      for (int r = 0; r < info.world_size; ++r) all.push_back(r);
      c = make_subgroup(c, all, 5);
    }
    communicator = c.get();
    if (info.rank == 0)
      std::printf("conformance: backend %s%s%s, %s\n", c->backend().c_str(),
                  checked() ? " (checked)" : "", subgroup ? " (a subgroup of every rank)" : "",
                  info.str().c_str());

    doctest::Context ctx(argc, argv);
    // Host-memory cases for backends that take host memory, device-memory cases for those that
    // take device memory (nccl: device only).
    const Capabilities caps = c->capabilities();
    if (!caps.host_memory) ctx.addFilter("test-suite-exclude", "conformance");
    if (!caps.device_memory) ctx.addFilter("test-suite-exclude", "conformance_device");
    int rc = ctx.run();
    if (ctx.shouldExit()) return rc;

    // Leave together: rank 0 serves the store, so it goes last.
    store->add("finished", 1);
    if (info.rank == 0) {
      const auto deadline = std::chrono::steady_clock::now() + 60s;
      while (std::stoll(store->get_string("finished", 1000ms)) < info.world_size &&
             std::chrono::steady_clock::now() < deadline)
        std::this_thread::sleep_for(5ms);
      // Segments are unlinked as soon as every rank has mapped them: nothing may be left.
      const std::string prefix = "cohort-" + info.job_id + "-";
      if (DIR* d = ::opendir("/dev/shm")) {
        while (dirent* e = ::readdir(d)) {
          if (!info.job_id.empty() && std::strncmp(e->d_name, prefix.c_str(), prefix.size()) == 0) {
            std::printf("conformance: FAILED: /dev/shm/%s left behind\n", e->d_name);
            rc = 1;
          }
        }
        ::closedir(d);
      }
    }
    c.reset();
    return rc;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "conformance: %s\n", e.what());
    return 1;
  }
}
