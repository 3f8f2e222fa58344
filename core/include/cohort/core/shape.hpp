// A tensor shape: up to any rank, row-major, every extent >= 0.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <iosfwd>
#include <string>
#include <vector>

namespace cohort {

class Shape {
 public:
  Shape() = default;
  Shape(std::initializer_list<std::int64_t> dims);
  explicit Shape(std::vector<std::int64_t> dims);

  std::size_t rank() const { return dims_.size(); }
  // Extent of dimension i; negative i counts from the end (-1 is the last). Throws when out of range.
  std::int64_t operator[](int i) const;
  std::int64_t numel() const;  // product of extents; 1 for rank 0
  const std::vector<std::int64_t>& dims() const { return dims_; }

  bool operator==(const Shape& o) const { return dims_ == o.dims_; }
  bool operator!=(const Shape& o) const { return dims_ != o.dims_; }
  std::string str() const;  // "[64, 1, 28, 28]"

 private:
  std::vector<std::int64_t> dims_;
};

std::ostream& operator<<(std::ostream& os, const Shape& s);

}  // namespace cohort
