// The harness of one parity row on one device (parity_case.hpp): inputs copied from the host,
// outputs placed between guard regions, and the reference's values kept per row.
#include "parity_case.hpp"

#include <cstring>

#include "cohort/devices.hpp"

namespace parity {
namespace {

constexpr unsigned char kGuardByte = 0xA5;  // as f32: -2.9e-16, nothing an op would write
constexpr std::size_t kGuardBytes = 256;    // each side; a multiple of every alignment asked for

cohort::Device& host() { return cohort::host_device(); }

}  // namespace

HostTensor uni(const Shape& s, std::uint64_t seed, float lo, float hi) {
  const std::vector<float> f = Tensor::uniform(s, lo, hi, seed, host()).to_vector<float>();
  return HostTensor{s, Vec(f.begin(), f.end())};
}

Vec values(const Tensor& t) {
  const Tensor h = t.to(host());
  if (h.dtype() == DType::f32) {
    const std::vector<float> f = h.to_vector<float>();
    return Vec(f.begin(), f.end());
  }
  Vec v(static_cast<std::size_t>(h.numel()));
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = h.item(static_cast<std::int64_t>(i));
  return v;
}

Tensor Case::in(const HostTensor& h) const {
  return Tensor::from_vector(std::vector<float>(h.v.begin(), h.v.end()), h.shape, host()).to(dev);
}

Tensor Case::ints(const std::vector<std::int64_t>& v) const {
  return Tensor::from_vector(v, Shape{static_cast<std::int64_t>(v.size())}, host()).to(dev);
}

Tensor Case::out(const Shape& s, DType dtype) {
  const std::size_t size = cohort::dtype_size(dtype), before = kGuardBytes / size;
  const std::size_t n = static_cast<std::size_t>(s.numel());
  Tensor buffer =
      Tensor::empty(Shape{static_cast<std::int64_t>(before + n + before)}, dtype, host());
  std::memset(buffer.raw(), kGuardByte, buffer.nbytes());
  std::memset(static_cast<char*>(buffer.raw()) + before * size, 0, n * size);
  buffer = buffer.to(dev);
  guards_.push_back(Guard{buffer, before, n});
  return buffer.slice(static_cast<std::int64_t>(before), static_cast<std::int64_t>(before + n))
      .reshape(s);
}

Tensor Case::out(const HostTensor& init) {
  Tensor t = out(init.shape);
  t.copy_from(
      Tensor::from_vector(std::vector<float>(init.v.begin(), init.v.end()), init.shape, host()));
  return t;
}

void Case::check(std::vector<Tensor> got, const std::function<std::vector<Vec>()>& want) {
  got_ = std::move(got);
  checked_ = true;
  if (reference_->empty()) *reference_ = want();
}

std::vector<std::string> Case::broken_guards() const {
  std::vector<std::string> broken;
  for (std::size_t g = 0; g < guards_.size(); ++g) {
    const Tensor h = guards_[g].buffer.to(host());
    const std::size_t size = cohort::dtype_size(h.dtype());
    const unsigned char* bytes = static_cast<const unsigned char*>(h.raw());
    const std::size_t after = (guards_[g].before + guards_[g].n) * size;
    for (std::size_t b = 0; b < h.nbytes(); ++b) {
      if (b == guards_[g].before * size) b = after;  // skip the output itself
      if (b < h.nbytes() && bytes[b] != kGuardByte) {
        broken.push_back("guarded output " + std::to_string(g) +
                         " (in order of Case::out) written " +
                         (b < after ? "before its first" : "after its last") + " element");
        break;
      }
    }
  }
  return broken;
}

}  // namespace parity
