// A toy network in the style of the classic from-scratch cuDNN examples: 3x3 single-channel
// inputs, three 3x3 convolutions (16, 32, 64 channels, padding 1, ReLU), fully connected
// 576 -> 512 -> 128 -> 10, trained with MSE against one-hot targets by plain SGD (lr 0.001),
// printing the cost as it goes and an ASCII chart of the cost history at the end.
//
//   build/bin/toy_network [--steps N] [--batch-size B] [--lr X] [--device SPEC] [--seed S]
//
// The data is cohort's seeded synthetic set (10 classes, each a fixed 3x3 template plus noise),
// so the run is the same every time and needs no files.
#include <CLI/CLI.hpp>

#include <cstdio>

#include "cohort/core/ops.hpp"
#include "cohort/data/dataloader.hpp"
#include "cohort/data/synthetic.hpp"
#include "cohort/devices.hpp"
#include "cohort/layers.hpp"
#include "cohort/optim.hpp"
#include "cohort/train/ascii_plot.hpp"

namespace nn = cohort::nn;
using cohort::Tensor;

int main(int argc, char** argv) {
  std::int64_t steps = 3000, batch = 32;
  double lr = 0.001;
  std::uint64_t seed = 1;
  std::string device;
  CLI::App app{"toy network: 3 convs + 3 FC, MSE on one-hot targets", "toy_network"};
  app.add_option("--steps", steps, "SGD steps")
      ->check(CLI::Range(std::int64_t{1}, std::int64_t{1} << 40));
  app.add_option("--batch-size", batch, "batch size")
      ->check(CLI::Range(std::int64_t{1}, std::int64_t{1} << 20));
  app.add_option("--lr", lr, "learning rate")->check(CLI::Range(0.0, 1e6));
  app.add_option("--device", device, "host, cuda, cuda:N");
  app.add_option("--seed", seed, "random seed");
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::fprintf(stderr, "toy_network: %s (see --help)\n", e.what());
    return 2;
  }
  try {
    cohort::Device& dev = cohort::device(device);
    std::printf("host threads: %d per rank (%s)\n", cohort::host_threads().threads,
                cohort::host_threads().reason.c_str());
    auto& host = cohort::host_device();
    nn::manual_seed(seed);
    auto net = nn::make<nn::Sequential>(std::initializer_list<nn::ModulePtr>{
        nn::make<nn::Conv2d>(nn::Conv2dOptions(1, 16, 3).padding(1), dev), nn::make<nn::ReLU>(),
        nn::make<nn::Conv2d>(nn::Conv2dOptions(16, 32, 3).padding(1), dev), nn::make<nn::ReLU>(),
        nn::make<nn::Conv2d>(nn::Conv2dOptions(32, 64, 3).padding(1), dev), nn::make<nn::ReLU>(),
        nn::make<nn::Flatten>(),
        nn::make<nn::Linear>(576, 512, dev), nn::make<nn::ReLU>(),
        nn::make<nn::Linear>(512, 128, dev), nn::make<nn::ReLU>(),
        nn::make<nn::Linear>(128, 10, dev)});
    std::printf("%s\n", net->summary(cohort::Shape{batch, 1, 3, 3}).c_str());

    auto ds =
        std::make_shared<cohort::data::SyntheticDataset>(4096, cohort::Shape{1, 3, 3}, 10, seed);
    cohort::data::DataLoaderOptions lo;
    lo.batch_size = batch;
    lo.shuffle = true;
    lo.seed = seed;
    lo.drop_last = true;
    cohort::data::DataLoader loader(ds, lo, {}, host, &dev);
    cohort::optim::SGDOptions so;
    so.lr = lr;
    cohort::optim::SGD sgd(net->parameters(), so);
    // Summed squared error, as the from-scratch examples use: the gradient is 2 (output - target)
    // per element, not divided by the batch, which is what makes lr 0.001 a sensible step.
    nn::MSELoss mse(nn::Reduction::sum);

    std::vector<double> cost;
    std::int64_t epoch = 0, correct = 0, seen = 0;
    cohort::data::Batch b;
    for (std::int64_t step = 0; step < steps; ++step) {
      if (!loader.next(b)) {
        loader.set_epoch(++epoch);
        loader.next(b);
      }
      // One-hot targets from the labels.
      const auto labels = b.labels.to_vector<std::int64_t>();
      std::vector<float> onehot(labels.size() * 10, 0.0f);
      for (std::size_t i = 0; i < labels.size(); ++i)
        onehot[i * 10 + static_cast<std::size_t>(labels[i])] = 1.0f;
      const Tensor target =
          Tensor::from_vector(onehot, {static_cast<std::int64_t>(labels.size()), 10}, dev);
      const Tensor out = net->forward(b.images);
      mse.forward(out, target);
      net->backward(mse.backward(), false);
      sgd.step();
      sgd.zero_grad();
      cost.push_back(mse.value() / static_cast<double>(labels.size()));  // per sample
      if (step >= steps - 100) {  // accuracy over the last 100 steps
        Tensor pred = Tensor::empty({out.dim(0)}, cohort::DType::i64, dev);
        cohort::ops::argmax(out, pred);
        const auto p = pred.to_vector<std::int64_t>();
        for (std::size_t i = 0; i < p.size(); ++i) correct += p[i] == labels[i];
        seen += static_cast<std::int64_t>(p.size());
      }
      if ((step + 1) % 250 == 0 || step == 0)
        std::printf("step %5lld  cost %.6f\n", static_cast<long long>(step + 1),
                    mse.value() / static_cast<double>(labels.size()));
    }
    std::printf("\n%s",
                cohort::train::ascii_plot(cost, "cost history (squared error per sample, per step)")
                    .c_str());
    std::printf("accuracy over the last 100 steps: %.1f%% (chance: 10%%)\n",
                seen ? 100.0 * static_cast<double>(correct) / static_cast<double>(seen) : 0.0);
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "toy_network: %s\n", e.what());
    return 1;
  }
}
