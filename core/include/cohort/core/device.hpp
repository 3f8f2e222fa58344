// The device abstraction: one object per compute device (the host, each GPU) that owns memory
// and runs the op table the layers call. Layers and the Tensor front end talk only to this
// interface; Kokkos, CUDA, cuDNN and cuBLAS types stay inside each backend's own files.
//
// Contracts that hold for every entry of the op table:
//  - pointers are memory allocated by this device, contiguous, holding `n` elements (or the stated
//    matrix extents); `out` may alias an input of the same size;
//  - ops are enqueued in order on the device's single stream: on the host they have finished when
//    the call returns; on a GPU they may still be running, and synchronize() or a device-to-host
//    copy waits for them;
//  - a backend implements every op for which supports(op, dtype) is true and throws
//    cohort::Error (naming itself and the op) for the rest.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "cohort/core/dtype.hpp"

namespace cohort {

enum class DeviceType { host, cuda };

enum class Op : int {
  fill,          // every dtype
  add,           // out = a + b
  sub,           // out = a - b
  mul,           // out = a * b
  axpy,          // y += alpha * x
  scale,         // out = alpha * x
  reduce_sum,    // out[r] = sum_c x[r, c]
  reduce_max,    // out[r] = max_c x[r, c]
  argmax,        // out[r] = first c with x[r, c] maximal (i64)
  gemm,          // C = alpha op(A) op(B) + beta C
  fill_uniform,  // Philox, same numbers on every device
  fill_normal,
  count_
};
const char* op_name(Op op);

enum class ReduceOp { sum, max };

// Row-major GEMM: C[m x n] = alpha * op(A)[m x k] * op(B)[k x n] + beta * C. op(X) is X or X^T.
// lda/ldb/ldc are the row strides of A, B, C as stored (A is m x k when !trans_a, k x m when trans_a).
// beta == 0 ignores C's old contents (NaN there does not propagate), as BLAS does.
struct GemmArgs {
  bool trans_a = false, trans_b = false;
  std::int64_t m = 0, n = 0, k = 0;
  float alpha = 1.0f;
  const float* a = nullptr;
  std::int64_t lda = 0;
  const float* b = nullptr;
  std::int64_t ldb = 0;
  float beta = 0.0f;
  float* c = nullptr;
  std::int64_t ldc = 0;
};

class Device {
 public:
  virtual ~Device() = default;
  Device() = default;
  Device(const Device&) = delete;
  Device& operator=(const Device&) = delete;

  // --- identity ---
  virtual std::string name() const = 0;  // "host", "cuda:0"
  virtual DeviceType type() const = 0;
  virtual int index() const { return 0; }
  // True when the host may dereference this device's pointers directly.
  virtual bool host_accessible() const = 0;

  // --- memory ---
  // Returns memory aligned to at least 64 bytes, or throws cohort::Error naming the device and the
  // size. allocate(0) returns nullptr. deallocate(nullptr, 0) is a no-op.
  virtual void* allocate(std::size_t bytes) = 0;
  virtual void deallocate(void* p, std::size_t bytes) noexcept = 0;
  // Copies block the calling thread until the bytes are in place (d2h waits for queued ops).
  virtual void copy_from_host(void* dst, const void* host_src, std::size_t bytes) = 0;
  virtual void copy_to_host(void* host_dst, const void* src, std::size_t bytes) = 0;
  // Device-to-device within this device; enqueued on the stream.
  virtual void copy(void* dst, const void* src, std::size_t bytes) = 0;
  // Waits for every op enqueued so far.
  virtual void synchronize() = 0;

  // --- op table ---
  virtual bool supports(Op op, DType dtype) const = 0;

  virtual void fill(void* x, DType dtype, std::size_t n, double value) = 0;
  virtual void add(const float* a, const float* b, float* out, std::size_t n) = 0;
  virtual void sub(const float* a, const float* b, float* out, std::size_t n) = 0;
  virtual void mul(const float* a, const float* b, float* out, std::size_t n) = 0;
  virtual void axpy(float alpha, const float* x, float* y, std::size_t n) = 0;
  virtual void scale(float alpha, const float* x, float* out, std::size_t n) = 0;
  // Reduces each row of a [rows x cols] matrix; cols >= 1. Sums accumulate in double.
  virtual void reduce(ReduceOp op, const float* x, std::size_t rows, std::size_t cols,
                      float* out) = 0;
  virtual void argmax(const float* x, std::size_t rows, std::size_t cols, std::int64_t* out) = 0;
  virtual void gemm(const GemmArgs& args) = 0;
  // Element i of x gets the Philox4x32-10 number for stream position offset + i under `seed`,
  // so the same (seed, offset) gives the same values on every device and for any split of x.
  virtual void fill_uniform(float* x, std::size_t n, std::uint64_t seed, std::uint64_t offset,
                            float lo, float hi) = 0;
  virtual void fill_normal(float* x, std::size_t n, std::uint64_t seed, std::uint64_t offset,
                           float mean, float stddev) = 0;
};

// How a backend offers its devices to the registry (see backends/registry.cpp). The registry file
// lists one factory per backend, by hand, behind its build flag.
struct DeviceFactory {
  std::string name;  // "cuda", "host"
  int score = 0;     // higher wins when the user asks for the best available device
  // Number of devices of this kind usable now (0 when none); `why_not` explains a 0.
  std::function<int(std::string* why_not)> count;
  // The device with this index (0 <= index < count()); the factory owns it for the program's life.
  std::function<Device&(int index)> get;
};

// Picks a device from `factories` by spec: "" means the environment variable COHORT_DEVICE if set,
// else the best available (highest score with count() > 0). "NAME" means NAME:0; "NAME:i" the i-th.
// Unknown names, bad indices and unavailable devices throw cohort::Error listing what is known and,
// for an unavailable one, why.
Device& select_device(const std::vector<DeviceFactory>& factories, const std::string& spec);

}  // namespace cohort
