// Device selection policy, driven with fake factories, plus the real registry of this build.
#include <doctest/doctest.h>

#include "common/testing.hpp"

using cohort::testing::error_of;

#include <cstdlib>
#include <functional>
#include <memory>

#include "cohort/devices.hpp"
#include "cohort/core/error.hpp"

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
  bool supports(cohort::Op, cohort::DType) const override { return false; }
  void fill(void*, cohort::DType, std::size_t, double) override {}
  void add(const float*, const float*, float*, std::size_t) override {}
  void sub(const float*, const float*, float*, std::size_t) override {}
  void mul(const float*, const float*, float*, std::size_t) override {}
  void axpy(float, const float*, float*, std::size_t) override {}
  void scale(float, const float*, float*, std::size_t) override {}
  void reduce(cohort::ReduceOp, const float*, std::size_t, std::size_t, float*) override {}
  void argmax(const float*, std::size_t, std::size_t, std::int64_t*) override {}
  void gemm(const cohort::GemmArgs&) override {}
  void fill_uniform(float*, std::size_t, std::uint64_t, std::uint64_t, float, float) override {}
  void fill_normal(float*, std::size_t, std::uint64_t, std::uint64_t, float, float) override {}
  // --- optimizer ops ---
  void sgd_step(const cohort::SgdArgs&, float*, const float*, float*, std::size_t) override {}
  void adam_step(const cohort::AdamArgs&, float*, const float*, float*, float*, float*,
                 std::size_t) override {}
  void adadelta_step(const cohort::AdadeltaArgs&, float*, const float*, float*, float*,
                     std::size_t) override {}
  void rmsprop_step(const cohort::RmspropArgs&, float*, const float*, float*, float*, float*,
                    std::size_t) override {}
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
