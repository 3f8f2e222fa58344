// subset(): views of a Dataset, a range of its samples or a list of indices, checked against the
// parent's size, so that a split (train/validation, a shard) costs no copy of the data.
#include <sstream>
#include <vector>

#include "cohort/core/error.hpp"
#include "cohort/data/dataset.hpp"

namespace cohort::data {
namespace {
// What both subsets share: every sample is one of the parent's (parent_index), with its shape,
// size rule, classes and names.
class Mapped : public Dataset {
 public:
  explicit Mapped(DatasetPtr parent) : parent_(std::move(parent)) {}
  Shape sample_shape() const override { return parent_->sample_shape(); }
  std::int64_t num_classes() const override { return parent_->num_classes(); }
  bool variable_size() const override { return parent_->variable_size(); }
  std::vector<std::string> class_names() const override { return parent_->class_names(); }
  std::int64_t get(std::int64_t index, float* out) const override {
    return parent_->get(parent_index(index), out);
  }
  std::int64_t get_sized(std::int64_t index, std::vector<float>& out, Shape& shape) const override {
    return parent_->get_sized(parent_index(index), out, shape);
  }

 protected:
  virtual std::int64_t at(std::int64_t index) const = 0;
  DatasetPtr parent_;

 private:
  std::int64_t parent_index(std::int64_t index) const {
    COHORT_CHECK(index >= 0 && index < size(), "subset: index ", index, " out of range [0, ",
                 size(), ")");
    return at(index);
  }
};

class Subset final : public Mapped {
 public:
  Subset(DatasetPtr parent, std::int64_t begin, std::int64_t end)
      : Mapped(std::move(parent)), begin_(begin), end_(end) {}
  std::int64_t size() const override { return end_ - begin_; }
  std::string describe() const override {
    std::ostringstream os;
    os << "samples [" << begin_ << ", " << end_ << ") of " << parent_->describe();
    return os.str();
  }

 private:
  std::int64_t at(std::int64_t index) const override { return begin_ + index; }
  std::int64_t begin_, end_;
};
// torch.utils.data.Subset: the parent's samples at a list of indices.
class IndexedSubset final : public Mapped {
 public:
  IndexedSubset(DatasetPtr parent, std::vector<std::int64_t> indices)
      : Mapped(std::move(parent)), indices_(std::move(indices)) {}
  std::int64_t size() const override { return static_cast<std::int64_t>(indices_.size()); }
  std::string describe() const override {
    std::ostringstream os;
    os << indices_.size() << " chosen samples of " << parent_->describe();
    return os.str();
  }

 private:
  std::int64_t at(std::int64_t index) const override {
    return indices_[static_cast<std::size_t>(index)];
  }
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
