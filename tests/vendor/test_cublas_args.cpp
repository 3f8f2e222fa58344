// The cuBLAS seam (backends/cuda/seams/cublas_gemm.hpp) checked on the CPU. cuBLAS's sgemm,
// strided-batched sgemm and sgemv are the column-major BLAS routines, so their documented meaning
// is executed here by the CPU's reference-compatible BLAS (OpenBLAS, cblas_*(CblasColMajor, ...))
// on exactly the seam's values, and the result is compared with the host device's own row-major
// GEMM (oneDNN) and with hand sums.
//
// The front end's GemmArgs reach the seam unchanged: SeamDevice below is a device whose GEMMs and
// linear bias gradients go through the seam and the CPU BLAS, as CudaDevice's go through the seam
// and cuBLAS (the same k == 0 / inner != 1 cases stay on the shared path), so cohort::ops::gemm on
// it runs the real checks of core/src/ops/gemm.cpp. The leading-dimension rules cuBLAS documents are
// asserted on every value the seam produced, and each operand's footprint (the elements a
// column-major call with those extents and leading dimensions reads) is checked against the
// tensor it points into.
#include <cblas.h>
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <string>
#include <variant>
#include <vector>

#include "cohort/backend/op_list.hpp"
#include "cohort/core/layer_ops.hpp"
#include "cohort/core/ops.hpp"
#include "cohort/core/tensor.hpp"
#include "cohort/devices.hpp"
#include "common/host_memory_device.hpp"
#include "common/testing.hpp"
#include "cuda/seams/cublas_gemm.hpp"

#if COHORT_TEST_CUBLAS_H
#include <cublas_v2.h>
#endif

namespace {

using cohort::Device;
using cohort::DType;
using cohort::GemmArgs;
using cohort::Shape;
using cohort::Tensor;
using cohort::cuda::seams::CublasGemm;
using cohort::cuda::seams::CublasGemv;
using cohort::cuda::seams::kCublasOpN;
using cohort::cuda::seams::kCublasOpT;
using i64 = std::int64_t;
namespace calls = cohort::calls;
namespace seams = cohort::cuda::seams;

#if COHORT_TEST_CUBLAS_H
static_assert(CUBLAS_OP_N == kCublasOpN && CUBLAS_OP_T == kCublasOpT);
#endif

// ---- cuBLAS's documented meaning, on the CPU ----

CBLAS_TRANSPOSE cblas_op(int op) {
  REQUIRE((op == kCublasOpN || op == kCublasOpT));
  return op == kCublasOpT ? CblasTrans : CblasNoTrans;
}
blasint narrow(i64 v) {
  REQUIRE(v <= std::numeric_limits<blasint>::max());
  return static_cast<blasint>(v);
}

// cublas<t>gemm / cublas<t>gemmStridedBatched: lda >= max(1, m) for transa == N, else
// max(1, k); ldb >= max(1, k) for transb == N, else max(1, n); ldc >= max(1, m); the extents
// cohort issues are positive.
void check_documented_rules(const CublasGemm& g) {
  CHECK((g.transa == kCublasOpN || g.transa == kCublasOpT));
  CHECK((g.transb == kCublasOpN || g.transb == kCublasOpT));
  CHECK(g.m >= 1);
  CHECK(g.n >= 1);
  CHECK(g.k >= 1);
  CHECK(g.batch >= 1);
  CHECK(g.lda >= std::max<i64>(1, g.transa == kCublasOpN ? g.m : g.k));
  CHECK(g.ldb >= std::max<i64>(1, g.transb == kCublasOpN ? g.k : g.n));
  CHECK(g.ldc >= std::max<i64>(1, g.m));
}
// cublas<t>gemv: lda >= max(1, m); incx, incy nonzero.
void check_documented_rules(const CublasGemv& v) {
  CHECK((v.trans == kCublasOpN || v.trans == kCublasOpT));
  CHECK(v.m >= 1);
  CHECK(v.n >= 1);
  CHECK(v.lda >= std::max<i64>(1, v.m));
  CHECK(v.incx != 0);
  CHECK(v.incy != 0);
}

// Elements a column-major matrix of `rows` x `cols` with leading dimension ld spans from its
// first element, over `batch` matrices `stride` apart.
i64 footprint(i64 rows, i64 cols, i64 ld, i64 batch = 1, i64 stride = 0) {
  return (batch - 1) * stride + (cols - 1) * ld + rows;
}
i64 footprint_a(const CublasGemm& g) {  // A is m x k stored (k x m when transposed)
  return g.transa == kCublasOpN ? footprint(g.m, g.k, g.lda, g.batch, g.stride_a)
                                : footprint(g.k, g.m, g.lda, g.batch, g.stride_a);
}
i64 footprint_b(const CublasGemm& g) {
  return g.transb == kCublasOpN ? footprint(g.k, g.n, g.ldb, g.batch, g.stride_b)
                                : footprint(g.n, g.k, g.ldb, g.batch, g.stride_b);
}
i64 footprint_c(const CublasGemm& g) { return footprint(g.m, g.n, g.ldc, g.batch, g.stride_c); }

void execute(const CublasGemm& g) {
  for (i64 i = 0; i < g.batch; ++i)
    cblas_sgemm(CblasColMajor, cblas_op(g.transa), cblas_op(g.transb), narrow(g.m), narrow(g.n),
                narrow(g.k), g.alpha, g.A + i * g.stride_a, narrow(g.lda), g.B + i * g.stride_b,
                narrow(g.ldb), g.beta, g.C + i * g.stride_c, narrow(g.ldc));
}
void execute(const CublasGemv& v) {
  cblas_sgemv(CblasColMajor, cblas_op(v.trans), narrow(v.m), narrow(v.n), v.alpha, v.A,
              narrow(v.lda), v.x, narrow(v.incx), v.beta, v.y, narrow(v.incy));
}

// ---- a device whose cuBLAS calls are the seam's values run by the CPU BLAS ----

class SeamDevice final : public cohort::testing::HostMemoryDevice {
 public:
  std::string name() const override { return "cublas-seam"; }
  void* allocate(std::size_t bytes) override {
    void* p = HostMemoryDevice::allocate(bytes);
    if (p) blocks_[static_cast<const char*>(p)] = bytes;
    return p;
  }
  void deallocate(void* p, std::size_t bytes) noexcept override {
    blocks_.erase(static_cast<const char*>(p));
    HostMemoryDevice::deallocate(p, bytes);
  }
  bool supports(const cohort::OpCall&) const override { return true; }
  void run(const cohort::OpCall& call) override {
    // The cases CudaDevice hands to cuBLAS (ops/gemm.hpp's run(Gemm), cuda/op_table.cu's GemmBatched and
    // BiasGrad overloads); everything else runs on the host device, as there on the shared path.
    // A call whose operands would reach past their allocations fails the test instead of running.
    if (const auto* g = std::get_if<calls::Gemm>(&call); g && g->m > 0 && g->n > 0 && g->k > 0) {
      run_gemm(seams::cublas_gemm(*g));
    } else if (const auto* b = std::get_if<calls::GemmBatched>(&call); b && b->k > 0) {
      run_gemm(seams::cublas_gemm_batched(*b));
    } else if (const auto* c = std::get_if<calls::BiasGrad>(&call);
               c && c->d.inner == 1 && c->d.outer > 0 && c->d.channels > 0) {
      ones.assign(static_cast<std::size_t>(c->d.outer), 1.0f);
      const CublasGemv v = seams::cublas_bias_grad(*c, ones.data());
      gemvs.push_back(v);
      check_documented_rules(v);
      const bool inside = within(v.A, footprint(v.m, v.n, v.lda)) && within(v.y, v.m);
      CHECK(inside);
      if (inside) execute(v);
    } else {
      cohort::host_device().run(call);
    }
  }
  std::vector<CublasGemm> gemms;
  std::vector<CublasGemv> gemvs;
  std::vector<float> ones;

 private:
  void run_gemm(const CublasGemm& g) {
    gemms.push_back(g);
    check_documented_rules(g);
    const bool inside = within(g.A, footprint_a(g)) && within(g.B, footprint_b(g)) &&
                        within(g.C, footprint_c(g));
    CHECK(inside);
    if (inside) execute(g);
  }
  // Whether [p, p + floats) lies inside one of this device's allocations.
  bool within(const float* p, i64 floats) const {
    const char* q = reinterpret_cast<const char*>(p);
    auto it = blocks_.upper_bound(q);
    if (it == blocks_.begin() || floats < 0) return false;
    --it;
    return q + floats * i64(sizeof(float)) <= it->first + it->second;
  }
  std::map<const char*, std::size_t> blocks_;
};

SeamDevice& seam_device() {
  static SeamDevice* d = new SeamDevice();
  return *d;
}

// ---- comparisons ----

// |got - ref| <= tol * (scale + |ref|) everywhere, NaN nowhere; reports the first mismatch.
void check_close(const std::vector<float>& got, const std::vector<float>& ref, double scale,
                 double tol, const std::string& what) {
  INFO(what);
  REQUIRE(got.size() == ref.size());
  std::size_t bad = 0, first = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    const double d = std::fabs(double(got[i]) - double(ref[i]));
    if (!(d <= tol * (scale + std::fabs(double(ref[i]))))) {
      if (bad++ == 0) first = i;
    }
  }
  INFO("first mismatch at ", first, ": got ", got[first], ", expected ", ref[first]);
  CHECK(bad == 0);
}

Tensor uniform(const Shape& s, std::uint64_t seed, Device& d) {
  return Tensor::uniform(s, -1.0f, 1.0f, seed, d);
}
// The same values on another device.
Tensor copy_to(const Tensor& t, Device& d) {
  return Tensor::from_vector(t.to_vector<float>(), t.shape(), d);
}

struct Shape3 {
  i64 m, n, k;
};
struct AlphaBeta {
  float alpha, beta;
  bool nan_c;  // C starts as NaN (beta == 0 must not read it)
};

std::string describe(const Shape3& s, int ta, int tb, const AlphaBeta& ab, i64 batch = 0) {
  return (batch ? "batch " + std::to_string(batch) + " x " : std::string()) + "m=" +
         std::to_string(s.m) + " n=" + std::to_string(s.n) + " k=" + std::to_string(s.k) +
         " ta=" + std::to_string(ta) + " tb=" + std::to_string(tb) +
         " alpha=" + std::to_string(ab.alpha) + " beta=" + std::to_string(ab.beta) +
         (ab.nan_c ? " over NaN" : "");
}

// One GEMM (batch 0) or batched GEMM through the front end on the seam device and on the host.
void compare_gemm(const Shape3& s, int ta, int tb, const AlphaBeta& ab, i64 batch,
                  std::uint64_t seed) {
  Device& host = cohort::host_device();
  SeamDevice& dev = seam_device();
  const std::string what = describe(s, ta, tb, ab, batch);
  const Shape a_shape = ta ? Shape{s.k, s.m} : Shape{s.m, s.k};
  const Shape b_shape = tb ? Shape{s.n, s.k} : Shape{s.k, s.n};
  auto batched = [&](const Shape& sh) { return batch ? Shape{batch, sh[0], sh[1]} : sh; };
  Tensor a = uniform(batched(a_shape), seed, host), b = uniform(batched(b_shape), seed + 1, host);
  Tensor c = uniform(batched(Shape{s.m, s.n}), seed + 2, host);
  if (ab.nan_c) cohort::ops::fill(c, std::nan(""));
  Tensor da = copy_to(a, dev), db = copy_to(b, dev), dc = copy_to(c, dev);
  const std::size_t issued = dev.gemms.size();
  if (batch) {
    cohort::ops::gemm_batched(a, ta, b, tb, c, ab.alpha, ab.beta);
    cohort::ops::gemm_batched(da, ta, db, tb, dc, ab.alpha, ab.beta);
  } else {
    cohort::ops::gemm(a, ta, b, tb, c, ab.alpha, ab.beta);
    cohort::ops::gemm(da, ta, db, tb, dc, ab.alpha, ab.beta);
  }
  INFO(what);
  REQUIRE(dev.gemms.size() == issued + 1);
  const CublasGemm& g = dev.gemms.back();
  // cuBLAS's A is cohort's b and its B is cohort's a (the row-major product read column-major).
  CHECK(g.A == db.data<float>());
  CHECK(g.B == da.data<float>());
  CHECK(g.C == dc.data<float>());
  CHECK(footprint_a(g) <= db.numel());
  CHECK(footprint_b(g) <= da.numel());
  CHECK(footprint_c(g) == dc.numel());  // C is dense: every element written, none beyond
  CHECK(g.batch == std::max<i64>(batch, 1));
  const double scale = std::fabs(ab.alpha) * double(s.k) + std::fabs(ab.beta);
  check_close(dc.to_vector<float>(), c.to_vector<float>(), scale, 2e-6, what);
}

// The GEMM shapes of the parity table (tests/parity/test_parity.cpp: gemm 5x7x3, gemm_batched
// 4 x 6x5x9) and odd, degenerate and layer-sized ones.
const std::vector<Shape3> kGemmShapes = {
    {5, 7, 3},                   // parity: gemm 5x7x3
    {6, 5, 9},                   // parity: gemm_batched's matrices
    {1, 1, 1},   {1, 17, 1},  {13, 1, 29}, {1, 1, 31},
    {33, 65, 17},                // odd, past a vector width
    {64, 10, 128},               // a linear layer's forward shape (batch 64)
    {128, 9, 64}};
const std::vector<AlphaBeta> kAlphaBeta = {
    {0.75f, 0.5f, false},   // parity: gemm's alpha and beta
    {-1.5f, 0.25f, false},  // parity: gemm_batched's
    {1.0f, 0.0f, true},     // beta 0 ignores C, NaN included
    {2.5f, 0.0f, false},
    {1.0f, 1.0f, false},    // accumulation (dW += ...)
    {-0.5f, 1.0f, false}};

}  // namespace

TEST_SUITE("cublas") {

TEST_CASE("the seam swaps operands and extents: a worked example") {
  float a[1], b[1], c[1];
  GemmArgs g;  // row-major C [2 x 3] = A^T B, A stored [4 x 2], B stored [4 x 3], C padded to 5
  g.trans_a = true;
  g.m = 2;
  g.n = 3;
  g.k = 4;
  g.alpha = 0.5f;
  g.a = a;
  g.lda = 2;
  g.b = b;
  g.ldb = 3;
  g.beta = 1.0f;
  g.c = c;
  g.ldc = 5;
  const CublasGemm r = seams::cublas_gemm(g);
  CHECK(r.transa == kCublasOpN);  // cuBLAS's A is cohort's b, not transposed
  CHECK(r.transb == kCublasOpT);  // cuBLAS's B is cohort's a, transposed
  CHECK(r.m == 3);
  CHECK(r.n == 2);
  CHECK(r.k == 4);
  CHECK(r.A == b);
  CHECK(r.lda == 3);
  CHECK(r.B == a);
  CHECK(r.ldb == 2);
  CHECK(r.C == c);
  CHECK(r.ldc == 5);
  CHECK(r.alpha == 0.5f);
  CHECK(r.beta == 1.0f);
  CHECK(r.batch == 1);
  check_documented_rules(r);
}

TEST_CASE("gemm: every shape, transpose pair and alpha/beta, executed column-major") {
  std::uint64_t seed = 100;
  for (const Shape3& s : kGemmShapes)
    for (int ta = 0; ta < 2; ++ta)
      for (int tb = 0; tb < 2; ++tb)
        for (const AlphaBeta& ab : kAlphaBeta) compare_gemm(s, ta, tb, ab, 0, seed += 3);
}

TEST_CASE("gemm_batched: every shape, transpose pair and alpha/beta, strided batches") {
  std::uint64_t seed = 5000;
  for (i64 batch : {4, 1, 3})  // 4: parity's gemm_batched
    for (const Shape3& s : kGemmShapes)
      for (int ta = 0; ta < 2; ++ta)
        for (int tb = 0; tb < 2; ++tb)
          for (const AlphaBeta& ab : kAlphaBeta) {
            if (s.m * s.n * s.k > 20000 && batch != 4) continue;  // the large ones once
            compare_gemm(s, ta, tb, ab, batch, seed += 3);
          }
}

TEST_CASE("gemm: padded leading dimensions and sub-matrices, as the convolution path issues") {
  // GemmArgs allow row strides beyond the row (op_calls.hpp) and pointers into a larger buffer
  // (ops/conv2d.hpp's per-group convolution GEMMs). The host device runs the same GemmArgs on a copy
  // of every buffer: C's padding must stay as it was, the products must agree.
  Device& host = cohort::host_device();
  std::uint64_t seed = 9000;
  for (const Shape3& s : std::vector<Shape3>{{5, 7, 3}, {1, 9, 4}, {17, 3, 1}, {6, 5, 9}})
    for (int ta = 0; ta < 2; ++ta)
      for (int tb = 0; tb < 2; ++tb)
        for (const AlphaBeta& ab : kAlphaBeta) {
          const i64 pad_a = 3, pad_b = 1, pad_c = 4, off = 7;  // off: the sub-matrix's start
          const i64 a_rows = ta ? s.k : s.m, a_cols = ta ? s.m : s.k;
          const i64 b_rows = tb ? s.n : s.k, b_cols = tb ? s.k : s.n;
          GemmArgs g;
          g.trans_a = ta;
          g.trans_b = tb;
          g.m = s.m;
          g.n = s.n;
          g.k = s.k;
          g.alpha = ab.alpha;
          g.beta = ab.beta;
          g.lda = a_cols + pad_a;
          g.ldb = b_cols + pad_b;
          g.ldc = s.n + pad_c;
          std::vector<float> a = uniform({off + a_rows * g.lda}, seed++, host).to_vector<float>();
          std::vector<float> b = uniform({off + b_rows * g.ldb}, seed++, host).to_vector<float>();
          std::vector<float> c0 = uniform({off + s.m * g.ldc}, seed++, host).to_vector<float>();
          if (ab.nan_c)
            for (i64 i = 0; i < s.m; ++i)
              for (i64 j = 0; j < s.n; ++j) c0[off + i * g.ldc + j] = std::nanf("");
          std::vector<float> c_seam = c0, c_host = c0;
          g.a = a.data() + off;
          g.b = b.data() + off;

          g.c = c_seam.data() + off;
          const CublasGemm r = seams::cublas_gemm(g);
          const std::string what = describe(s, ta, tb, ab) + " padded";
          INFO(what);
          check_documented_rules(r);
          REQUIRE(footprint_a(r) <= i64(b.size()) - off);
          REQUIRE(footprint_b(r) <= i64(a.size()) - off);
          REQUIRE(footprint_c(r) <= i64(c_seam.size()) - off);
          execute(r);

          calls::Gemm h;
          static_cast<GemmArgs&>(h) = g;
          h.c = c_host.data() + off;
          host.run(cohort::OpCall{h});

          const double scale = std::fabs(ab.alpha) * double(s.k) + std::fabs(ab.beta);
          check_close(c_seam, c_host, scale, 2e-6, what);
          for (i64 i = 0; i < off; ++i) CHECK(c_seam[i] == c0[i]);  // before the sub-matrix
          for (i64 i = 0; i < s.m; ++i)
            for (i64 j = s.n; j < g.ldc; ++j) {  // each row's padding
              const std::size_t at = static_cast<std::size_t>(off + i * g.ldc + j);
              CHECK(c_seam[at] == c0[at]);
            }
        }
}

TEST_CASE("gemv: the linear bias gradient accumulates column sums (beta 1)") {
  // dbias += sum over every axis but the last: cohort::ops::bias_grad(dy, dbias, -1), as
  // Linear's and MultiheadAttention's backward call it. The shapes: parity's "bias_grad features"
  // [11, 6], and odd, degenerate and layer-sized ones.
  Device& host = cohort::host_device();
  SeamDevice& dev = seam_device();
  std::uint64_t seed = 20000;
  for (const Shape& s : std::vector<Shape>{
           {11, 6}, {1, 1}, {1, 7}, {9, 1}, {64, 10}, {64, 128}, {3, 5, 17}, {1000, 3}}) {
    const i64 channels = s[s.rank() - 1], outer = s.numel() / channels;
    INFO("dy ", s.str());
    Tensor dy = uniform(s, seed++, host);
    Tensor db0 = uniform({channels}, seed++, host);
    Tensor ddy = copy_to(dy, dev), ddb = copy_to(db0, dev);
    const std::size_t issued = dev.gemvs.size();
    cohort::ops::bias_grad(ddy, ddb, -1);
    REQUIRE(dev.gemvs.size() == issued + 1);
    const CublasGemv& v = dev.gemvs.back();
    CHECK(v.trans == kCublasOpN);
    CHECK(v.m == channels);
    CHECK(v.n == outer);
    CHECK(v.A == ddy.data<float>());
    CHECK(v.y == ddb.data<float>());
    CHECK(v.alpha == 1.0f);
    CHECK(v.beta == 1.0f);
    CHECK(footprint(v.m, v.n, v.lda) == ddy.numel());  // dy read exactly, column-major
    CHECK((v.n - 1) * v.incx + 1 <= outer);             // the ones it reads

    // By hand: the initial dbias plus each column's sum, in double.
    const std::vector<float> d = dy.to_vector<float>(), b0 = db0.to_vector<float>();
    std::vector<float> ref(static_cast<std::size_t>(channels));
    for (i64 c = 0; c < channels; ++c) {
      double acc = b0[static_cast<std::size_t>(c)];
      for (i64 o = 0; o < outer; ++o) acc += d[static_cast<std::size_t>(o * channels + c)];
      ref[static_cast<std::size_t>(c)] = static_cast<float>(acc);
    }
    check_close(ddb.to_vector<float>(), ref, double(outer), 1e-6, "seam vs hand sum");
    // And the host device's own bias gradient (the shared kernel), on the same values.
    Tensor hdb = copy_to(db0, host);
    cohort::ops::bias_grad(dy, hdb, -1);
    check_close(ddb.to_vector<float>(), hdb.to_vector<float>(), double(outer), 1e-6,
                "seam vs host device");
  }
}

TEST_CASE("bad inputs are refused naming the argument") {
  using cohort::testing::error_of;
  float a[64] = {}, b[64] = {}, c[64] = {};
  GemmArgs g;
  g.m = 2;
  g.n = 3;
  g.k = 4;
  g.a = a;
  g.lda = 4;
  g.b = b;
  g.ldb = 3;
  g.c = c;
  g.ldc = 3;
  CHECK(error_of([&] { seams::cublas_gemm(g); }) == "<no error>");

  GemmArgs k0 = g;
  k0.k = 0;
  CHECK(error_of([&] { seams::cublas_gemm(k0); }).find("k=0") != std::string::npos);
  GemmArgs short_a = g;
  short_a.lda = 3;  // a is m x k = 2 x 4: rows of 4
  CHECK(error_of([&] { seams::cublas_gemm(short_a); }).find("lda 3 < 4") != std::string::npos);
  GemmArgs short_at = g;
  short_at.trans_a = true;  // a stored k x m = 4 x 2: rows of 2, so lda 2 is enough, 1 is not
  short_at.lda = 2;
  CHECK(error_of([&] { seams::cublas_gemm(short_at); }) == "<no error>");
  short_at.lda = 1;
  CHECK(error_of([&] { seams::cublas_gemm(short_at); }).find("lda 1 < 2") != std::string::npos);
  GemmArgs short_b = g;
  short_b.ldb = 2;
  CHECK(error_of([&] { seams::cublas_gemm(short_b); }).find("ldb 2 < 3") != std::string::npos);
  GemmArgs short_c = g;
  short_c.ldc = 2;
  CHECK(error_of([&] { seams::cublas_gemm(short_c); }).find("ldc 2 < n = 3") !=
        std::string::npos);
  GemmArgs no_c = g;
  no_c.c = nullptr;
  CHECK(error_of([&] { seams::cublas_gemm(no_c); }).find("c is null") != std::string::npos);

  calls::GemmBatched bg;
  static_cast<GemmArgs&>(bg) = g;
  bg.batch = 2;
  bg.stride_a = 8;
  bg.stride_b = 12;
  bg.stride_c = 6;
  CHECK(error_of([&] { seams::cublas_gemm_batched(bg); }) == "<no error>");
  calls::GemmBatched overlap = bg;
  overlap.stride_c = 5;
  CHECK(error_of([&] { seams::cublas_gemm_batched(overlap); }).find("stride_c 5 < 6") !=
        std::string::npos);
  calls::GemmBatched none = bg;
  none.batch = 0;
  CHECK(error_of([&] { seams::cublas_gemm_batched(none); }).find("batch must be >= 1, got 0") !=
        std::string::npos);

  float ones[4] = {1, 1, 1, 1};
  calls::BiasGrad bias{cohort::ChannelDims{4, 3, 1}, a, c};
  CHECK(error_of([&] { seams::cublas_bias_grad(bias, ones); }) == "<no error>");
  calls::BiasGrad conv = bias;
  conv.d.inner = 5;
  CHECK(error_of([&] { seams::cublas_bias_grad(conv, ones); }).find("inner must be 1, got 5") !=
        std::string::npos);
  CHECK(error_of([&] { seams::cublas_bias_grad(bias, nullptr); }).find("ones is null") !=
        std::string::npos);
}

}  // TEST_SUITE
