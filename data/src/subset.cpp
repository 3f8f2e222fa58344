#include <sstream>

#include "cohort/core/error.hpp"
#include "cohort/data/dataset.hpp"

namespace cohort::data {
namespace {
class Subset final : public Dataset {
 public:
  Subset(DatasetPtr parent, std::int64_t begin, std::int64_t end)
      : parent_(std::move(parent)), begin_(begin), end_(end) {}
  std::int64_t size() const override { return end_ - begin_; }
  Shape sample_shape() const override { return parent_->sample_shape(); }
  std::int64_t num_classes() const override { return parent_->num_classes(); }
  std::int64_t get(std::int64_t index, float* out) const override {
    COHORT_CHECK(index >= 0 && index < size(), "subset: index ", index, " out of range [0, ",
                 size(), ")");
    return parent_->get(begin_ + index, out);
  }
  std::string describe() const override {
    std::ostringstream os;
    os << "samples [" << begin_ << ", " << end_ << ") of " << parent_->describe();
    return os.str();
  }

 private:
  DatasetPtr parent_;
  std::int64_t begin_, end_;
};
}  // namespace

DatasetPtr subset(DatasetPtr dataset, std::int64_t begin, std::int64_t end) {
  COHORT_CHECK(dataset != nullptr, "subset: dataset is null");
  COHORT_CHECK(0 <= begin && begin <= end && end <= dataset->size(), "subset: [", begin, ", ", end,
               ") out of range for a data set of ", dataset->size(), " samples");
  return std::make_shared<Subset>(std::move(dataset), begin, end);
}

}  // namespace cohort::data
