// Device selection policy, driven with fake factories, plus the real registry of this build.
#include <doctest/doctest.h>

#include "common/testing.hpp"

using cohort::testing::error_of;

#include <cstdlib>
#include <functional>
#include <memory>

#include "cohort/devices.hpp"
#include "cohort/core/error.hpp"
#include "cohort/core/stream.hpp"
#include "cohort/core/tensor.hpp"

namespace {

// A do-nothing device; only its identity matters for selection.
struct FakeDevice : cohort::Device {
  std::string nm;
  int idx;
  FakeDevice(std::string n, int i) : nm(std::move(n)), idx(i) {}
  std::string name() const override { return nm + ":" + std::to_string(idx); }
  cohort::DeviceType type() const override { return cohort::DeviceType::cuda; }
  int index() const override { return idx; }
  bool host_accessible() const override { return false; }
  void* allocate(std::size_t) override { return nullptr; }
  void deallocate(void*, std::size_t) noexcept override {}
  void copy_from_host(void*, const void*, std::size_t) override {}
  void copy_to_host(void*, const void*, std::size_t) override {}
  void copy(void*, const void*, std::size_t) override {}
  void synchronize() override {}
  bool supports(const cohort::OpCall&) const override { return false; }
  void run(const cohort::OpCall&) override {}
};

cohort::DeviceFactory fake(const std::string& name, int score, int count, std::string why = "") {
  auto devices = std::make_shared<std::vector<std::unique_ptr<FakeDevice>>>();
  for (int i = 0; i < count; ++i) devices->push_back(std::make_unique<FakeDevice>(name, i));
  cohort::DeviceFactory f;
  f.name = name;
  f.score = score;
  f.count = [count, why](std::string* w) {
    if (count == 0 && w) *w = why;
    return count;
  };
  f.get = [devices](int i) -> cohort::Device& { return *(*devices)[static_cast<std::size_t>(i)]; };
  return f;
}


struct EnvGuard {  // sets COHORT_DEVICE for one test and restores the old value
  std::string old;
  bool had;
  explicit EnvGuard(const char* v) {
    const char* o = std::getenv("COHORT_DEVICE");
    had = o != nullptr;
    if (had) old = o;
    if (v) setenv("COHORT_DEVICE", v, 1); else unsetenv("COHORT_DEVICE");
  }
  ~EnvGuard() {
    if (had) setenv("COHORT_DEVICE", old.c_str(), 1); else unsetenv("COHORT_DEVICE");
  }
};

}  // namespace

TEST_CASE("select_device: by name, index, environment and score") {
  EnvGuard env(nullptr);
  const std::vector<cohort::DeviceFactory> fs = {fake("gpu", 100, 2), fake("cpu", 0, 1)};
  CHECK(cohort::select_device(fs, "gpu").name() == "gpu:0");
  CHECK(cohort::select_device(fs, "gpu:1").name() == "gpu:1");
  CHECK(cohort::select_device(fs, "cpu").name() == "cpu:0");
  CHECK(cohort::select_device(fs, "").name() == "gpu:0");  // best score
  CHECK(cohort::select_device(fs, "auto").name() == "gpu:0");
  {
    EnvGuard e2("cpu");
    CHECK(cohort::select_device(fs, "").name() == "cpu:0");
    CHECK(cohort::select_device(fs, "gpu:1").name() == "gpu:1");  // the argument beats the variable
  }
  {
    EnvGuard e3("tpu");
    CHECK(error_of([&] { cohort::select_device(fs, ""); })
              .find("unknown device 'tpu' from COHORT_DEVICE (known devices: gpu, cpu)") !=
          std::string::npos);
  }
}

TEST_CASE("select_device: one device per local rank unless an index is given") {
  EnvGuard env(nullptr);
  const std::vector<cohort::DeviceFactory> fs = {fake("gpu", 100, 2), fake("cpu", 0, 1)};
  CHECK(cohort::select_device(fs, "gpu", 0).name() == "gpu:0");
  CHECK(cohort::select_device(fs, "gpu", 1).name() == "gpu:1");
  CHECK(cohort::select_device(fs, "gpu", 3).name() == "gpu:1");   // local rank 3 % 2 GPUs
  CHECK(cohort::select_device(fs, "", 3).name() == "gpu:1");      // the best available, too
  CHECK(cohort::select_device(fs, "gpu:0", 3).name() == "gpu:0");  // an explicit index wins
  CHECK(cohort::select_device(fs, "cpu", 5).name() == "cpu:0");
  {
    EnvGuard e2("gpu");
    CHECK(cohort::select_device(fs, "", 1).name() == "gpu:1");
  }
}

TEST_CASE("launcher_local_rank: torchrun, then Open MPI, then Slurm") {
  struct Var {  // sets or clears one variable for the test case, restoring it afterwards
    std::string name, old;
    bool had;
    Var(const char* n, const char* v) : name(n) {
      const char* o = std::getenv(n);
      had = o != nullptr;
      if (had) old = o;
      if (v) setenv(n, v, 1); else unsetenv(n);
    }
    ~Var() {
      if (had) setenv(name.c_str(), old.c_str(), 1); else unsetenv(name.c_str());
    }
  };
  // Every variable LaunchInfo reads, cleared for the test case.
  std::vector<std::unique_ptr<Var>> clear;
  for (const char* n : {"RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE",
                        "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK",
                        "OMPI_COMM_WORLD_LOCAL_SIZE", "SLURM_PROCID", "SLURM_NTASKS",
                        "SLURM_STEP_NUM_TASKS", "SLURM_LOCALID", "SLURM_NODEID",
                        "SLURM_STEP_TASKS_PER_NODE", "SLURM_TASKS_PER_NODE", "SLURM_CPUS_PER_TASK"})
    clear.push_back(std::make_unique<Var>(n, nullptr));
  CHECK(cohort::launcher_local_rank() == -1);
  {
    Var s1("SLURM_PROCID", "3"), s2("SLURM_NTASKS", "4"), s3("SLURM_LOCALID", "1"),
        s4("SLURM_NODEID", "1"), s5("SLURM_STEP_TASKS_PER_NODE", "2(x2)");
    CHECK(cohort::launcher_local_rank() == 1);
    Var o1("OMPI_COMM_WORLD_RANK", "2"), o2("OMPI_COMM_WORLD_SIZE", "4"),
        o3("OMPI_COMM_WORLD_LOCAL_RANK", "0"), o4("OMPI_COMM_WORLD_LOCAL_SIZE", "2");
    CHECK(cohort::launcher_local_rank() == 0);
    Var t1("RANK", "3"), t2("WORLD_SIZE", "4"), t3("LOCAL_RANK", "3"), t4("LOCAL_WORLD_SIZE", "4");
    CHECK(cohort::launcher_local_rank() == 3);
  }
  // A contradiction is an error naming the variable, not a silent -1.
  Var r("RANK", "0"), w("WORLD_SIZE", "2"), l("LOCAL_RANK", "x1"), lw("LOCAL_WORLD_SIZE", "2");
  std::string err;
  try {
    cohort::launcher_local_rank();
  } catch (const cohort::Error& e) {
    err = e.what();
  }
  CHECK(err.find("LOCAL_RANK='x1' is not an integer") != std::string::npos);
}

TEST_CASE("select_device: clear errors for unknown, unavailable and out-of-range devices") {
  EnvGuard env(nullptr);
  const std::vector<cohort::DeviceFactory> fs = {fake("gpu", 100, 0, "driver missing"),
                                                 fake("cpu", 0, 1)};
  CHECK(cohort::select_device(fs, "").name() == "cpu:0");  // best *available*
  CHECK(error_of([&] { cohort::select_device(fs, "npu"); })
            .find("unknown device 'npu' from the argument (known devices: gpu, cpu)") !=
        std::string::npos);
  CHECK(error_of([&] { cohort::select_device(fs, "gpu"); })
            .find("device 'gpu' from the argument is not available: driver missing") !=
        std::string::npos);
  CHECK(error_of([&] { cohort::select_device(fs, "cpu:2"); })
            .find("index 2 out of range, 1 cpu device present (cpu:0)") != std::string::npos);
  CHECK(error_of([&] { cohort::select_device(fs, "cpu:x"); })
            .find("index 'x' is not a non-negative integer") != std::string::npos);
  CHECK(error_of([&] { cohort::select_device(fs, "cpu:"); }).find("is not a non-negative integer") !=
        std::string::npos);
  const std::vector<cohort::DeviceFactory> none = {fake("gpu", 100, 0, "driver missing")};
  CHECK(error_of([&] { cohort::select_device(none, ""); })
            .find("no device is available (gpu: driver missing)") != std::string::npos);
}

TEST_CASE("the registry of this build") {
  EnvGuard env(nullptr);
  const auto& fs = cohort::device_factories();
  REQUIRE(!fs.empty());
  CHECK(fs.back().name == "host");  // the portable backend is listed last
  CHECK(cohort::device("host").name() == "host");
  CHECK(&cohort::device("host") == &cohort::host_device());
  CHECK(cohort::device().name().size() > 0);
  const std::string err = error_of([] { cohort::device("tpu"); });
  CHECK(err.find("unknown device 'tpu'") != std::string::npos);
  CHECK(err.find("host") != std::string::npos);
  const std::string desc = cohort::describe_devices();
  CHECK(desc.find("host: 1 device") != std::string::npos);
  MESSAGE("devices:\n" << desc);
}

TEST_CASE("streams and events on the host: trivial and exact") {
  cohort::Device& h = cohort::host_device();
  cohort::Stream s(h);
  cohort::Event e(h);
  CHECK(e.query());  // never recorded: complete
  cohort::Tensor t = cohort::Tensor::full({4}, 2.0, cohort::DType::f32, h);
  e.record();        // after the fill on the compute stream
  s.wait(e);
  CHECK(e.query());  // the host finished the fill when its call returned
  e.synchronize();
  s.synchronize();
  cohort::Stream::compute(h).wait(e);
  CHECK(t.to_vector<float>() == std::vector<float>{2, 2, 2, 2});
  cohort::Stream moved(std::move(s));
  moved.synchronize();
}
