// Tensor: a dtype, a shape and a view into storage owned by one Device.
//
// Always contiguous and row-major. Copies of a Tensor share storage (like torch.Tensor); clone()
// makes an independent copy. reshape() and slice() of the leading dimension are views that share
// storage too, which is why only leading-dimension slices exist: they stay contiguous.
#pragma once

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <iosfwd>
#include <memory>
#include <string>
#include <vector>

#include "cohort/core/dtype.hpp"
#include "cohort/core/error.hpp"
#include "cohort/core/shape.hpp"

namespace cohort {

class Device;  // cohort/core/device.hpp: include it to call the device itself

// Device memory with its owner: either allocated here and freed through the device, or memory
// owned elsewhere (Tensor::wrap) whose owner this storage keeps alive and never frees itself.
class Storage {
 public:
  Storage(Device& device, std::size_t bytes);
  Storage(Device& device, void* data, std::size_t bytes, std::shared_ptr<void> owner);
  ~Storage();
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;
  void* data() const { return data_; }
  std::size_t bytes() const { return bytes_; }
  Device& device() const { return *device_; }

 private:
  Device* device_;
  void* data_;
  std::size_t bytes_;
  std::shared_ptr<void> owner_;  // set for wrapped memory: not freed through the device
};

class Tensor {
 public:
  Tensor() = default;  // undefined tensor: defined() == false

  // Uninitialised memory on `device`.
  static Tensor empty(const Shape& shape, DType dtype, Device& device);
  static Tensor zeros(const Shape& shape, DType dtype, Device& device);
  static Tensor full(const Shape& shape, double value, DType dtype, Device& device);
  // Copies host values to `device`; values.size() must equal shape.numel().
  template <class T>
  static Tensor from_vector(const std::vector<T>& values, const Shape& shape, Device& device);
  // Philox-seeded random tensors (f32), identical on every device for the same seed and offset.
  static Tensor uniform(const Shape& shape, float lo, float hi, std::uint64_t seed, Device& device,
                        std::uint64_t offset = 0);
  static Tensor normal(const Shape& shape, float mean, float stddev, std::uint64_t seed,
                       Device& device, std::uint64_t offset = 0);
  // A tensor over memory that something else owns (torch.from_blob with a deleter): `data` is in
  // `device`'s address space, holds at least shape.numel() elements of `dtype` and is suitably
  // aligned; `owner` (not null) is kept alive as long as any tensor views this memory, and cohort
  // never frees the memory itself. DDP uses it to make gradients views into a communicator buffer.
  static Tensor wrap(void* data, const Shape& shape, DType dtype, Device& device,
                     std::shared_ptr<void> owner);
  // An undefined tensor that still tells its shape and dtype: a value whose memory was given
  // back and lives elsewhere (ZeRO stage 3's parameters between uses, cohort/parallel/ddp.hpp).
  // defined() is false; data, device() and every op refuse it as any undefined tensor.
  static Tensor released(const Shape& shape, DType dtype);

  bool defined() const { return storage_ != nullptr; }
  const Shape& shape() const { return shape_; }
  std::size_t rank() const { return shape_.rank(); }
  std::int64_t dim(int i) const { return shape_[i]; }
  std::int64_t numel() const { return shape_.numel(); }
  std::size_t nbytes() const { return static_cast<std::size_t>(numel()) * dtype_size(dtype_); }
  DType dtype() const { return dtype_; }
  Device& device() const;

  // Raw pointer in the device's address space (not dereferenceable on the host for a GPU tensor).
  void* raw() const;
  // Typed pointer; throws when T does not match dtype().
  template <class T>
  T* data() const {
    COHORT_CHECK(dtype_of<T>() == dtype_, "tensor has dtype ", dtype_name(dtype_),
                 ", accessed as ", dtype_name(dtype_of<T>()));
    return static_cast<T*>(raw());
  }

  // Views sharing storage. reshape accepts one -1 extent, inferred from numel().
  Tensor reshape(const std::vector<std::int64_t>& dims) const;
  Tensor reshape(std::initializer_list<std::int64_t> dims) const {
    return reshape(std::vector<std::int64_t>(dims));
  }
  Tensor reshape(const Shape& shape) const { return reshape(shape.dims()); }
  // Rows [begin, end) of the leading dimension.
  Tensor slice(std::int64_t begin, std::int64_t end) const;

  // New storage.
  Tensor clone() const;
  // A copy on `device` (a clone if it is already there). Blocks until the copy is in place when
  // either side is not the host (the device's blocking copies); device to device it is enqueued.
  Tensor to(Device& device) const;
  // Copies src's elements into this tensor (same dtype and numel; devices may differ). Blocks as
  // to() does.
  void copy_from(const Tensor& src);

  // Host copy of the elements; T must match dtype().
  template <class T>
  std::vector<T> to_vector() const;
  // Element i (flat index) converted to double; convenient in tests, slow for GPU tensors.
  double item(std::int64_t i = 0) const;

  // "tensor([[1.0000, 2.0000], [3.0000, 4.0000]], shape=[2, 2], dtype=f32, device=host)";
  // long dimensions are summarised with "..." as PyTorch does.
  std::string str() const;

 private:
  std::shared_ptr<Storage> storage_;
  std::size_t offset_ = 0;  // bytes into storage_
  Shape shape_;
  DType dtype_ = DType::f32;
};

std::ostream& operator<<(std::ostream& os, const Tensor& t);

// --- template definitions ---
namespace detail {
void copy_host_to_tensor(Tensor& dst, const void* src, std::size_t bytes);
void copy_tensor_to_host(const Tensor& src, void* dst, std::size_t bytes);
}  // namespace detail

template <class T>
Tensor Tensor::from_vector(const std::vector<T>& values, const Shape& shape, Device& device) {
  COHORT_CHECK(static_cast<std::int64_t>(values.size()) == shape.numel(), "from_vector: ",
               values.size(), " values do not fill shape ", shape.str(), " (", shape.numel(),
               " elements)");
  Tensor t = empty(shape, dtype_of<T>(), device);
  detail::copy_host_to_tensor(t, values.data(), values.size() * sizeof(T));
  return t;
}

template <class T>
std::vector<T> Tensor::to_vector() const {
  COHORT_CHECK(dtype_of<T>() == dtype_, "to_vector: tensor has dtype ", dtype_name(dtype_),
               ", requested ", dtype_name(dtype_of<T>()));
  std::vector<T> out(static_cast<std::size_t>(numel()));
  detail::copy_tensor_to_host(*this, out.data(), out.size() * sizeof(T));
  return out;
}

}  // namespace cohort
