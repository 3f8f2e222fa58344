// The host device: ordinary memory, every op run with Kokkos on the host execution space that
// Debian's Kokkos ships (Serial), GEMM through oneDNN's sgemm. Internal header: nothing outside
// backends/ includes it, and it names no Kokkos or oneDNN type.
#pragma once

#include "cohort/core/device.hpp"

namespace cohort::host {

class HostDevice final : public Device {
 public:
  HostDevice();

  std::string name() const override { return "host"; }
  DeviceType type() const override { return DeviceType::host; }
  bool host_accessible() const override { return true; }

  void* allocate(std::size_t bytes) override;
  void deallocate(void* p, std::size_t bytes) noexcept override;
  void copy_from_host(void* dst, const void* src, std::size_t bytes) override;
  void copy_to_host(void* dst, const void* src, std::size_t bytes) override;
  void copy(void* dst, const void* src, std::size_t bytes) override;
  void synchronize() override {}

  bool supports(Op op, DType dtype) const override;
  void fill(void* x, DType dtype, std::size_t n, double value) override;
  void add(const float* a, const float* b, float* out, std::size_t n) override;
  void sub(const float* a, const float* b, float* out, std::size_t n) override;
  void mul(const float* a, const float* b, float* out, std::size_t n) override;
  void axpy(float alpha, const float* x, float* y, std::size_t n) override;
  void scale(float alpha, const float* x, float* out, std::size_t n) override;
  void reduce(ReduceOp op, const float* x, std::size_t rows, std::size_t cols,
              float* out) override;
  void argmax(const float* x, std::size_t rows, std::size_t cols, std::int64_t* out) override;
  void gemm(const GemmArgs& args) override;
  void fill_uniform(float* x, std::size_t n, std::uint64_t seed, std::uint64_t offset, float lo,
                    float hi) override;
  void fill_normal(float* x, std::size_t n, std::uint64_t seed, std::uint64_t offset, float mean,
                   float stddev) override;
};

// The registry's entry for this backend.
DeviceFactory factory();

// Initialises Kokkos on first use unless the program already did; finalises it at exit only if
// cohort initialised it (a program that initialised Kokkos itself keeps ownership).
void ensure_kokkos();

// GEMM through oneDNN (kept in its own file so the BLAS choice is one room).
void sgemm(const GemmArgs& g);

}  // namespace cohort::host
