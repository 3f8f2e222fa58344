// Parity of the CUDA device with the host device, op by op (ggml's test-backend-ops pattern): each
// check runs the same op on both devices, or against a naive double-precision reference, and
// prints one PASS/FAIL line.
//
// A plain program rather than a doctest case: without a usable GPU (the normal case on CPU-only CI)
// it must print why and exit 77, which ctest reports as skipped (SKIP_RETURN_CODE). Exit 1 on any
// failure, 0 when everything passed.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <exception>
#include <string>
#include <vector>

#include <cohort/core/ops.hpp>
#include <cohort/core/tensor.hpp>
#include <cohort/devices.hpp>

namespace {

using cohort::Device;
using cohort::DType;
using cohort::Shape;
using cohort::Tensor;

int g_checks = 0;
int g_failures = 0;

// Runs `fn`, which returns "" on success or the first mismatch; an exception is a failure too.
template <class Fn>
void check(const std::string& name, Fn fn) {
  std::string why;
  try {
    why = fn();
  } catch (const std::exception& e) {
    why = std::string("threw: ") + e.what();
  }
  ++g_checks;
  if (why.empty()) {
    std::printf("PASS %s\n", name.c_str());
  } else {
    ++g_failures;
    std::printf("FAIL %s: %s\n", name.c_str(), why.c_str());
  }
  std::fflush(stdout);
}

std::string str(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.9g", v);
  return buf;
}

Shape shape1(std::size_t n) { return Shape{static_cast<std::int64_t>(n)}; }

// The tensor's bytes, copied to the host through its own device.
std::vector<unsigned char> bytes(const Tensor& t) {
  std::vector<unsigned char> b(t.nbytes());
  if (!b.empty()) t.device().copy_to_host(b.data(), t.raw(), b.size());
  return b;
}

// "" when both tensors hold the same bytes, else the first differing element.
std::string same_bits(const Tensor& got, const Tensor& want) {
  if (got.nbytes() != want.nbytes())
    return "sizes differ: " + std::to_string(got.nbytes()) + " vs " +
           std::to_string(want.nbytes()) + " bytes";
  const auto g = bytes(got), w = bytes(want);
  const std::size_t es = cohort::dtype_size(got.dtype());
  for (std::size_t i = 0; i < g.size(); ++i)
    if (g[i] != w[i]) {
      std::string s = "element " + std::to_string(i / es) + " differs";
      if (got.dtype() == DType::f32) {
        float a, b;
        std::memcpy(&a, &g[i / es * es], 4);
        std::memcpy(&b, &w[i / es * es], 4);
        s += ": got " + str(a) + ", host " + str(b);
      }
      return s;
    }
  return "";
}

bool both_nan(double a, double b) { return std::isnan(a) && std::isnan(b); }

// "" when |got - want| <= rel * |want| + abs for every element (NaN matches NaN).
std::string close(const std::vector<float>& got, const std::vector<float>& want, double rel,
                  double abs = 0.0) {
  if (got.size() != want.size())
    return "sizes differ: " + std::to_string(got.size()) + " vs " + std::to_string(want.size());
  for (std::size_t i = 0; i < got.size(); ++i) {
    const double g = got[i], w = want[i];
    if (both_nan(g, w) || g == w) continue;
    if (!(std::fabs(g - w) <= rel * std::fabs(w) + abs))
      return "element " + std::to_string(i) + ": got " + str(g) + ", want " + str(w);
  }
  return "";
}

// ---- checks ----

void check_identity(Device& cuda) {
  check("identity", [&]() -> std::string {
    if (cuda.name().rfind("cuda:", 0) != 0) return "name() is '" + cuda.name() + "'";
    if (cuda.type() != cohort::DeviceType::cuda) return "type() is not cuda";
    if (cuda.host_accessible()) return "host_accessible() is true";
    if (&cohort::device("cuda") != &cohort::device("cuda:0")) return "cuda and cuda:0 differ";
    for (DType dt : {DType::f32, DType::f64, DType::bf16, DType::i32, DType::i64, DType::u8})
      if (!cuda.supports(cohort::Op::fill, dt))
        return std::string("fill unsupported for ") + cohort::dtype_name(dt);
    if (!cuda.supports(cohort::Op::gemm, DType::f32)) return "gemm f32 unsupported";
    if (cuda.supports(cohort::Op::add, DType::bf16)) return "add claims bf16 support";
    if (cuda.allocate(0) != nullptr) return "allocate(0) is not nullptr";
    cuda.deallocate(nullptr, 0);
    return "";
  });
}

void check_fill(Device& cuda, Device& host) {
  struct Case {
    DType dt;
    std::vector<double> values;
  };
  const std::vector<Case> cases = {
      {DType::f32, {0.0, 2.5, -1e30, 1.0 / 3.0, -0.0}},
      {DType::f64, {0.0, 1.0 / 3.0, -1e300}},
      {DType::bf16, {0.0, 1.0 / 3.0, -2.0, 65504.0}},
      {DType::i32, {0.0, -7.0, 123456.0}},
      {DType::i64, {0.0, -7.0, 5e15}},
      {DType::u8, {0.0, 1.0, 200.0}},
  };
  for (const auto& c : cases)
    for (double v : c.values)
      for (std::size_t n : {std::size_t{1}, std::size_t{1000}, std::size_t{3000001}})
        check(std::string("fill ") + cohort::dtype_name(c.dt) + " " + str(v) + " n=" +
                  std::to_string(n),
              [&] {
                return same_bits(Tensor::full(shape1(n), v, c.dt, cuda),
                                 Tensor::full(shape1(n), v, c.dt, host));
              });
}

void check_elementwise(Device& cuda, Device& host) {
  for (std::size_t n : {std::size_t{1}, std::size_t{1000}, std::size_t{3000001}}) {
    const Tensor ha = Tensor::uniform(shape1(n), -2.0f, 2.0f, 11, host);
    const Tensor hb = Tensor::uniform(shape1(n), -3.0f, 3.0f, 12, host);
    const Tensor ca = ha.to(cuda), cb = hb.to(cuda);
    const std::string sz = " n=" + std::to_string(n);
    using BinOp = void (*)(const Tensor&, const Tensor&, Tensor&);
    const std::pair<const char*, BinOp> binops[] = {
        {"add", cohort::ops::add}, {"sub", cohort::ops::sub}, {"mul", cohort::ops::mul}};
    for (const auto& [label, op] : binops)
      check(label + sz, [&, op = op] {
        Tensor ho = Tensor::empty(ha.shape(), DType::f32, host);
        Tensor co = Tensor::empty(ca.shape(), DType::f32, cuda);
        op(ha, hb, ho);
        op(ca, cb, co);
        return same_bits(co, ho);
      });
    check("add in place (out aliases a)" + sz, [&] {
      Tensor h = ha.clone(), c = ca.clone();
      cohort::ops::add(h, hb, h);
      cohort::ops::add(c, cb, c);
      return same_bits(c, h);
    });
    check("axpy" + sz, [&] {
      Tensor hy = hb.clone(), cy = cb.clone();
      cohort::ops::axpy(0.37f, ha, hy);
      cohort::ops::axpy(0.37f, ca, cy);
      return same_bits(cy, hy);
    });
    check("scale" + sz, [&] {
      Tensor ho = Tensor::empty(ha.shape(), DType::f32, host);
      Tensor co = Tensor::empty(ca.shape(), DType::f32, cuda);
      cohort::ops::scale(-1.7f, ha, ho);
      cohort::ops::scale(-1.7f, ca, co);
      return same_bits(co, ho);
    });
  }
}

// Rows with ties (values on a coarse grid), NaN, +inf and all -inf, so max/argmax's rules show.
std::vector<float> reduction_input(std::size_t rows, std::size_t cols, Device& host) {
  std::vector<float> x =
      Tensor::uniform(Shape{static_cast<std::int64_t>(rows * cols)}, -1.0f, 1.0f, 21, host)
          .to_vector<float>();
  for (std::size_t r = 0; r < rows; ++r) {
    float* row = x.data() + r * cols;
    switch (r % 6) {
      case 1: row[(r * 7) % cols] = NAN; row[(r * 3) % cols] = NAN; break;
      case 2: for (std::size_t j = 0; j < cols; ++j) row[j] = std::floor(row[j] * 2.0f); break;
      case 3: row[(r * 5) % cols] = INFINITY; break;
      case 4: for (std::size_t j = 0; j < cols; ++j) row[j] = -INFINITY; break;
      default: break;
    }
  }
  return x;
}

void check_reductions(Device& cuda, Device& host) {
  const std::pair<std::size_t, std::size_t> shapes[] = {
      {1, 1}, {7, 33}, {257, 1000}, {3, 100003}, {100000, 10}, {6, 1}};
  for (const auto& [rows, cols] : shapes) {
    const Shape s{static_cast<std::int64_t>(rows), static_cast<std::int64_t>(cols)};
    const Shape rs{static_cast<std::int64_t>(rows)};
    const Tensor hx = Tensor::from_vector(reduction_input(rows, cols, host), s, host);
    const Tensor cx = hx.to(cuda);
    const std::string sz = " [" + std::to_string(rows) + ", " + std::to_string(cols) + "]";
    check("reduce sum" + sz, [&] {
      Tensor ho = Tensor::empty(rs, DType::f32, host), co = Tensor::empty(rs, DType::f32, cuda);
      cohort::ops::sum_last(hx, ho);
      cohort::ops::sum_last(cx, co);
      // Both accumulate in double, in different orders: at most an ulp apart after rounding.
      return close(co.to_vector<float>(), ho.to_vector<float>(), 3e-7, 1e-9);
    });
    check("reduce max" + sz, [&] {
      Tensor ho = Tensor::empty(rs, DType::f32, host), co = Tensor::empty(rs, DType::f32, cuda);
      cohort::ops::max_last(hx, ho);
      cohort::ops::max_last(cx, co);
      return close(co.to_vector<float>(), ho.to_vector<float>(), 0.0);
    });
    check("argmax" + sz, [&]() -> std::string {
      Tensor ho = Tensor::empty(rs, DType::i64, host), co = Tensor::empty(rs, DType::i64, cuda);
      cohort::ops::argmax_last(hx, ho);
      cohort::ops::argmax_last(cx, co);
      const auto g = co.to_vector<std::int64_t>(), w = ho.to_vector<std::int64_t>();
      for (std::size_t r = 0; r < g.size(); ++r)
        if (g[r] != w[r])
          return "row " + std::to_string(r) + ": got " + std::to_string(g[r]) + ", host " +
                 std::to_string(w[r]);
      return "";
    });
  }
  check("sum and max of a whole tensor", [&]() -> std::string {
    const Tensor h = Tensor::uniform(Shape{1000, 37}, -1.0f, 1.0f, 5, host);
    const Tensor c = h.to(cuda);
    const float hs = cohort::ops::sum(h), cs = cohort::ops::sum(c);
    if (std::fabs(hs - cs) > 1e-6f * std::fabs(hs) + 1e-6f)
      return "sum: got " + str(cs) + ", host " + str(hs);
    if (cohort::ops::max(h) != cohort::ops::max(c)) return "max differs";
    return "";
  });
}

void check_random(Device& cuda, Device& host) {
  const std::pair<std::size_t, std::uint64_t> sizes[] = {
      {1, 0}, {7, 3}, {1000, 1}, {3000001, 5}, {1025, (1ull << 34) + 2}};
  for (std::uint64_t seed : {std::uint64_t{0}, std::uint64_t{0xDEADBEEFCAFEF00Dull}})
    for (const auto& [n, offset] : sizes) {
      const std::string sz = " n=" + std::to_string(n) + " offset=" + std::to_string(offset) +
                             " seed=" + std::to_string(seed);
      check("fill_uniform bit-identical" + sz, [&, n = n, offset = offset] {
        return same_bits(Tensor::uniform(shape1(n), -0.05f, 0.05f, seed, cuda, offset),
                         Tensor::uniform(shape1(n), -0.05f, 0.05f, seed, host, offset));
      });
      check("fill_normal within 1e-5" + sz, [&, n = n, offset = offset] {
        // Device logf/sinf/cosf differ from glibc's by an ulp or two.
        return close(Tensor::normal(shape1(n), 0.5f, 2.0f, seed, cuda, offset).to_vector<float>(),
                     Tensor::normal(shape1(n), 0.5f, 2.0f, seed, host, offset).to_vector<float>(),
                     1e-5, 1e-5);
      });
    }
}

// C = alpha op(A) op(B) + beta C0 in double, with the error bound's scale per element.
void naive_gemm(const std::vector<float>& a, bool ta, const std::vector<float>& b, bool tb,
                const std::vector<float>& c0, std::int64_t m, std::int64_t n, std::int64_t k,
                float alpha, float beta, std::vector<double>& ref, std::vector<double>& mag) {
  ref.assign(static_cast<std::size_t>(m * n), 0.0);
  mag.assign(ref.size(), 0.0);
  for (std::int64_t i = 0; i < m; ++i)
    for (std::int64_t j = 0; j < n; ++j) {
      double s = 0.0, sa = 0.0;
      for (std::int64_t p = 0; p < k; ++p) {
        const double x = ta ? a[p * m + i] : a[i * k + p];
        const double y = tb ? b[j * k + p] : b[p * n + j];
        s += x * y;
        sa += std::fabs(x * y);
      }
      const double c = beta == 0.0f ? 0.0 : beta * double(c0[i * n + j]);
      ref[i * n + j] = alpha * s + c;
      mag[i * n + j] = std::fabs(alpha) * sa + std::fabs(c);
    }
}

std::string gemm_case(Device& cuda, Device& host, bool ta, bool tb, std::int64_t m,
                      std::int64_t n, std::int64_t k, float alpha, float beta, bool nan_c) {
  const Shape sa = ta ? Shape{k, m} : Shape{m, k};
  const Shape sb = tb ? Shape{n, k} : Shape{k, n};
  const std::uint64_t seed = static_cast<std::uint64_t>(m * 1000003 + n * 1009 + k);
  const Tensor ha = Tensor::uniform(sa, -1.0f, 1.0f, seed, host);
  const Tensor hb = Tensor::uniform(sb, -1.0f, 1.0f, seed + 1, host);
  const Tensor hc = nan_c ? Tensor::full(Shape{m, n}, NAN, DType::f32, host)
                          : Tensor::uniform(Shape{m, n}, -1.0f, 1.0f, seed + 2, host);
  Tensor cc = hc.to(cuda);
  cohort::ops::gemm(ha.to(cuda), ta, hb.to(cuda), tb, cc, alpha, beta);
  std::vector<double> ref, mag;
  naive_gemm(ha.to_vector<float>(), ta, hb.to_vector<float>(), tb, hc.to_vector<float>(), m, n, k,
             alpha, beta, ref, mag);
  const std::vector<float> got = cc.to_vector<float>();
  for (std::size_t i = 0; i < got.size(); ++i) {
    // FP32 accumulation stays within a few sqrt(k) * 2^-24 of the terms' magnitude (~1e-6 at
    // k = 257); TF32 tensor-core math (inputs rounded to 10 mantissa bits, ~5e-4 each) would
    // exceed this bound, so the check also shows cuBLAS is not silently using TF32.
    const double tol = 8e-6 * mag[i] + 1e-7;
    if (!(std::fabs(got[i] - ref[i]) <= tol))
      return "C[" + std::to_string(i / n) + ", " + std::to_string(i % n) + "]: got " +
             str(got[i]) + ", want " + str(ref[i]);
  }
  return "";
}

void check_gemm(Device& cuda, Device& host) {
  const std::int64_t sizes[] = {1, 7, 33, 257};
  for (bool ta : {false, true})
    for (bool tb : {false, true}) {
      const std::string ops = std::string(ta ? "T" : "N") + (tb ? "T" : "N");
      int failed = 0, total = 0;
      std::string first;
      for (std::int64_t m : sizes)
        for (std::int64_t n : sizes)
          for (std::int64_t k : sizes) {
            ++total;
            std::string why;
            try {
              why = gemm_case(cuda, host, ta, tb, m, n, k, 0.75f, -0.5f, false);
            } catch (const std::exception& e) {
              why = std::string("threw: ") + e.what();
            }
            if (!why.empty() && failed++ == 0)
              first = "m=" + std::to_string(m) + " n=" + std::to_string(n) + " k=" +
                      std::to_string(k) + ": " + why;
          }
      check("gemm " + ops + " alpha=0.75 beta=-0.5, m,n,k in {1,7,33,257} (" +
                std::to_string(total) + " shapes)",
            [&]() -> std::string {
              if (failed == 0) return "";
              return std::to_string(failed) + " shapes failed, first " + first;
            });
      check("gemm " + ops + " beta=0 ignores NaN in C",
            [&] { return gemm_case(cuda, host, ta, tb, 33, 7, 257, 1.0f, 0.0f, true); });
    }
  check("gemm k=0 beta=0 overwrites NaN C with zeros", [&] {
    Tensor c = Tensor::full(Shape{5, 3}, NAN, DType::f32, cuda);
    cohort::ops::gemm(Tensor::empty(Shape{5, 0}, DType::f32, cuda), false,
                      Tensor::empty(Shape{0, 3}, DType::f32, cuda), false, c, 1.0f, 0.0f);
    return close(c.to_vector<float>(), std::vector<float>(15, 0.0f), 0.0);
  });
  check("gemm k=0 beta=2 scales C", [&] {
    Tensor c = Tensor::full(Shape{5, 3}, 1.5, DType::f32, cuda);
    cohort::ops::gemm(Tensor::empty(Shape{0, 5}, DType::f32, cuda), true,
                      Tensor::empty(Shape{3, 0}, DType::f32, cuda), true, c, 1.0f, 2.0f);
    return close(c.to_vector<float>(), std::vector<float>(15, 3.0f), 0.0);
  });
  check("matmul matches host", [&] {
    const Tensor a = Tensor::uniform(Shape{65, 130}, -1.0f, 1.0f, 3, host);
    const Tensor b = Tensor::uniform(Shape{130, 17}, -1.0f, 1.0f, 4, host);
    return close(cohort::ops::matmul(a.to(cuda), b.to(cuda)).to_vector<float>(),
                 cohort::ops::matmul(a, b).to_vector<float>(), 1e-4, 1e-5);
  });
}

void check_copies(Device& cuda, Device& host) {
  check("round trip u8 (13 bytes) host -> cuda -> host", [&] {
    std::vector<std::uint8_t> v(13);
    for (std::size_t i = 0; i < v.size(); ++i) v[i] = static_cast<std::uint8_t>(i * 19 + 3);
    const Tensor h = Tensor::from_vector(v, Shape{13}, host);
    return same_bits(h.to(cuda).to(host), h);
  });
  check("round trip f64 and i64 via from_vector/to_vector", [&]() -> std::string {
    const std::vector<double> d = {1.0 / 3.0, -0.0, 1e300, NAN};
    const std::vector<std::int64_t> i = {-1, 1ll << 40, 0, 7};
    const auto d2 = Tensor::from_vector(d, Shape{2, 2}, cuda).to_vector<double>();
    const auto i2 = Tensor::from_vector(i, Shape{4}, cuda).to_vector<std::int64_t>();
    if (std::memcmp(d.data(), d2.data(), sizeof(double) * d.size()) != 0) return "f64 differs";
    if (i != i2) return "i64 differs";
    return "";
  });
  check("cuda -> cuda clone and copy_from", [&]() -> std::string {
    const Tensor h = Tensor::uniform(Shape{1000, 3}, -1.0f, 1.0f, 9, host);
    const Tensor c = h.to(cuda);
    Tensor c2 = Tensor::zeros(Shape{1000, 3}, DType::f32, cuda);
    c2.copy_from(c);
    if (auto why = same_bits(c.clone(), h); !why.empty()) return "clone: " + why;
    return same_bits(c2, h);
  });
  check("slice of a cuda tensor copies the right rows", [&] {
    const Tensor h = Tensor::uniform(Shape{10, 3}, -1.0f, 1.0f, 10, host);
    return same_bits(h.to(cuda).slice(2, 5).to(host), h.slice(2, 5));
  });
  check("copy_from host into an existing cuda tensor", [&] {
    const Tensor h = Tensor::uniform(Shape{257}, -1.0f, 1.0f, 8, host);
    Tensor c = Tensor::zeros(Shape{257}, DType::f32, cuda);
    c.copy_from(h);
    return same_bits(c, h);
  });
  check("empty tensor round trip", [&]() -> std::string {
    const Tensor c = Tensor::empty(Shape{0, 4}, DType::f32, cuda);
    return c.to(host).numel() == 0 ? "" : "numel != 0";
  });
}

void check_errors(Device& cuda, Device& host) {
  check("allocation failure throws cohort::Error naming the device and size, then recovers",
        [&]() -> std::string {
          const std::size_t huge = std::size_t{1} << 50;  // 1 PiB
          try {
            cuda.allocate(huge);
            return "allocate(1 PiB) did not throw";
          } catch (const cohort::Error& e) {
            const std::string msg = e.what();
            if (e.backend() != "cuda") return "backend is '" + e.backend() + "'";
            if (msg.find(cuda.name()) == std::string::npos ||
                msg.find(std::to_string(huge)) == std::string::npos)
              return "message lacks device or size: " + msg;
            std::printf("     (message: %s)\n", msg.c_str());
          }
          // The failure must not linger as a "last error" that a later launch check reports.
          const Tensor h = Tensor::uniform(Shape{100}, -1.0f, 1.0f, 1, host);
          Tensor c = h.to(cuda), ho = h.clone();
          cohort::ops::add(c, c, c);
          cohort::ops::add(ho, ho, ho);
          return same_bits(c, ho);
        });
  check("unsupported dtype is refused", [&]() -> std::string {
    Tensor a = Tensor::zeros(Shape{4}, DType::bf16, cuda);
    try {
      cohort::ops::add(a, a, a);
    } catch (const cohort::Error&) {
      return "";
    }
    return "add on bf16 did not throw";
  });
  check("synchronize", [&] {
    cuda.synchronize();
    return std::string();
  });
}

}  // namespace

int main() {
  std::printf("%s", cohort::describe_devices().c_str());
  const cohort::DeviceFactory* factory = nullptr;
  for (const auto& f : cohort::device_factories())
    if (f.name == "cuda") factory = &f;
  if (factory == nullptr) {
    std::printf("SKIPPED: this build of cohort has no CUDA backend (COHORT_HAVE_CUDA=0)\n");
    return 77;
  }
  std::string why;
  if (factory->count(&why) == 0) {
    std::printf("SKIPPED: %s\n", why.empty() ? "no CUDA device" : why.c_str());
    return 77;
  }
  try {
    Device& cuda = cohort::device("cuda");
    Device& host = cohort::host_device();
    std::printf("testing %s against %s\n", cuda.name().c_str(), host.name().c_str());
    check_identity(cuda);
    check_copies(cuda, host);
    check_fill(cuda, host);
    check_elementwise(cuda, host);
    check_reductions(cuda, host);
    check_random(cuda, host);
    check_gemm(cuda, host);
    check_errors(cuda, host);
  } catch (const std::exception& e) {
    std::printf("FAIL setup: %s\n", e.what());
    return 1;
  }
  std::printf("%d checks, %d failed\n", g_checks, g_failures);
  return g_failures == 0 ? 0 : 1;
}
