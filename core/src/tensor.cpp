// Tensor: storage ownership, views (reshape, leading-axis slices), copies between devices and
// the random constructors (which call the fill ops).
#include "cohort/core/tensor.hpp"

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <ostream>
#include <sstream>
#include <utility>

#include "cohort/backend/dispatch.hpp"
#include "cohort/core/ops.hpp"

namespace cohort {

Storage::Storage(Device& device, std::size_t bytes)
    : device_(&device), data_(device.allocate(bytes)), bytes_(bytes) {}

Storage::Storage(Device& device, void* data, std::size_t bytes, std::shared_ptr<void> owner)
    : device_(&device), data_(data), bytes_(bytes), owner_(std::move(owner)) {}

Storage::~Storage() {
  if (!owner_) device_->deallocate(data_, bytes_);
}

Tensor Tensor::wrap(void* data, const Shape& shape, DType dtype, Device& device,
                    std::shared_ptr<void> owner) {
  COHORT_CHECK(owner != nullptr, "Tensor::wrap: the owner of the memory is null");
  Tensor t;
  t.shape_ = shape;
  t.dtype_ = dtype;
  COHORT_CHECK(data != nullptr || t.nbytes() == 0, "Tensor::wrap: null data for ", t.nbytes(),
               " bytes");
  COHORT_CHECK(reinterpret_cast<std::uintptr_t>(data) % dtype_size(dtype) == 0,
               "Tensor::wrap: data is not aligned to its ", dtype_name(dtype), " elements");
  t.storage_ = std::make_shared<Storage>(device, data, t.nbytes(), std::move(owner));
  return t;
}

Tensor Tensor::empty(const Shape& shape, DType dtype, Device& device) {
  Tensor t;
  t.shape_ = shape;
  t.dtype_ = dtype;
  t.storage_ = std::make_shared<Storage>(device, t.nbytes());
  return t;
}

Tensor Tensor::zeros(const Shape& shape, DType dtype, Device& device) {
  return full(shape, 0.0, dtype, device);
}

Tensor Tensor::full(const Shape& shape, double value, DType dtype, Device& device) {
  Tensor t = empty(shape, dtype, device);
  ops::fill(t, value);
  return t;
}

Tensor Tensor::uniform(const Shape& shape, float lo, float hi, std::uint64_t seed, Device& device,
                       std::uint64_t offset) {
  COHORT_CHECK(lo <= hi, "uniform: lo ", lo, " > hi ", hi);
  Tensor t = empty(shape, DType::f32, device);
  ops::fill_uniform(t, lo, hi, seed, offset);
  return t;
}

Tensor Tensor::normal(const Shape& shape, float mean, float stddev, std::uint64_t seed,
                      Device& device, std::uint64_t offset) {
  COHORT_CHECK(stddev >= 0.0f, "normal: stddev ", stddev, " is negative");
  Tensor t = empty(shape, DType::f32, device);
  ops::fill_normal(t, mean, stddev, seed, offset);
  return t;
}

Tensor Tensor::released(const Shape& shape, DType dtype) {
  Tensor t;
  t.shape_ = shape;
  t.dtype_ = dtype;
  return t;
}

Device& Tensor::device() const {
  COHORT_CHECK(defined(), "device() of an undefined tensor");
  return storage_->device();
}

void* Tensor::raw() const {
  COHORT_CHECK(defined(), "data of an undefined tensor");
  if (!storage_->data()) return nullptr;
  return static_cast<char*>(storage_->data()) + offset_;
}

Tensor Tensor::reshape(const std::vector<std::int64_t>& request) const {
  COHORT_CHECK(defined(), "reshape of an undefined tensor");
  std::string wanted = "[";
  for (std::size_t i = 0; i < request.size(); ++i)
    wanted += (i ? ", " : "") + std::to_string(request[i]);
  wanted += "]";
  std::vector<std::int64_t> dims;
  int infer = -1;
  std::int64_t known = 1;
  for (std::size_t i = 0; i < request.size(); ++i) {
    const std::int64_t d = request[i];
    COHORT_CHECK(d >= -1, "reshape to ", wanted, ": extent ", d, " at dimension ", i,
                 " is negative");
    dims.push_back(d);
    if (d == -1) {
      COHORT_CHECK(infer < 0, "reshape to ", wanted, ": only one extent may be -1");
      infer = static_cast<int>(i);
    } else {
      known *= d;
    }
  }
  if (infer >= 0) {
    COHORT_CHECK(known > 0 && numel() % known == 0, "reshape of ", shape_.str(), " to ", wanted,
                 ": cannot infer the -1 extent");
    dims[static_cast<std::size_t>(infer)] = numel() / known;
  }
  Shape s(dims);
  COHORT_CHECK(s.numel() == numel(), "reshape of ", shape_.str(), " (", numel(), " elements) to ",
               s.str(), " (", s.numel(), " elements)");
  Tensor t = *this;
  t.shape_ = s;
  return t;
}

Tensor Tensor::slice(std::int64_t begin, std::int64_t end) const {
  COHORT_CHECK(defined() && rank() >= 1, "slice needs a tensor of rank >= 1, got ", shape_.str());
  const std::int64_t n = shape_[0];
  COHORT_CHECK(0 <= begin && begin <= end && end <= n, "slice [", begin, ", ", end,
               ") out of range for leading dimension ", n, " of shape ", shape_.str());
  std::vector<std::int64_t> dims = shape_.dims();
  const std::size_t row_bytes = nbytes() / (n ? static_cast<std::size_t>(n) : 1);
  dims[0] = end - begin;
  Tensor t = *this;
  t.shape_ = Shape(dims);
  t.offset_ = offset_ + static_cast<std::size_t>(begin) * (n ? row_bytes : 0);
  return t;
}

Tensor Tensor::clone() const { return to(device()); }

Tensor Tensor::to(Device& device) const {
  Tensor t = empty(shape_, dtype_, device);
  t.copy_from(*this);
  return t;
}

void Tensor::copy_from(const Tensor& src) {
  COHORT_CHECK(defined() && src.defined(), "copy_from with an undefined tensor");
  COHORT_CHECK(src.dtype_ == dtype_ && src.numel() == numel(), "copy_from: source ",
               src.shape_.str(), " ", dtype_name(src.dtype_), " does not match destination ",
               shape_.str(), " ", dtype_name(dtype_));
  const std::size_t bytes = nbytes();
  if (bytes == 0) return;
  Device& dd = device();
  Device& sd = src.device();
  if (&dd == &sd) {
    dd.copy(raw(), src.raw(), bytes);
  } else if (sd.host_accessible()) {
    dd.copy_from_host(raw(), src.raw(), bytes);
  } else if (dd.host_accessible()) {
    sd.copy_to_host(raw(), src.raw(), bytes);
  } else {  // between two GPUs: stage through the host
    std::vector<char> staging(bytes);
    sd.copy_to_host(staging.data(), src.raw(), bytes);
    dd.copy_from_host(raw(), staging.data(), bytes);
  }
}

namespace detail {
void copy_host_to_tensor(Tensor& dst, const void* src, std::size_t bytes) {
  if (bytes) dst.device().copy_from_host(dst.raw(), src, bytes);
}
void copy_tensor_to_host(const Tensor& src, void* dst, std::size_t bytes) {
  if (bytes) src.device().copy_to_host(dst, src.raw(), bytes);
}
}  // namespace detail

namespace {
std::vector<char> host_bytes(const Tensor& t) {
  std::vector<char> bytes(t.nbytes());
  detail::copy_tensor_to_host(t, bytes.data(), bytes.size());
  return bytes;
}

void format_element(std::ostream& os, const char* p, DType dt) {
  const double v = load_element(p, dt, 0);
  if (dt == DType::f32 || dt == DType::f64 || dt == DType::bf16 || dt == DType::f16) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.4f", v);
    os << buf;
  } else {
    os << static_cast<long long>(v);
  }
}

// Prints dimension `d` of the block starting at element `first`; dimensions longer than 6 show
// their first and last 3 entries, as torch does for large tensors.
void format_dim(std::ostream& os, const char* base, const Shape& s, DType dt, std::size_t d,
                std::int64_t first, int indent) {
  const std::int64_t n = s.dims()[d];
  std::int64_t stride = 1;
  for (std::size_t i = d + 1; i < s.rank(); ++i) stride *= s.dims()[i];
  os << "[";
  for (std::int64_t i = 0; i < n; ++i) {
    if (n > 6 && i == 3) {
      os << (d + 1 == s.rank() ? "..., " : "...,\n" + std::string(indent + 1, ' '));
      i = n - 3;
    }
    if (d + 1 == s.rank())
      format_element(os, base + (first + i) * static_cast<std::int64_t>(dtype_size(dt)), dt);
    else
      format_dim(os, base, s, dt, d + 1, first + i * stride, indent + 1);
    if (i + 1 < n) os << (d + 1 == s.rank() ? ", " : ",\n" + std::string(indent + 1, ' '));
  }
  os << "]";
}
}  // namespace

double Tensor::item(std::int64_t i) const {
  COHORT_CHECK(defined() && i >= 0 && i < numel(), "item(", i, ") out of range for shape ",
               shape_.str());
  const std::size_t es = dtype_size(dtype_);
  std::vector<char> one(es);
  device().copy_to_host(one.data(), static_cast<const char*>(raw()) + i * es, es);
  return load_element(one.data(), dtype_, 0);
}

std::string Tensor::str() const {
  if (!defined()) return "tensor(undefined)";
  std::ostringstream os;
  os << "tensor(";
  if (rank() == 0) {
    const auto bytes = host_bytes(*this);
    format_element(os, bytes.data(), dtype_);
  } else {
    const auto bytes = host_bytes(*this);
    format_dim(os, bytes.data(), shape_, dtype_, 0, 0, 7);
  }
  os << ", shape=" << shape_.str() << ", dtype=" << dtype_name(dtype_)
     << ", device=" << device().name() << ")";
  return os.str();
}

std::ostream& operator<<(std::ostream& os, const Tensor& t) { return os << t.str(); }

}  // namespace cohort
