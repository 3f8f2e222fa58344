// Synchronised batch norm against single-process BatchNorm2d on the concatenated batch, on the
// job's communicator (2, 3 and 4 ranks; shm, ucx, hier): rank r holds r + 1 rows of the global
// batch (uneven; rank 0 a batch of one, at 1x1 spatial size too), and its outputs and input
// gradients equal the reference's rows, the summed gamma/beta gradients the reference's, the
// running statistics the reference's on every rank with the same bits, over two steps; evaluation
// does not communicate; DDP training with convert_sync_batchnorm equals one process training on
// the whole batch.
#include <doctest/doctest.h>

#include <cmath>
#include <memory>
#include <vector>

#include "cohort/layers.hpp"
#include "cohort/optim.hpp"
#include "cohort/parallel/ddp.hpp"
#include "cohort/parallel/sync_batchnorm.hpp"
#include "ddp_test.hpp"

namespace nn = cohort::nn;
namespace par = cohort::parallel;
using cohort::Shape;
using cohort::Tensor;

namespace {

// Values far from zero with a spread of their own per channel (two-pass variance matters).
std::vector<float> values(std::int64_t n, std::uint64_t seed, float offset) {
  std::vector<float> v(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i)
    v[static_cast<std::size_t>(i)] =
        offset + std::sin(0.37f * static_cast<float>(i) + static_cast<float>(seed)) *
                     (1.0f + 0.1f * static_cast<float>(i % 7));
  return v;
}

// Rows [begin, end) of an [N, C, H, W] vector.
std::vector<float> rows(const std::vector<float>& v, std::int64_t per, std::int64_t begin,
                        std::int64_t end) {
  return {v.begin() + begin * per, v.begin() + end * per};
}

double max_rel(const std::vector<float>& got, const std::vector<float>& want) {
  REQUIRE(got.size() == want.size());
  double worst = 0;
  for (std::size_t i = 0; i < got.size(); ++i)
    worst = std::max(worst, std::fabs(static_cast<double>(got[i]) - want[i]) /
                                std::max(1.0, std::fabs(static_cast<double>(want[i]))));
  return worst;
}

// Counts the group's all-reduces (to show evaluation does not communicate).
class CountingGroup final : public nn::BatchNormGroup {
 public:
  explicit CountingGroup(std::shared_ptr<nn::BatchNormGroup> inner) : inner_(std::move(inner)) {}
  int size() const override { return inner_->size(); }
  int rank() const override { return inner_->rank(); }
  void allreduce_sum(double* d, std::size_t n) override {
    ++calls;
    inner_->allreduce_sum(d, n);
  }
  int calls = 0;

 private:
  std::shared_ptr<nn::BatchNormGroup> inner_;
};

std::shared_ptr<nn::BatchNorm2d> make_bn(std::int64_t c, cohort::Device& dev) {
  auto bn = nn::make<nn::BatchNorm2d>(c, dev);
  std::vector<float> w(static_cast<std::size_t>(c)), b(w.size());
  for (std::size_t i = 0; i < w.size(); ++i) w[i] = 1.0f + 0.25f * i, b[i] = 0.5f - 0.1f * i;
  bn->weight()->value.copy_from(Tensor::from_vector(w, Shape{c}, dev));
  bn->bias()->value.copy_from(Tensor::from_vector(b, Shape{c}, dev));
  return bn;
}

}  // namespace

TEST_CASE("SyncBatchNorm equals BatchNorm2d on the concatenated batch, uneven ranks") {
  auto& c = ddp_test::comm();
  cohort::Device& dev = ddp_test::test_device();
  const int world = c.size(), rank = c.rank();
  for (const Shape& plane : {Shape{3, 2}, Shape{1, 1}}) {
    CAPTURE(plane.str());
    const std::int64_t C = 5, H = plane[0], W = plane[1], per = C * H * W;
    const std::int64_t total = world * (world + 1) / 2;  // rank r: r + 1 rows
    const std::int64_t begin = rank * (rank + 1) / 2, end = begin + rank + 1;
    auto ref = make_bn(C, dev);
    auto bn = make_bn(C, dev);
    auto counting = std::make_shared<CountingGroup>(par::batch_norm_group(ddp_test::shared_comm()));
    bn->set_sync_group(counting);
    if (world == 1 && H * W == 1) {  // a group of one is plain batch norm: one value is too few
      CHECK_THROWS_WITH(bn->forward(Tensor::zeros(Shape{1, C, 1, 1}, cohort::DType::f32, dev)),
                        doctest::Contains("more than 1 value per channel"));
      continue;
    }
    for (int step = 0; step < 2; ++step) {
      CAPTURE(step);
      const std::vector<float> x = values(total * per, 11 + step, 3.0f);
      const std::vector<float> g = values(total * per, 29 + step, 0.0f);
      ref->zero_grad();
      bn->zero_grad();
      const Tensor y_ref = ref->forward(Tensor::from_vector(x, Shape{total, C, H, W}, dev));
      const Tensor dx_ref = ref->backward(Tensor::from_vector(g, Shape{total, C, H, W}, dev));
      const int before = counting->calls;
      const Tensor y = bn->forward(Tensor::from_vector(rows(x, per, begin, end),
                                                       Shape{end - begin, C, H, W}, dev));
      CHECK(counting->calls == before + (world > 1 ? 1 : 0));
      const Tensor dx = bn->backward(Tensor::from_vector(rows(g, per, begin, end),
                                                         Shape{end - begin, C, H, W}, dev));
      CHECK(counting->calls == before + (world > 1 ? 2 : 0));
      const double ry = max_rel(y.to_vector<float>(), rows(y_ref.to_vector<float>(), per, begin, end));
      const double rdx = max_rel(dx.to_vector<float>(), rows(dx_ref.to_vector<float>(), per, begin, end));
      MESSAGE(world << " ranks, " << plane.str() << " planes, step " << step << ": output "
                    << ry << ", input gradient " << rdx << " (max relative difference)");
      CHECK(ry <= 2e-6);
      CHECK(rdx <= 2e-5);
      // gamma and beta: this rank's share of the sums; over the ranks, the reference's.
      for (const auto& [mine, theirs] : {std::pair{bn->weight(), ref->weight()},
                                         std::pair{bn->bias(), ref->bias()}}) {
        std::vector<float> sum = mine->grad.to_vector<float>();
        c.allreduce(sum.data(), sum.data(), sum.size(), cohort::DType::f32,
                    cohort::comm::ReduceOp::sum)->wait();
        CHECK(max_rel(sum, theirs->grad.to_vector<float>()) <= 2e-5);
      }
      // Running statistics: the reference's, and the same bits on every rank.
      for (const char* name : {"running_mean", "running_var"}) {
        CAPTURE(name);
        std::vector<float> mine, want;
        for (const auto& b : bn->named_buffers())
          if (b.name == name) mine = b.tensor.to_vector<float>();
        for (const auto& b : ref->named_buffers())
          if (b.name == name) want = b.tensor.to_vector<float>();
        CHECK(max_rel(mine, want) <= 2e-6);
        std::vector<float> all(mine.size() * static_cast<std::size_t>(world));
        c.allgather(mine.data(), all.data(), mine.size(), cohort::DType::f32)->wait();
        for (int r = 0; r < world; ++r)
          CHECK(std::vector<float>(all.begin() + r * static_cast<std::ptrdiff_t>(mine.size()),
                                   all.begin() + (r + 1) * static_cast<std::ptrdiff_t>(mine.size())) ==
                mine);
      }
    }
    // Evaluation: the running statistics, no communication, the reference's outputs.
    bn->eval();
    ref->eval();
    const std::vector<float> x = values((end - begin) * per, 5, 2.0f);
    const int before = counting->calls;
    const Tensor y = bn->forward(Tensor::from_vector(x, Shape{end - begin, C, H, W}, dev));
    CHECK(counting->calls == before);
    CHECK(max_rel(y.to_vector<float>(),
                  ref->forward(Tensor::from_vector(x, Shape{end - begin, C, H, W}, dev))
                      .to_vector<float>()) <= 2e-6);
  }
}

TEST_CASE("SyncBatchNorm: evaluation without running statistics stays local, as torch's") {
  cohort::Device& dev = ddp_test::test_device();
  const int rank = ddp_test::comm().rank();
  nn::BatchNormOptions o;
  o.track_running_stats = false;  // evaluation normalises with the batch's own statistics
  auto bn = nn::make<nn::BatchNorm2d>(3, dev, o);
  auto ref = nn::make<nn::BatchNorm2d>(3, dev, o);
  auto counting = std::make_shared<CountingGroup>(par::batch_norm_group(ddp_test::shared_comm()));
  bn->set_sync_group(counting);
  bn->eval();
  ref->eval();
  const std::vector<float> x = values((rank + 2) * 3 * 4, 40 + rank, 1.0f);  // uneven shards
  const Tensor in = Tensor::from_vector(x, Shape{rank + 2, 3, 2, 2}, dev);
  CHECK(bn->forward(in).to_vector<float>() == ref->forward(in).to_vector<float>());
  CHECK(counting->calls == 0);
}

TEST_CASE("SyncBatchNorm: DDP with convert_sync_batchnorm trains as one process on the whole batch") {
  auto& c = ddp_test::comm();
  cohort::Device& dev = ddp_test::test_device();
  const auto net = [&] {
    nn::manual_seed(7);
    return nn::make<nn::Sequential>(std::vector<std::pair<std::string, nn::ModulePtr>>{
        {"conv", nn::make<nn::Conv2d>(nn::Conv2dOptions(1, 4, 3), dev)},
        {"bn", nn::make<nn::BatchNorm2d>(4, dev)},
        {"relu", nn::make<nn::ReLU>()},
        {"flatten", nn::make<nn::Flatten>()},
        {"fc", nn::make<nn::Linear>(4 * 6 * 6, 10, dev)},
        {"logp", nn::make<nn::LogSoftmax>(1)}});
  };
  const std::int64_t per_rank = 2, total = per_rank * c.size();  // small per-rank batches
  const auto batch = [&](int step, std::int64_t b, std::int64_t e) {
    std::vector<float> x = values(total * 64, 100 + step, 0.5f);
    std::vector<std::int64_t> y(static_cast<std::size_t>(total));
    for (std::int64_t i = 0; i < total; ++i) y[static_cast<std::size_t>(i)] = (i * 3 + step) % 10;
    return std::pair{Tensor::from_vector(rows(x, 64, b, e), Shape{e - b, 1, 8, 8}, dev),
                     Tensor::from_vector(std::vector<std::int64_t>(y.begin() + b, y.begin() + e),
                                         Shape{e - b}, dev)};
  };
  const auto train = [&](nn::Module& m, std::int64_t b, std::int64_t e) {
    cohort::optim::SGDOptions o;
    o.lr = 0.1;
    cohort::optim::SGD opt(m.parameters(), o);
    for (int step = 0; step < 5; ++step) {
      m.zero_grad();
      const auto [x, y] = batch(step, b, e);
      nn::NLLLoss loss;
      loss.forward(m.forward(x), y);
      m.backward(loss.backward(), false);
      opt.step();
    }
  };
  auto model = net();
  CHECK(par::convert_sync_batchnorm(*model, ddp_test::shared_comm()) == 1);
  par::DistributedDataParallel ddp(model, ddp_test::shared_comm());
  train(ddp, c.rank() * per_rank, (c.rank() + 1) * per_rank);
  auto ref = net();
  train(*ref, 0, total);
  const auto a = ddp.module().state_dict(), b = ref->state_dict();
  REQUIRE(a.size() == b.size());
  for (std::size_t i = 0; i < a.size(); ++i) {
    CAPTURE(a[i].name);
    if (a[i].tensor.dtype() != cohort::DType::f32) continue;
    CHECK(max_rel(a[i].tensor.to_vector<float>(), b[i].tensor.to_vector<float>()) <= 1e-4);
  }
  CHECK(ddp.weights_identical_across_ranks());
  // Without it, each rank normalises its 2 rows by themselves: far from the reference.
  if (c.size() > 1) {
    par::DistributedDataParallel plain(net(), ddp_test::shared_comm());
    train(plain, c.rank() * per_rank, (c.rank() + 1) * per_rank);
    double worst = 0;
    const auto p = plain.module().state_dict();
    for (std::size_t i = 0; i < p.size(); ++i)
      if (p[i].tensor.dtype() == cohort::DType::f32)
        worst = std::max(worst, max_rel(p[i].tensor.to_vector<float>(), b[i].tensor.to_vector<float>()));
    MESSAGE("plain BatchNorm2d under DDP: " << worst << " from the whole-batch reference");
    CHECK(worst > 1e-3);
  }
}
