// subset(): views of a Dataset, a range of its samples or a list of indices, checked against the
// parent's size, so that a split (train/validation, a shard) costs no copy of the data.
#include <sstream>
#include <vector>

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
// torch.utils.data.Subset: the parent's samples at a list of indices.
class IndexedSubset final : public Dataset {
 public:
  IndexedSubset(DatasetPtr parent, std::vector<std::int64_t> indices)
      : parent_(std::move(parent)), indices_(std::move(indices)) {}
  std::int64_t size() const override { return static_cast<std::int64_t>(indices_.size()); }
  Shape sample_shape() const override { return parent_->sample_shape(); }
  std::int64_t num_classes() const override { return parent_->num_classes(); }
  std::int64_t get(std::int64_t index, float* out) const override {
    COHORT_CHECK(index >= 0 && index < size(), "subset: index ", index, " out of range [0, ",
                 size(), ")");
    return parent_->get(indices_[static_cast<std::size_t>(index)], out);
  }
  std::string describe() const override {
    std::ostringstream os;
    os << indices_.size() << " chosen samples of " << parent_->describe();
    return os.str();
  }

 private:
  DatasetPtr parent_;
  std::vector<std::int64_t> indices_;
};
}  // namespace

DatasetPtr subset(DatasetPtr dataset, std::vector<std::int64_t> indices) {
  COHORT_CHECK(dataset != nullptr, "subset: dataset is null");
  for (std::size_t i = 0; i < indices.size(); ++i)
    COHORT_CHECK(indices[i] >= 0 && indices[i] < dataset->size(), "subset: index ", indices[i],
                 " (position ", i, ") out of range for a data set of ", dataset->size(),
                 " samples");
  return std::make_shared<IndexedSubset>(std::move(dataset), std::move(indices));
}

DatasetPtr subset(DatasetPtr dataset, std::int64_t begin, std::int64_t end) {
  COHORT_CHECK(dataset != nullptr, "subset: dataset is null");
  COHORT_CHECK(0 <= begin && begin <= end && end <= dataset->size(), "subset: [", begin, ", ", end,
               ") out of range for a data set of ", dataset->size(), " samples");
  return std::make_shared<Subset>(std::move(dataset), begin, end);
}

}  // namespace cohort::data
