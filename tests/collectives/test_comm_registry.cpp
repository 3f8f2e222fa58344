// The communicator registry: the hand-written list, selection by name / COHORT_COMM / auto, and
// the errors for unknown and unavailable backends (they list what is known and say why).
#include <doctest/doctest.h>

#include <algorithm>

#include "cohort/collectives/registry.hpp"
#include "cohort/core/error.hpp"
#include "env_guard.hpp"

using namespace cohort::comm;
using cohort::test::EnvGuard;

namespace {
ProcessGroupInfo group(int rank, int world, int local_world) {
  ProcessGroupInfo g;
  g.rank = rank;
  g.world_size = world;
  g.local_rank = rank % local_world;
  g.local_world_size = local_world;
  g.source = "test";
  return g;
}
std::string error_of(const std::string& name, const ProcessGroupInfo& info) {
  try {
    create_communicator(name, info, make_memory_store());
  } catch (const cohort::Error& e) {
    return e.what();
  }
  return "(no error)";
}
}  // namespace

TEST_SUITE("registry") {
  TEST_CASE("the list: shm and self always, portable ones last") {
    const auto& f = communicator_factories();
    REQUIRE(f.size() >= 2);
    CHECK(f[f.size() - 2].name == "shm");
    CHECK(f.back().name == "self");
    for (const auto& x : f) {
      CHECK(x.available);
      CHECK(x.create);
    }
  }

  TEST_CASE("auto: self for one process") {
    EnvGuard g;
    auto c = create_communicator("", group(0, 1, 1), nullptr);
    CHECK(c->backend() == "self");
    CHECK(c->size() == 1);
    auto d = create_communicator("auto", group(0, 1, 1), make_memory_store());
    CHECK(d->backend() == "self");
  }

  TEST_CASE("by name, and COHORT_COMM when the name is empty") {
    {
      EnvGuard g({{"COHORT_COMM", "shm"}});
      auto c = create_communicator("", group(0, 1, 1), nullptr);
      CHECK(c->backend() == "shm");
      auto d = create_communicator("self", group(0, 1, 1), nullptr);  // the argument wins
      CHECK(d->backend() == "self");
    }
    EnvGuard g;
    CHECK(create_communicator("shm", group(0, 1, 1), nullptr)->backend() == "shm");
  }

  TEST_CASE("unknown names list the known ones") {
    EnvGuard g;
    const std::string e = error_of("tcp", group(0, 1, 1));
    CHECK(e.find("unknown communicator backend 'tcp' from the argument") != std::string::npos);
    CHECK(e.find("shm") != std::string::npos);
    CHECK(e.find("self") != std::string::npos);
    EnvGuard g2({{"COHORT_COMM", "mpi"}});
    CHECK(error_of("", group(0, 1, 1)).find("'mpi' from COHORT_COMM") != std::string::npos);
  }

  TEST_CASE("nccl: first when built; otherwise the build says why it lacks it") {
    EnvGuard g;
    const auto& f = communicator_factories();
    const bool built = std::any_of(f.begin(), f.end(), [](const auto& x) { return x.name == "nccl"; });
    CHECK(built == (COHORT_HAVE_NCCL == 1));
    const std::string e = error_of("nccl", group(0, 1, 1));
    if (!built) {
      CHECK(e.find("communicator backend 'nccl' from the argument is not in this build (this "
                   "library was built without NCCL/CUDA") != std::string::npos);
      return;
    }
    CHECK(f.front().name == "nccl");
    CHECK(f.front().gpu_memory);  // auto takes it for GPU training only (next case)
    for (const auto& x : f)
      if (x.name != "nccl") CHECK_FALSE(x.gpu_memory);
    std::string why;
    if (f.front().available(group(0, 1, 1), &why)) {
      MESSAGE("a GPU is visible, so nccl can serve one rank: the no-GPU error is not checked here");
      return;
    }
    // No GPU: the error says so at once and names what this group can use instead.
    CHECK(e.find("communicator backend 'nccl' from the argument is not available for rank 0 of 1") !=
          std::string::npos);
    CHECK(e.find("no GPU visible to this process") != std::string::npos);
    CHECK(e.find("(available for this group: self, shm") != std::string::npos);
    // ... and auto never picks it.
    CHECK(create_communicator("auto", group(0, 1, 1), nullptr)->backend() == "self");
  }

  TEST_CASE("auto: a GPU-memory backend for GPU training where it can serve, never for host training") {
    // Made-up factories, so that the rule is checked without a GPU: "gpu" takes GPU memory only
    // (as nccl) and serves groups of at most 2 ranks here.
    auto make = [](std::string name, int score, bool gpu, int max_world) {
      CommunicatorFactory f;
      f.name = std::move(name);
      f.score = score;
      f.gpu_memory = gpu;
      f.available = [max_world](const ProcessGroupInfo& info, std::string* why) {
        if (info.world_size <= max_world) return true;
        if (why) *why = "too many ranks";
        return false;
      };
      return f;
    };
    const std::vector<CommunicatorFactory> fs = {make("gpu", 5, true, 2), make("shm", 50, false, 8),
                                                 make("ucx", 10, false, 64)};
    CHECK(pick_auto(fs, group(0, 2, 2), true)->name == "gpu");    // GPU training: the GPU backend
    CHECK(pick_auto(fs, group(0, 2, 2), false)->name == "shm");   // host training: never it
    std::string why;
    CHECK(pick_auto(fs, group(0, 4, 4), true, &why)->name == "shm");  // it cannot serve: the best other
    CHECK(why == "gpu: too many ranks");
    why.clear();
    CHECK(pick_auto(fs, group(0, 16, 16), false, &why)->name == "ucx");
    CHECK(why == "shm: too many ranks");  // the GPU backend is not even asked for host training
    CHECK(pick_auto(fs, group(0, 100, 100), true) == nullptr);
    // The real list on this machine: a device the host cannot address is "GPU training"; without
    // a visible GPU, nccl cannot serve, and auto falls back as for the host.
    std::string reasons;
    const CommunicatorFactory* real = pick_auto(communicator_factories(), group(0, 1, 1), true, &reasons);
    REQUIRE(real != nullptr);
    if (COHORT_HAVE_NCCL == 1 && real->name != "nccl") CHECK(reasons.find("nccl: ") == 0);
  }

  TEST_CASE("auto: hier for several hosts with several ranks on this one, else shm or ucx") {
    const auto& fs = communicator_factories();
    const bool have_hier = std::any_of(
        fs.begin(), fs.end(), [](const CommunicatorFactory& f) { return f.name == "hier"; });
    if (!have_hier) {  // a build without UCX says why it lacks hier too
      CHECK(error_of("hier", group(0, 1, 1)).find("built without UCX") != std::string::npos);
      return;
    }
    std::string why;
    if (!std::find_if(fs.begin(), fs.end(), [](const CommunicatorFactory& f) {
           return f.name == "ucx";
         })->available(group(0, 4, 2), &why)) {
      MESSAGE("ucx cannot run here (" << why << "): the auto rule is not checked");
      return;
    }
    CHECK(pick_auto(fs, group(0, 4, 2), false)->name == "hier");  // 2 hosts x 2 ranks
    CHECK(pick_auto(fs, group(0, 4, 4), false)->name == "shm");   // one host
    CHECK(pick_auto(fs, group(0, 4, 1), false)->name == "ucx");   // one rank per host
  }

  TEST_CASE("unavailable backends say why") {
    EnvGuard g;
    const std::string self = error_of("self", group(0, 2, 2));
    CHECK(self.find("'self' from the argument is not available") != std::string::npos);
    CHECK(self.find("needs world size 1 (this group has 2 ranks)") != std::string::npos);
    const std::string shm = error_of("shm", group(0, 4, 2));
    CHECK(shm.find("needs every rank on one host (world size 4, 2 on this host)") !=
          std::string::npos);
  }

  TEST_CASE("shm without a store for several ranks is an error") {
    EnvGuard g;
    try {
      create_communicator("shm", group(0, 2, 2), nullptr);
      FAIL("expected an error");
    } catch (const cohort::Error& e) {
      CHECK(std::string(e.what()).find("needs a store") != std::string::npos);
    }
  }

  TEST_CASE("init_process_group: one process needs nothing; several need the store address") {
    {
      EnvGuard g;
      auto c = init_process_group();
      CHECK(c->backend() == "self");
    }
    EnvGuard g({{"RANK", "1"}, {"WORLD_SIZE", "2"}});
    try {
      init_process_group();
      FAIL("expected an error");
    } catch (const cohort::Error& e) {
      CHECK(std::string(e.what()).find("set MASTER_ADDR and MASTER_PORT") != std::string::npos);
    }
    EnvGuard g2({{"RANK", "1"}, {"WORLD_SIZE", "2"}, {"COHORT_STORE", "ftp://x"}});
    try {
      init_process_group();
      FAIL("expected an error");
    } catch (const cohort::Error& e) {
      CHECK(std::string(e.what()).find("COHORT_STORE='ftp://x'") != std::string::npos);
    }
  }

  TEST_CASE("reduce_op_name") {
    CHECK(std::string(reduce_op_name(ReduceOp::sum)) == "sum");
    CHECK(std::string(reduce_op_name(ReduceOp::avg)) == "avg");
    CHECK(std::string(reduce_op_name(ReduceOp::min)) == "min");
    CHECK(std::string(reduce_op_name(ReduceOp::max)) == "max");
  }
}
