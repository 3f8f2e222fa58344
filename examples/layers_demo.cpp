// A tour of the layer library: PyTorch's MNIST example CNN built from cohort's layers, its
// summary and state_dict names, a gradient-ready hook, a few hand-written SGD steps on a fixed
// synthetic batch, and what a shape mistake looks like.
//
//   build/bin/layers_demo [--device host|cuda|...] [--steps N] [--lr X]
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "cohort/core/ops.hpp"
#include "cohort/devices.hpp"
#include "cohort/layers.hpp"
#include "cohort/models/mnist.hpp"

namespace nn = cohort::nn;
using cohort::Shape;
using cohort::Tensor;

int main(int argc, char** argv) {
  std::string spec;
  int steps = 5;
  float lr = 0.05f;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--device" && i + 1 < argc) spec = argv[++i];
    else if (a == "--steps" && i + 1 < argc) steps = std::atoi(argv[++i]);
    else if (a == "--lr" && i + 1 < argc) lr = static_cast<float>(std::atof(argv[++i]));
    else {
      std::fprintf(stderr, "usage: layers_demo [--device SPEC] [--steps N] [--lr X]\n");
      return 2;
    }
  }
  try {
    cohort::Device& dev = cohort::device(spec);
    std::printf("host threads: %d per rank (%s)\n", cohort::host_threads().threads,
                cohort::host_threads().reason.c_str());
    std::printf("device: %s\n\n", dev.name().c_str());

    // The network of PyTorch's examples/mnist/main.py, with its state_dict names.
    nn::manual_seed(1);
    auto net = cohort::models::mnist_net(dev);
    std::printf("%s\n", net->summary(Shape{64, 1, 28, 28}).c_str());

    std::printf("state_dict:");
    for (const auto& e : net->state_dict())
      std::printf(" %s%s", e.name.c_str(), e.tensor.shape().str().c_str());
    std::printf("\n\n");

    // Data parallelism registers a hook like this to start all-reducing a gradient as soon as it
    // is final, while backward still runs through earlier layers.
    std::vector<std::string> ready;
    net->register_grad_ready_hook(
        [&](const cohort::NamedParameter& p) { ready.push_back(p.name); });

    // A fixed synthetic batch: 64 images, 10 classes.
    const Tensor images = Tensor::normal({64, 1, 28, 28}, 0.0f, 1.0f, 7, dev);
    std::vector<std::int64_t> labels(64);
    for (std::size_t i = 0; i < labels.size(); ++i) labels[i] = static_cast<std::int64_t>(i % 10);
    const Tensor target = Tensor::from_vector(labels, Shape{64}, dev);

    nn::NLLLoss criterion;
    for (int step = 0; step < steps; ++step) {
      net->zero_grad();
      ready.clear();
      criterion.forward(net->forward(images), target);
      net->backward(criterion.backward(), /*need_input_grad=*/false);
      for (const auto& p : net->parameters()) cohort::ops::axpy(-lr, p->grad, p->value);  // SGD
      std::printf("step %d  loss %.4f\n", step, criterion.value());
    }
    std::printf("\ngradients became final in this order:");
    for (const auto& n : ready) std::printf(" %s", n.c_str());
    std::printf("\n\n");

    // Mistakes name the layer and the shapes.
    try {
      net->forward(Tensor::zeros({64, 784}, cohort::DType::f32, dev));
    } catch (const cohort::Error& e) {
      std::printf("forward on a flat batch:\n  %s\n", e.what());
    }
  } catch (const cohort::Error& e) {
    std::fprintf(stderr, "layers_demo: %s\n", e.what());
    return 1;
  }
  return 0;
}
