// Parity of the CUDA device with the host device, op by op (ggml's test-backend-ops pattern): each
// check runs the same op on both devices, or against a naive double-precision reference, and
// prints one PASS/FAIL line.
//
// A plain program rather than a doctest case: without a usable GPU (the normal case on CPU-only CI)
// it must print why and exit 77, which ctest reports as skipped (SKIP_RETURN_CODE). Exit 1 on any
// failure, 0 when everything passed.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <exception>
#include <string>
#include <vector>

#include <cohort/core/layer_ops.hpp>
#include <cohort/core/ops.hpp>
#include <cohort/core/optim_ops.hpp>
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

// ---- optimizer ops: the shared functors of cohort/detail/optim_kernels.hpp, compiled without FMA
// on both sides and using only correctly rounded sqrt and division, so the GPU's parameters and
// state must equal the host's bit for bit. ----

// A parameter, its gradient and `states` state tensors on the host (states drawn from [0, 1), as
// running averages of squares are non-negative) and copies of all on the GPU.
struct OptimOperands {
  std::vector<Tensor> host, cuda;  // [0] param, [1] grad, [2..] state
};

OptimOperands optim_operands(Device& cuda, Device& host, std::size_t n, int states,
                             std::uint64_t seed) {
  OptimOperands o;
  o.host.push_back(Tensor::uniform(shape1(n), -2.0f, 2.0f, seed, host));
  o.host.push_back(Tensor::uniform(shape1(n), -3.0f, 3.0f, seed + 1, host));
  for (int k = 0; k < states; ++k)
    o.host.push_back(Tensor::uniform(shape1(n), 0.0f, 1.0f, seed + 2 + k, host));
  for (const Tensor& t : o.host) o.cuda.push_back(t.to(cuda));
  return o;
}

// "" when every operand matches bit for bit after the op ran on both devices.
std::string same_operands(const OptimOperands& o) {
  const char* names[] = {"param", "grad", "state 0", "state 1", "state 2"};
  for (std::size_t k = 0; k < o.host.size(); ++k)
    if (auto why = same_bits(o.cuda[k], o.host[k]); !why.empty())
      return std::string(names[k]) + ": " + why;
  return "";
}

void check_optim(Device& cuda, Device& host) {
  check("optimizer ops are supported on f32", [&]() -> std::string {
    for (cohort::Op op : {cohort::Op::sgd_step, cohort::Op::adam_step, cohort::Op::adadelta_step,
                          cohort::Op::rmsprop_step})
      if (!cuda.supports(op, DType::f32)) return std::string(cohort::op_name(op)) + " unsupported";
    return "";
  });
  const std::size_t sizes[] = {1, 1000, 3000001};
  Tensor none;

  struct SgdCase { const char* label; cohort::SgdArgs a; };
  const SgdCase sgd_cases[] = {
      {"plain", {-0.1f, 0.0f, 1.0f, 0.0f, false, false, false}},
      {"momentum first step", {-0.1f, 0.9f, 1.0f, 0.0f, false, false, true}},
      {"momentum dampening weight_decay", {-0.05f, 0.9f, 0.7f, 0.01f, false, false, false}},
      {"nesterov maximize", {-0.05f, 0.9f, 1.0f, 0.01f, true, true, false}},
  };
  for (const auto& c : sgd_cases)
    for (std::size_t n : sizes)
      check(std::string("sgd_step ") + c.label + " n=" + std::to_string(n), [&] {
        OptimOperands o = optim_operands(cuda, host, n, 1, 31);
        cohort::ops::sgd_step(o.host[0], o.host[1], o.host[2], c.a);
        cohort::ops::sgd_step(o.cuda[0], o.cuda[1], o.cuda[2], c.a);
        return same_operands(o);
      });

  // Coefficients as the optimizer derives them at step 3 (lr 1e-3, betas 0.9 / 0.999).
  auto adam_args = [](bool decoupled, bool amsgrad, bool maximize, float wd) {
    cohort::AdamArgs a;
    a.beta1 = 0.9f;
    a.one_minus_beta1 = static_cast<float>(1.0 - 0.9);
    a.beta2 = 0.999f;
    a.one_minus_beta2 = static_cast<float>(1.0 - 0.999);
    a.eps = 1e-8f;
    a.decoupled_weight_decay = decoupled;
    a.weight_decay = decoupled ? 0.0f : wd;
    a.param_scale = decoupled ? static_cast<float>(1.0 - 1e-3 * wd) : 1.0f;
    a.neg_step_size = static_cast<float>(-1e-3 / (1.0 - std::pow(0.9, 3)));
    a.bias_correction2_sqrt = static_cast<float>(std::sqrt(1.0 - std::pow(0.999, 3)));
    a.amsgrad = amsgrad;
    a.maximize = maximize;
    return a;
  };
  struct AdamCase { const char* label; cohort::AdamArgs a; };
  const AdamCase adam_cases[] = {
      {"Adam", adam_args(false, false, false, 0.0f)},
      {"Adam amsgrad weight_decay", adam_args(false, true, false, 0.01f)},
      {"AdamW amsgrad maximize", adam_args(true, true, true, 0.1f)},
  };
  for (const auto& c : adam_cases)
    for (std::size_t n : sizes)
      check(std::string("adam_step ") + c.label + " n=" + std::to_string(n), [&] {
        OptimOperands o = optim_operands(cuda, host, n, 3, 41);
        cohort::ops::adam_step(o.host[0], o.host[1], o.host[2], o.host[3], o.host[4], c.a);
        cohort::ops::adam_step(o.cuda[0], o.cuda[1], o.cuda[2], o.cuda[3], o.cuda[4], c.a);
        return same_operands(o);
      });

  struct AdadeltaCase { const char* label; cohort::AdadeltaArgs a; };
  const AdadeltaCase adadelta_cases[] = {
      {"defaults", {-1.0f, 0.9f, static_cast<float>(1.0 - 0.9), 1e-6f, 0.0f, false}},
      {"weight_decay maximize", {-0.5f, 0.8f, static_cast<float>(1.0 - 0.8), 1e-4f, 0.01f, true}},
  };
  for (const auto& c : adadelta_cases)
    for (std::size_t n : sizes)
      check(std::string("adadelta_step ") + c.label + " n=" + std::to_string(n), [&] {
        OptimOperands o = optim_operands(cuda, host, n, 2, 51);
        cohort::ops::adadelta_step(o.host[0], o.host[1], o.host[2], o.host[3], c.a);
        cohort::ops::adadelta_step(o.cuda[0], o.cuda[1], o.cuda[2], o.cuda[3], c.a);
        return same_operands(o);
      });

  struct RmspropCase { const char* label; cohort::RmspropArgs a; };
  const float oma = static_cast<float>(1.0 - 0.99);
  const RmspropCase rmsprop_cases[] = {
      {"defaults", {-0.01f, 0.99f, oma, 1e-8f, 0.0f, 0.0f, false, false}},
      {"centered", {-0.01f, 0.99f, oma, 1e-8f, 0.0f, 0.0f, true, false}},
      {"centered momentum weight_decay maximize",
       {-0.005f, 0.99f, oma, 1e-6f, 0.02f, 0.9f, true, true}},
  };
  for (const auto& c : rmsprop_cases)
    for (std::size_t n : sizes)
      check(std::string("rmsprop_step ") + c.label + " n=" + std::to_string(n), [&] {
        // State 0 square_avg; state 1 grad_avg (scaled down so that square_avg - grad_avg^2 stays
        // positive, as it does in training); state 2 the momentum buffer.
        OptimOperands o = optim_operands(cuda, host, n, 3, 61);
        cohort::ops::scale(0.5f, o.host[3], o.host[3]);
        cohort::ops::scale(0.5f, o.cuda[3], o.cuda[3]);
        Tensor& ga_h = c.a.centered ? o.host[3] : none;
        Tensor& ga_c = c.a.centered ? o.cuda[3] : none;
        Tensor& mb_h = c.a.momentum > 0.0f ? o.host[4] : none;
        Tensor& mb_c = c.a.momentum > 0.0f ? o.cuda[4] : none;
        cohort::ops::rmsprop_step(o.host[0], o.host[1], o.host[2], ga_h, mb_h, c.a);
        cohort::ops::rmsprop_step(o.cuda[0], o.cuda[1], o.cuda[2], ga_c, mb_c, c.a);
        return same_operands(o);
      });
}

// ---- layer ops: the shared implementation of cohort/detail/layer_impl.hpp. Element-wise and
// index-only ops (relu, pooling, dropout, nll) must match the host bit for bit; ops that sum
// (convolution via cuBLAS against oneDNN, norms, softmax) or call transcendental functions (the
// GPU's expf/erff/tanhf against glibc's) agree to a few ulps of their scale. ----

// Runs `op` on host copies and on GPU copies of `inputs`; `op` returns its outputs.
template <class Op>
std::string layer_parity(const std::vector<Tensor>& inputs, Device& cuda, Op op, double rel,
                         double abs, bool exact = false) {
  std::vector<Tensor> on_cuda;
  for (const Tensor& t : inputs) on_cuda.push_back(t.to(cuda));
  const std::vector<Tensor> want = op(inputs);
  const std::vector<Tensor> got = op(on_cuda);
  for (std::size_t k = 0; k < want.size(); ++k) {
    std::string why;
    if (exact || want[k].dtype() != DType::f32) {
      why = same_bits(got[k], want[k]);
    } else {
      double scale = 0.0;
      for (float v : want[k].to_vector<float>()) scale = std::max(scale, double(std::fabs(v)));
      why = close(got[k].to_vector<float>(), want[k].to_vector<float>(), rel, abs * (1.0 + scale));
    }
    if (!why.empty()) return "output " + std::to_string(k) + ": " + why;
  }
  return "";
}

Tensor like(const Tensor& t, DType dt = DType::f32) {
  return Tensor::zeros(t.shape(), dt, t.device());
}

void check_layers(Device& cuda, Device& host) {
  namespace lo = cohort::ops;
  using cohort::Activation;
  check("layer ops are supported on f32", [&]() -> std::string {
    for (int op = static_cast<int>(cohort::Op::conv2d_forward);
         op <= static_cast<int>(cohort::Op::cross_entropy_backward); ++op)
      if (!cuda.supports(static_cast<cohort::Op>(op), DType::f32))
        return std::string(cohort::op_name(static_cast<cohort::Op>(op))) + " unsupported";
    return "";
  });

  struct ConvCase {
    const char* label;
    Shape x, w;
    lo::Conv2dParams p;
  };
  const ConvCase convs[] = {
      {"3x3", {4, 3, 17, 15}, {8, 3, 3, 3}, {}},
      {"stride 2 pad 1 dilation 2", {2, 4, 19, 19}, {6, 4, 3, 3}, {2, 2, 1, 1, 2, 2, 1}},
      {"groups 2", {2, 4, 9, 9}, {6, 2, 3, 3}, {1, 1, 1, 1, 1, 1, 2}},
      {"1x1 (no im2col)", {3, 16, 7, 7}, {8, 16, 1, 1}, {}},
      {"MNIST conv2 at batch 8", {8, 32, 26, 26}, {64, 32, 3, 3}, {}},
  };
  for (const auto& c : convs) {
    const Tensor x = Tensor::uniform(c.x, -1.0f, 1.0f, 1, host);
    const Tensor w = Tensor::uniform(c.w, -0.3f, 0.3f, 2, host);
    const Tensor b = Tensor::uniform(Shape{c.w[0]}, -0.5f, 0.5f, 3, host);
    const Shape ys = lo::conv2d_output_shape(c.x, c.w, c.p);
    const Tensor dy = Tensor::uniform(ys, -1.0f, 1.0f, 4, host);
    check(std::string("conv2d forward + bias + relu, ") + c.label, [&] {
      return layer_parity({x, w, b}, cuda, [&](const std::vector<Tensor>& in) {
        Tensor y = Tensor::empty(ys, DType::f32, in[0].device());
        lo::conv2d_forward(in[0], in[1], &in[2], y, c.p, Activation::relu);
        return std::vector<Tensor>{y};
      }, 1e-5, 1e-6);
    });
    check(std::string("conv2d backward data and filter, ") + c.label, [&] {
      return layer_parity({x, w, dy}, cuda, [&](const std::vector<Tensor>& in) {
        Tensor dx = like(in[0]), dw = like(in[1]);
        Tensor db = Tensor::zeros(Shape{c.w[0]}, DType::f32, in[0].device());
        lo::conv2d_backward_data(in[2], in[1], dx, c.p);
        lo::conv2d_backward_filter(in[0], in[2], dw, &db, c.p);
        return std::vector<Tensor>{dx, dw, db};
      }, 1e-5, 1e-6);
    });
  }

  for (auto kind : {cohort::PoolKind::max, cohort::PoolKind::avg}) {
    lo::Pool2dParams p;
    p.kind = kind;
    p.kh = p.kw = 3;
    p.stride_h = p.stride_w = 2;
    p.pad_h = p.pad_w = 1;
    p.count_include_pad = false;
    const Tensor x = Tensor::uniform(Shape{3, 5, 13, 11}, -1.0f, 1.0f, 5, host);
    const Shape ys = lo::pool2d_output_shape(x.shape(), p);
    const Tensor dy = Tensor::uniform(ys, -1.0f, 1.0f, 6, host);
    const bool is_max = kind == cohort::PoolKind::max;
    check(std::string(is_max ? "max" : "avg") + " pool forward and backward", [&] {
      return layer_parity({x, dy}, cuda, [&](const std::vector<Tensor>& in) {
        Tensor y = Tensor::empty(ys, DType::f32, in[0].device());
        Tensor idx = Tensor::zeros(ys, DType::i32, in[0].device());
        Tensor dx = like(in[0]);
        lo::pool2d_forward(in[0], y, is_max ? &idx : nullptr, p);
        lo::pool2d_backward(in[1], is_max ? &idx : nullptr, dx, p);
        return std::vector<Tensor>{y, idx, dx};
      }, 1e-6, 1e-7, is_max);
    });
  }

  const Tensor ax = Tensor::uniform(Shape{100003}, -4.0f, 4.0f, 7, host);
  const Tensor ag = Tensor::uniform(Shape{100003}, -1.0f, 1.0f, 8, host);
  for (auto f : {Activation::relu, Activation::leaky_relu, Activation::gelu, Activation::sigmoid,
                 Activation::tanh}) {
    const bool exact = f == Activation::relu || f == Activation::leaky_relu;
    check(std::string("activation ") + cohort::activation_name(f) + " forward and backward", [&] {
      return layer_parity({ax, ag}, cuda, [&](const std::vector<Tensor>& in) {
        Tensor y = like(in[0]), dx = like(in[0]);
        lo::activation_forward(f, 0.1f, in[0], y);
        lo::activation_backward(f, 0.1f, in[0], y, in[1], dx);
        return std::vector<Tensor>{y, dx};
      }, 2e-6, 1e-7, exact);
    });
  }

  check("bias_add (+ gelu) and bias_grad", [&] {
    const Tensor y0 = Tensor::uniform(Shape{6, 7, 5, 3}, -1.0f, 1.0f, 9, host);
    const Tensor b = Tensor::uniform(Shape{7}, -1.0f, 1.0f, 10, host);
    return layer_parity({y0, b}, cuda, [&](const std::vector<Tensor>& in) {
      Tensor y = in[0].clone(), db = Tensor::zeros(Shape{7}, DType::f32, in[0].device());
      lo::bias_add(in[1], y, 1, Activation::gelu);
      lo::bias_grad(in[0], db, 1);
      return std::vector<Tensor>{y, db};
    }, 2e-6, 1e-7);
  });

  for (bool log : {false, true})
    check(std::string(log ? "log_softmax" : "softmax") + " forward and backward, dim 1 of NCHW", [&] {
      const Tensor x = Tensor::uniform(Shape{4, 10, 3, 5}, -5.0f, 5.0f, 11, host);
      const Tensor dy = Tensor::uniform(x.shape(), -1.0f, 1.0f, 12, host);
      return layer_parity({x, dy}, cuda, [&](const std::vector<Tensor>& in) {
        Tensor y = like(in[0]), dx = like(in[0]);
        lo::softmax_forward(log, in[0], y, 1);
        lo::softmax_backward(log, y, in[1], dx, 1);
        return std::vector<Tensor>{y, dx};
      }, 2e-6, 1e-7);
    });

  for (bool training : {true, false})
    check(std::string("batch norm forward and backward, ") + (training ? "training" : "evaluation"), [&] {
      const Tensor x = Tensor::uniform(Shape{8, 6, 9, 7}, -2.0f, 3.0f, 13, host);
      const Tensor dy = Tensor::uniform(x.shape(), -1.0f, 1.0f, 14, host);
      const Tensor g = Tensor::uniform(Shape{6}, 0.5f, 1.5f, 15, host);
      const Tensor b = Tensor::uniform(Shape{6}, -0.5f, 0.5f, 16, host);
      const Tensor rv = Tensor::uniform(Shape{6}, 0.5f, 2.0f, 17, host);
      return layer_parity({x, dy, g, b, rv}, cuda, [&](const std::vector<Tensor>& in) {
        Device& d = in[0].device();
        Tensor rm = Tensor::zeros(Shape{6}, DType::f32, d), rvar = in[4].clone();
        Tensor y = like(in[0]), dx = like(in[0]);
        Tensor sm = Tensor::zeros(Shape{6}, DType::f32, d), si = Tensor::zeros(Shape{6}, DType::f32, d);
        Tensor dg = Tensor::zeros(Shape{6}, DType::f32, d), dbeta = Tensor::zeros(Shape{6}, DType::f32, d);
        lo::batch_norm_forward(in[0], &in[2], &in[3], &rm, &rvar, y, sm, si, 1e-5f, 0.1f, training);
        lo::batch_norm_backward(in[0], in[1], &in[2], sm, si, &dx, &dg, &dbeta, training);
        return std::vector<Tensor>{y, rm, rvar, dx, dg, dbeta};
      }, 1e-5, 1e-6);
    });

  check("layer norm forward and backward", [&] {
    const Tensor x = Tensor::uniform(Shape{12, 5, 64}, -2.0f, 3.0f, 18, host);
    const Tensor dy = Tensor::uniform(x.shape(), -1.0f, 1.0f, 19, host);
    const Tensor g = Tensor::uniform(Shape{64}, 0.5f, 1.5f, 20, host);
    return layer_parity({x, dy, g}, cuda, [&](const std::vector<Tensor>& in) {
      Device& d = in[0].device();
      Tensor y = like(in[0]), dx = like(in[0]);
      Tensor m = Tensor::zeros(Shape{60}, DType::f32, d), r = Tensor::zeros(Shape{60}, DType::f32, d);
      Tensor dg = Tensor::zeros(Shape{64}, DType::f32, d), db = Tensor::zeros(Shape{64}, DType::f32, d);
      lo::layer_norm_forward(in[0], 64, &in[2], nullptr, y, m, r, 1e-5f);
      lo::layer_norm_backward(in[0], in[1], 64, &in[2], m, r, &dx, &dg, &db);
      return std::vector<Tensor>{y, dx, dg, db};
    }, 1e-5, 1e-6);
  });

  check("dropout masks are bit-identical (Philox)", [&] {
    const Tensor x = Tensor::uniform(Shape{100003}, -1.0f, 1.0f, 21, host);
    return layer_parity({x}, cuda, [&](const std::vector<Tensor>& in) {
      const cohort::DropoutArgs a{0.3f, 0xC0FFEEull, 17};
      Tensor y = like(in[0]), dx = like(in[0]);
      lo::dropout_forward(a, in[0], y);
      lo::dropout_backward(a, in[0], dx);
      return std::vector<Tensor>{y, dx};
    }, 0.0, 0.0, true);
  });

  check("nll forward/backward and cross-entropy backward", [&] {
    const Tensor logits = Tensor::uniform(Shape{37, 10}, -3.0f, 3.0f, 22, host);
    std::vector<std::int64_t> t(37);
    for (std::size_t i = 0; i < t.size(); ++i) t[i] = static_cast<std::int64_t>((i * 7) % 10);
    const Tensor target = Tensor::from_vector(t, Shape{37}, host);
    return layer_parity({logits, target}, cuda, [&](const std::vector<Tensor>& in) {
      Device& d = in[0].device();
      Tensor logp = like(in[0]), loss = Tensor::zeros(Shape{37}, DType::f32, d);
      Tensor dn = like(in[0]), dc = like(in[0]);
      lo::softmax_forward(true, in[0], logp, 1);
      lo::nll_forward(logp, in[1], loss);
      lo::nll_backward(in[1], 0.5f, dn);
      lo::cross_entropy_backward(logp, in[1], 0.5f, dc);
      return std::vector<Tensor>{logp, loss, dn, dc};
    }, 2e-6, 1e-7);
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
    check_layers(cuda, host);
    check_optim(cuda, host);
    check_errors(cuda, host);
  } catch (const std::exception& e) {
    std::printf("FAIL setup: %s\n", e.what());
    return 1;
  }
  std::printf("%d checks, %d failed\n", g_checks, g_failures);
  return g_failures == 0 ? 0 : 1;
}
