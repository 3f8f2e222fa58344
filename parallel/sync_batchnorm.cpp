// parallel::batch_norm_group and convert_sync_batchnorm (sync_batchnorm.hpp): the communicator
// behind nn::BatchNorm2d's synchronised statistics, and the walk over a model's tree.
#include "cohort/parallel/sync_batchnorm.hpp"

#include <string>

#include "cohort/core/error.hpp"

namespace cohort::parallel {
namespace {

class CommGroup final : public nn::BatchNormGroup {
 public:
  explicit CommGroup(std::shared_ptr<comm::Communicator> comm) : comm_(std::move(comm)) {}
  int size() const override { return comm_->size(); }
  int rank() const override { return comm_->rank(); }
  void allreduce_sum(double* data, std::size_t n) override {
    comm_->allreduce(data, data, n, DType::f64, comm::ReduceOp::sum)->wait();
  }

 private:
  std::shared_ptr<comm::Communicator> comm_;
};

template <class F>
void each_batch_norm(nn::Module& m, F&& f) {
  if (auto* bn = dynamic_cast<nn::BatchNorm2d*>(&m)) f(*bn);
  for (const auto& child : m.children()) each_batch_norm(*child.second, f);
}

}  // namespace

std::shared_ptr<nn::BatchNormGroup> batch_norm_group(std::shared_ptr<comm::Communicator> comm) {
  COHORT_CHECK(comm != nullptr, "batch_norm_group: communicator is null");
  return std::make_shared<CommGroup>(std::move(comm));
}

int convert_sync_batchnorm(nn::Module& model, std::shared_ptr<comm::Communicator> comm) {
  COHORT_CHECK(comm != nullptr, "convert_sync_batchnorm: communicator is null");
  const auto group = batch_norm_group(std::move(comm));
  int n = 0;
  each_batch_norm(model, [&](nn::BatchNorm2d& bn) {
    bn.set_sync_group(group);
    ++n;
  });
  return n;
}

void rebind_sync_batchnorm(nn::Module& model, std::shared_ptr<comm::Communicator> comm) {
  std::shared_ptr<nn::BatchNormGroup> group;
  each_batch_norm(model, [&](nn::BatchNorm2d& bn) {
    if (!bn.sync_group()) return;
    if (!group) group = batch_norm_group(comm);
    bn.set_sync_group(group);
  });
}

}  // namespace cohort::parallel
