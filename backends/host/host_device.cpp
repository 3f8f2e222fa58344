// Host op table: every op is a Kokkos parallel pattern over raw host pointers, applying the
// shared functors of cohort/detail/kernels.hpp (the same ones the CUDA backend launches).
#include "host_device.hpp"

#include <Kokkos_Core.hpp>

#include <cstdlib>
#include <cstring>
#include <limits>

#include "cohort/core/error.hpp"
#include "cohort/detail/kernels.hpp"

namespace cohort::host {
namespace {

using Exec = Kokkos::Serial;
using Range = Kokkos::RangePolicy<Exec, Kokkos::IndexType<std::int64_t>>;

Range range(std::size_t n) { return Range(0, static_cast<std::int64_t>(n)); }

template <class F>
void map1(const char* label, F f, const float* x, float* out, std::size_t n) {
  Kokkos::parallel_for(label, range(n), [=](std::int64_t i) { out[i] = f(x[i]); });
}

template <class F>
void map2(const char* label, F f, const float* a, const float* b, float* out, std::size_t n) {
  Kokkos::parallel_for(label, range(n), [=](std::int64_t i) { out[i] = f(a[i], b[i]); });
}

template <class T>
void fill_typed(void* x, std::size_t n, T v) {
  T* p = static_cast<T*>(x);
  Kokkos::parallel_for("cohort::fill", range(n), [=](std::int64_t i) { p[i] = v; });
}

template <class G>
void generate(const char* label, float* x, std::size_t n, std::uint64_t offset, G g) {
  Kokkos::parallel_for(label, range(n),
                       [=](std::int64_t i) { x[i] = g(offset + static_cast<std::uint64_t>(i)); });
}

}  // namespace

HostDevice::HostDevice() {
  ensure_kokkos();
  configure_threads();
}

void* HostDevice::allocate(std::size_t bytes) {
  if (bytes == 0) return nullptr;
  const std::size_t rounded = (bytes + 63) / 64 * 64;
  void* p = std::aligned_alloc(64, rounded);
  COHORT_CHECK_IN("host", p != nullptr, "out of host memory allocating ", bytes, " bytes");
  return p;
}

void HostDevice::deallocate(void* p, std::size_t) noexcept { std::free(p); }

void HostDevice::copy_from_host(void* dst, const void* src, std::size_t bytes) {
  if (bytes) std::memmove(dst, src, bytes);
}
void HostDevice::copy_to_host(void* dst, const void* src, std::size_t bytes) {
  if (bytes) std::memmove(dst, src, bytes);
}
void HostDevice::copy(void* dst, const void* src, std::size_t bytes) {
  if (bytes) std::memmove(dst, src, bytes);
}

bool HostDevice::supports(Op op, DType dtype) const {
  if (op == Op::fill) return true;
  return dtype == DType::f32 && op != Op::count_;
}

void HostDevice::fill(void* x, DType dtype, std::size_t n, double v) {
  switch (dtype) {
    case DType::f32: return fill_typed<float>(x, n, static_cast<float>(v));
    case DType::f64: return fill_typed<double>(x, n, v);
    case DType::bf16: return fill_typed<std::uint16_t>(x, n, float_to_bf16(static_cast<float>(v)));
    case DType::i32: return fill_typed<std::int32_t>(x, n, static_cast<std::int32_t>(v));
    case DType::i64: return fill_typed<std::int64_t>(x, n, static_cast<std::int64_t>(v));
    case DType::u8: return fill_typed<std::uint8_t>(x, n, static_cast<std::uint8_t>(v));
  }
}

void HostDevice::add(const float* a, const float* b, float* out, std::size_t n) {
  map2("cohort::add", kernels::Add{}, a, b, out, n);
}
void HostDevice::sub(const float* a, const float* b, float* out, std::size_t n) {
  map2("cohort::sub", kernels::Sub{}, a, b, out, n);
}
void HostDevice::mul(const float* a, const float* b, float* out, std::size_t n) {
  map2("cohort::mul", kernels::Mul{}, a, b, out, n);
}
void HostDevice::axpy(float alpha, const float* x, float* y, std::size_t n) {
  map2("cohort::axpy", kernels::Axpy{alpha}, x, y, y, n);
}
void HostDevice::scale(float alpha, const float* x, float* out, std::size_t n) {
  map1("cohort::scale", kernels::Scale{alpha}, x, out, n);
}

void HostDevice::reduce(ReduceOp op, const float* x, std::size_t rows, std::size_t cols,
                        float* out) {
  const auto c = static_cast<std::int64_t>(cols);
  if (op == ReduceOp::sum) {
    // One row per iteration, accumulated in double; rows are independent (no nested dispatch).
    Kokkos::parallel_for("cohort::reduce_sum", range(rows), [=](std::int64_t r) {
      double acc = 0.0;
      for (std::int64_t j = 0; j < c; ++j) acc += x[r * c + j];
      out[r] = static_cast<float>(acc);
    });
  } else {
    Kokkos::parallel_for("cohort::reduce_max", range(rows), [=](std::int64_t r) {
      // NaN wins, as in torch.max.
      float m = x[r * c];
      for (std::int64_t j = 1; j < c && m == m; ++j) {
        const float v = x[r * c + j];
        if (v > m || v != v) m = v;
      }
      out[r] = m;
    });
  }
}

void HostDevice::argmax(const float* x, std::size_t rows, std::size_t cols, std::int64_t* out) {
  const auto c = static_cast<std::int64_t>(cols);
  Kokkos::parallel_for("cohort::argmax", range(rows), [=](std::int64_t r) {
    std::int64_t best = 0;
    float m = x[r * c];
    for (std::int64_t j = 1; j < c && m == m; ++j) {
      const float v = x[r * c + j];
      if (v > m || v != v) {
        m = v;
        best = j;
      }
    }
    out[r] = best;
  });
}

void HostDevice::gemm(const GemmArgs& args) { sgemm(args); }

void HostDevice::fill_uniform(float* x, std::size_t n, std::uint64_t seed, std::uint64_t offset,
                              float lo, float hi) {
  generate("cohort::fill_uniform", x, n, offset, kernels::UniformAt{seed, lo, hi});
}
void HostDevice::fill_normal(float* x, std::size_t n, std::uint64_t seed, std::uint64_t offset,
                             float mean, float stddev) {
  generate("cohort::fill_normal", x, n, offset, kernels::NormalAt{seed, mean, stddev});
}

DeviceFactory factory() {
  DeviceFactory f;
  f.name = "host";
  f.score = 0;
  f.count = [](std::string*) { return 1; };
  f.get = [](int) -> Device& {
    static HostDevice* device = new HostDevice();  // never destroyed: tensors in statics outlive it
    return *device;
  };
  return f;
}

}  // namespace cohort::host
