// A custom model trained data-parallel, from the docs alone: docs/TRAINING.md walks through it.
// Its PyTorch twin is examples/custom_ddp_torch.py; the backend comes from COHORT_COMM.
//   build/bin/cohortrun --nproc-per-node 2 build/bin/custom_ddp        (COHORT_COMM=ucx: same bits)
#include <cohort/cohort.hpp>

#include <cstdio>

namespace nn = cohort::nn;
namespace data = cohort::data;

int main() try {
  cohort::Device& dev = cohort::device();  // COHORT_DEVICE, else a GPU when there is one
  auto comm = cohort::comm::init_process_group("", &dev);  // launcher's ranks; nccl for GPUs
  nn::manual_seed(1);
  auto model = nn::sequential({{"flatten", nn::make<nn::Flatten>()},
                               {"fc1", nn::make<nn::Linear>(784, 256, dev)},
                               {"relu", nn::make<nn::ReLU>()},
                               {"fc2", nn::make<nn::Linear>(256, 10, dev)}});
  auto ddp = nn::make<cohort::parallel::DistributedDataParallel>(model, comm);

  const std::vector<data::TransformPtr> tf = {data::normalize({0.2860f}, {0.3530f})};
  data::DataLoaderOptions o;
  o.shuffle = true;
  data::DataLoader train(data::load_mnist_dir(data::kFashionMnistDir, data::Split::train), o, tf,
                         cohort::host_device(), &dev);
  o.batch_size = 1000;
  o.shuffle = false;
  data::DataLoader test(data::load_mnist_dir(data::kFashionMnistDir, data::Split::test), o, tf,
                        cohort::host_device(), &dev);

  cohort::optim::Adam adam(ddp->parameters());
  nn::CrossEntropyLoss loss;
  cohort::train::TrainerOptions opts;
  opts.checkpoint_path = "custom_ddp.safetensors";
  cohort::train::Trainer trainer(*ddp, loss, adam, nullptr, opts);
  const auto results = trainer.fit(train, &test);
  if (trainer.is_lead())
    std::printf("test accuracy %.2f%%, weights %s\n", 100 * results.back().eval.accuracy,
                ddp->weights_digest().c_str());
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "custom_ddp: %s\n", e.what());
  return 1;
}
