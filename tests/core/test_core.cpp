// Tensors, shapes, dtypes and errors on the host device, checked against hand-computed values.
#include <doctest/doctest.h>

#include "common/testing.hpp"

using cohort::testing::error_of;

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <limits>
#include <memory>
#include <vector>

#include "cohort/core/ops.hpp"
#include "cohort/core/tensor.hpp"
#include "cohort/devices.hpp"

using cohort::DType;
using cohort::Shape;
using cohort::Tensor;

namespace {
}  // namespace

TEST_CASE("shape: numel, negative indices, printing, bad extents") {
  Shape s{64, 1, 28, 28};
  CHECK(s.rank() == 4);
  CHECK(s.numel() == 64 * 28 * 28);
  CHECK(s[-1] == 28);
  CHECK(s[0] == 64);
  CHECK(s.str() == "[64, 1, 28, 28]");
  CHECK(Shape{}.numel() == 1);
  CHECK(Shape{3, 0}.numel() == 0);
  CHECK(error_of([] { Shape{2, -3}; }).find("negative extent at dimension 1") != std::string::npos);
  CHECK(error_of([&] { (void)s[4]; }).find("dimension 4 out of range for shape [64, 1, 28, 28]") !=
        std::string::npos);
}

TEST_CASE("dtype: sizes, names, bf16 rounding") {
  CHECK(cohort::dtype_size(DType::f32) == 4);
  CHECK(cohort::dtype_size(DType::bf16) == 2);
  CHECK(cohort::dtype_size(DType::i64) == 8);
  CHECK(cohort::dtype_size(DType::u8) == 1);
  CHECK(std::string(cohort::dtype_name(DType::i32)) == "i32");
  CHECK(cohort::dtype_from_name("u8") == DType::u8);
  CHECK(error_of([] { cohort::dtype_from_name("f8"); }).find("known: f32, f64, bf16, f16, i32, i64, u8") !=
        std::string::npos);
  // 1.0 = 0x3f800000 -> 0x3f80; 1 + 2^-8 is exactly halfway between bf16 neighbours 1 and 1+2^-7:
  // round to even gives 1.0. 1 + 3*2^-9 rounds up to 1 + 2^-7.
  CHECK(cohort::float_to_bf16(1.0f) == 0x3f80);
  CHECK(cohort::float_to_bf16(1.0f + 1.0f / 256) == 0x3f80);
  CHECK(cohort::bf16_to_float(cohort::float_to_bf16(1.0f + 3.0f / 512)) == 1.0f + 1.0f / 128);
  CHECK(cohort::bf16_to_float(cohort::float_to_bf16(-2.5f)) == -2.5f);
  CHECK(std::isnan(cohort::bf16_to_float(cohort::float_to_bf16(std::nanf("")))));
}

TEST_CASE("tensor: creation, fill of every dtype, round trip") {
  auto& dev = cohort::host_device();
  Tensor z = Tensor::zeros({2, 3}, DType::f32, dev);
  CHECK(z.numel() == 6);
  CHECK(z.nbytes() == 24);
  CHECK(z.to_vector<float>() == std::vector<float>(6, 0.0f));
  CHECK(Tensor::full({4}, 7, DType::i64, dev).to_vector<std::int64_t>() ==
        std::vector<std::int64_t>(4, 7));
  CHECK(Tensor::full({3}, -2, DType::i32, dev).to_vector<std::int32_t>() ==
        std::vector<std::int32_t>(3, -2));
  CHECK(Tensor::full({5}, 255, DType::u8, dev).to_vector<std::uint8_t>() ==
        std::vector<std::uint8_t>(5, 255));
  CHECK(Tensor::full({2}, 0.25, DType::f64, dev).to_vector<double>() == std::vector<double>(2, 0.25));
  Tensor bf = Tensor::full({3}, 1.5, DType::bf16, dev);
  CHECK(bf.item(2) == 1.5);
  std::vector<float> v{1, 2, 3, 4, 5, 6};
  Tensor t = Tensor::from_vector(v, {2, 3}, dev);
  CHECK(t.to_vector<float>() == v);
  CHECK(t.item(4) == 5.0);
  CHECK(reinterpret_cast<std::uintptr_t>(t.raw()) % 64 == 0);
  CHECK(error_of([&] { Tensor::from_vector(v, {4, 2}, dev); })
            .find("6 values do not fill shape [4, 2] (8 elements)") != std::string::npos);
  CHECK(error_of([&] { t.data<std::int64_t>(); }).find("tensor has dtype f32, accessed as i64") !=
        std::string::npos);
  CHECK(error_of([&] { t.to_vector<double>(); }).find("requested f64") != std::string::npos);
  Tensor empty = Tensor::empty({0, 5}, DType::f32, dev);
  CHECK(empty.numel() == 0);
  CHECK(empty.to_vector<float>().empty());
}

TEST_CASE("tensor: reshape and slice are views; clone is not") {
  auto& dev = cohort::host_device();
  Tensor t = Tensor::from_vector<float>({0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}, {4, 3}, dev);
  Tensor r = t.reshape({2, -1});
  CHECK(r.shape() == Shape{2, 6});
  CHECK(r.raw() == t.raw());
  Tensor s = t.slice(1, 3);
  CHECK(s.shape() == Shape{2, 3});
  CHECK(s.to_vector<float>() == std::vector<float>{3, 4, 5, 6, 7, 8});
  s.data<float>()[0] = 100;  // writes through to t
  CHECK(t.item(3) == 100.0);
  Tensor c = t.clone();
  c.data<float>()[0] = -1;
  CHECK(t.item(0) == 0.0);
  CHECK(c.raw() != t.raw());
  CHECK(t.slice(4, 4).numel() == 0);
  CHECK(error_of([&] { t.reshape({5, 3}); })
            .find("reshape of [4, 3] (12 elements) to [5, 3] (15 elements)") != std::string::npos);
  CHECK(error_of([&] { t.reshape({-1, -1}); }).find("only one extent may be -1") != std::string::npos);
  CHECK(error_of([&] { t.reshape({5, -1}); }).find("cannot infer") != std::string::npos);
  CHECK(error_of([&] { t.slice(2, 5); })
            .find("slice [2, 5) out of range for leading dimension 4 of shape [4, 3]") !=
        std::string::npos);
}

TEST_CASE("tensor: wrap views memory owned elsewhere, keeps the owner alive, never frees it") {
  auto& dev = cohort::host_device();
  bool freed = false;
  auto mem = std::shared_ptr<std::vector<float>>(new std::vector<float>{1, 2, 3, 4, 5, 6},
                                                 [&freed](std::vector<float>* v) {
                                                   freed = true;
                                                   delete v;
                                                 });
  float* p = mem->data();
  Tensor t = Tensor::wrap(p, {2, 3}, DType::f32, dev, mem);
  mem.reset();  // the tensor holds the owner now
  CHECK_FALSE(freed);
  CHECK(t.raw() == p);
  CHECK(t.to_vector<float>() == std::vector<float>{1, 2, 3, 4, 5, 6});
  Tensor row = t.slice(1, 2);  // a view keeps it alive too
  cohort::ops::fill(row, 9.0);
  CHECK(p[3] == 9.0f);
  t = Tensor();
  CHECK_FALSE(freed);
  row = Tensor();
  CHECK(freed);  // the last view gone: the owner's deleter ran (cohort freed nothing itself)
  auto owner = std::make_shared<int>(0);
  CHECK(error_of([&] { Tensor::wrap(p, {2}, DType::f32, dev, nullptr); }).find("owner of the memory is null") !=
        std::string::npos);
  CHECK(error_of([&] { Tensor::wrap(nullptr, {2}, DType::f32, dev, owner); }).find("null data for 8 bytes") !=
        std::string::npos);
  alignas(8) char raw[16] = {};
  CHECK(error_of([&] { Tensor::wrap(raw + 1, {2}, DType::f32, dev, owner); }).find("not aligned") !=
        std::string::npos);
  CHECK(Tensor::wrap(nullptr, {0}, DType::f32, dev, owner).numel() == 0);
}

TEST_CASE("ops::cast: every pair of f32, f64, bf16, f16, bit for bit against the scalar conversions") {
  auto& dev = cohort::host_device();
  // Values that exercise rounding ties, subnormals of f16 and f32, overflow, infinities and NaN,
  // plus values with more bits than f32 holds (for f64 sources).
  std::vector<double> v = {0.0, -0.0, 1.0, -2.5, 1.0 + 0x1p-11, 1.0 + 3 * 0x1p-11, 65504.0, 65519.0, 65520.0,
                           1e30, -1e30, 0x1p-24, 0x1p-25, 3 * 0x1p-25, 0x1p-140, 1.0 / 3.0, 0.1,
                           1.0 + 0x1p-8, 1.0 + 0x1p-30, 123456.789,
                           std::numeric_limits<double>::infinity(), -std::numeric_limits<double>::infinity(),
                           std::numeric_limits<double>::quiet_NaN()};
  for (int i = 0; i < 2000; ++i) v.push_back(std::ldexp(std::sin(i * 0.37) , (i % 60) - 30));
  const std::int64_t n = static_cast<std::int64_t>(v.size());
  for (DType s : {DType::f32, DType::f64, DType::bf16, DType::f16})
    for (DType d : {DType::f32, DType::f64, DType::bf16, DType::f16}) {
      CAPTURE(cohort::dtype_name(s));
      CAPTURE(cohort::dtype_name(d));
      Tensor src = Tensor::empty({n}, s, dev), dst = Tensor::zeros({n}, d, dev);
      for (std::int64_t i = 0; i < n; ++i) cohort::store_element(src.raw(), s, static_cast<std::size_t>(i), v[static_cast<std::size_t>(i)]);
      cohort::ops::cast(src, dst);
      // The reference: read the source exactly, then store_element's conversion, except that a
      // 16-bit destination from f64 goes through f32 (as documented; so does store_element).
      std::vector<unsigned char> want(dst.nbytes());
      for (std::int64_t i = 0; i < n; ++i)
        cohort::store_element(want.data(), d, static_cast<std::size_t>(i), cohort::load_element(src.raw(), s, static_cast<std::size_t>(i)));
      std::size_t bad = 0;
      const auto* got = static_cast<const unsigned char*>(dst.raw());
      for (std::int64_t i = 0; i < n; ++i) {
        const std::size_t k = static_cast<std::size_t>(i), w = cohort::dtype_size(d);
        const bool nan = std::isnan(cohort::load_element(got, d, k)) && std::isnan(cohort::load_element(want.data(), d, k));
        bad += !nan && std::memcmp(got + k * w, want.data() + k * w, w) != 0;
      }
      CHECK(bad == 0);
    }
  // Hand-checked: f32 1 + 2^-11 is a tie for f16 (to even: 1.0); 65520 overflows to infinity.
  Tensor a = Tensor::from_vector(std::vector<float>{1.0f + 0x1p-11f, 65520.0f, -0.0f}, {3}, dev);
  Tensor h = Tensor::zeros({3}, DType::f16, dev);
  cohort::ops::cast(a, h);
  const auto* hb = static_cast<const std::uint16_t*>(h.raw());
  CHECK(hb[0] == 0x3c00);
  CHECK(hb[1] == 0x7c00);
  CHECK(hb[2] == 0x8000);
  // Bad input names what is wrong.
  Tensor i32 = Tensor::zeros({3}, DType::i32, dev), four = Tensor::zeros({4}, DType::f16, dev);
  CHECK(error_of([&] { cohort::ops::cast(i32, h); }).find("cast: i32 -> f16 is not supported") != std::string::npos);
  CHECK(error_of([&] { cohort::ops::cast(a, four); }).find("'src' has 3 elements [3], 'dst' has 4 [4]") !=
        std::string::npos);
}

TEST_CASE("tensor: copy_from checks dtype and size") {
  auto& dev = cohort::host_device();
  Tensor a = Tensor::from_vector<float>({1, 2, 3, 4}, {2, 2}, dev);
  Tensor b = Tensor::zeros({4}, DType::f32, dev);
  b.copy_from(a);  // same numel, different shape: allowed (flat copy)
  CHECK(b.to_vector<float>() == std::vector<float>{1, 2, 3, 4});
  Tensor c = Tensor::zeros({4}, DType::i32, dev);
  CHECK(error_of([&] { c.copy_from(a); })
            .find("source [2, 2] f32 does not match destination [4] i32") != std::string::npos);
  CHECK(a.to(dev).to_vector<float>() == a.to_vector<float>());
}

TEST_CASE("tensor: printing like torch") {
  auto& dev = cohort::host_device();
  Tensor t = Tensor::from_vector<float>({1, 2, 3, 4}, {2, 2}, dev);
  CHECK(t.str() ==
        "tensor([[1.0000, 2.0000],\n        [3.0000, 4.0000]], shape=[2, 2], dtype=f32, device=host)");
  Tensor l = Tensor::full({10}, 3, DType::i64, dev);
  CHECK(l.str() == "tensor([3, 3, 3, ..., 3, 3, 3], shape=[10], dtype=i64, device=host)");
  CHECK(Tensor().str() == "tensor(undefined)");
  Tensor s = Tensor::full({}, 2.5, DType::f32, dev);
  CHECK(s.str() == "tensor(2.5000, shape=[], dtype=f32, device=host)");
}

TEST_CASE("errors carry file, line, expression and rank") {
  try {
    COHORT_CHECK(1 + 1 == 3, "arithmetic is broken: ", 2);
    FAIL("no throw");
  } catch (const cohort::Error& e) {
    // The path from the repository's top folder: tests/ before the library folder it mirrors.
    CHECK(e.file() == "tests/core/test_core.cpp");
    CHECK(e.line() > 0);
    CHECK(e.expression() == "1 + 1 == 3");
    CHECK(e.why() == "arithmetic is broken: 2");
    CHECK(e.rank() == -1);
  }
  cohort::set_error_rank(3);
  // Users read the message alone; COHORT_DEBUG=1 adds where the check sits.
  unsetenv("COHORT_DEBUG");
  const std::string msg = error_of([] { COHORT_CHECK_IN("shm", false, "peer gone"); });
  setenv("COHORT_DEBUG", "1", 1);
  const std::string dbg = error_of([] { COHORT_CHECK_IN("shm", false, "peer gone"); });
  setenv("COHORT_DEBUG", "0", 1);
  const std::string off = error_of([] { COHORT_CHECK_IN("shm", false, "peer gone"); });
  unsetenv("COHORT_DEBUG");
  cohort::set_error_rank(-1);
  CHECK(msg == "cohort [shm] (rank 3): peer gone");
  CHECK(off == msg);
  CHECK(dbg.find("cohort [shm] (rank 3): peer gone [at tests/core/test_core.cpp:") == 0);
  CHECK(dbg.find(", check `false` failed]") != std::string::npos);
}
