// Shape: extents, element counts and the "[2, 3]" printing every error message uses.
#include "cohort/core/shape.hpp"

#include <ostream>
#include <sstream>

#include "cohort/core/error.hpp"

namespace cohort {

Shape::Shape(std::initializer_list<std::int64_t> dims) : Shape(std::vector<std::int64_t>(dims)) {}

Shape::Shape(std::vector<std::int64_t> dims) : dims_(std::move(dims)) {
  for (std::size_t i = 0; i < dims_.size(); ++i)
    COHORT_CHECK(dims_[i] >= 0, "shape ", str(), " has negative extent at dimension ", i);
}

std::int64_t Shape::operator[](int i) const {
  const int r = static_cast<int>(dims_.size());
  const int j = i < 0 ? i + r : i;
  COHORT_CHECK(j >= 0 && j < r, "dimension ", i, " out of range for shape ", str(), " of rank ", r);
  return dims_[static_cast<std::size_t>(j)];
}

std::int64_t Shape::numel() const {
  std::int64_t n = 1;
  for (auto d : dims_) n *= d;
  return n;
}

std::string Shape::str() const {
  std::ostringstream os;
  os << "[";
  for (std::size_t i = 0; i < dims_.size(); ++i) os << (i ? ", " : "") << dims_[i];
  os << "]";
  return os.str();
}

std::ostream& operator<<(std::ostream& os, const Shape& s) { return os << s.str(); }

}  // namespace cohort
