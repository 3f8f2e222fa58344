// Forward+backward time per layer of the MNIST CNN (PyTorch's example Net) on a cohort device
// (the host by default), next to the same layers in PyTorch on the same device (one thread on the
// host), measured in the same run by bench/layers_bench_torch.py (which this program runs with
// /usr/bin/python3, or --python).
//
//   build/bin/layers_bench [--batch 64] [--min-time 0.3] [--rounds 5] [--threads 1] [--no-torch]
//                          [--python /usr/bin/python3] [--torch-script PATH] [--device cuda]
//
// On a GPU every iteration ends with a device synchronisation on both sides (so a figure is the
// time to finish the work, not to enqueue it), and PyTorch runs with TF32 off in cuDNN and cuBLAS,
// as cohort does by default (cohort/core/math_mode.hpp).
//
// Method, identical on both sides: per layer, a fixed random input; one iteration is forward +
// backward of a fixed random output gradient; a measurement is the median over iterations run for
// at least --min-time seconds after 3 warm-up iterations. The two sides alternate for --rounds
// rounds (cohort's layers, then PyTorch's, then cohort's again, ...). Printed per side: the best
// round (load from other processes only ever adds time, so the least disturbed round is the best
// estimate) and the ratio of the best rounds; the last column is the ratio of the median rounds.
// Parameter gradients accumulate across iterations on both sides. conv1 computes no input gradient
// (its input is the image), as in training. "model" is one whole training step's forward + backward
// (Sequential with its Conv2d+ReLU fusion, NLL loss) against PyTorch's Net.
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "cohort/devices.hpp"
#include "cohort/layers.hpp"
#include "median_time.hpp"

namespace nn = cohort::nn;
using cohort::Shape;
using cohort::Tensor;

namespace {

// The time of `work` and the device's synchronisation (a no-op on the host): median_time.hpp.
double median_ms(const std::function<void()>& work, double min_time, cohort::Device& dev) {
  return ::median_ms(
      [&] {
        work();
        dev.synchronize();
      },
      min_time);
}

// Forward + backward of one module on a fixed input and output gradient.
double time_module(nn::Module& m, const Tensor& x, bool need_input_grad, double min_time) {
  const Tensor y = m.forward(x);
  const Tensor g = Tensor::normal(y.shape(), 0.0f, 1.0f, 99, x.device());
  m.backward(g, need_input_grad);
  return median_ms(
      [&] {
        m.forward(x);
        m.backward(g, need_input_grad);
      },
      min_time, x.device());
}

std::map<std::string, double> run_torch(const std::string& python, const std::string& script,
                                        int batch, double min_time, const std::string& device) {
  std::map<std::string, double> out;
  const std::string cmd = python + " " + script + " --batch " + std::to_string(batch) +
                          " --min-time " + std::to_string(min_time) + " --device " + device;
  FILE* p = popen(cmd.c_str(), "r");
  if (p == nullptr) return out;
  char name[128];
  double ms = 0;
  while (std::fscanf(p, "%127s %lf", name, &ms) == 2) out[name] = ms;
  const int rc = pclose(p);
  if (rc != 0) std::fprintf(stderr, "layers_bench: '%s' exited with status %d\n", cmd.c_str(), rc);
  return out;
}

// "2.15.0+cu132", as the peer's interpreter reports it (empty if it cannot say), for the header.
std::string torch_version(const std::string& python) {
  FILE* p =
      popen((python + " -c 'import torch; print(torch.__version__)' 2>/dev/null").c_str(), "r");
  if (p == nullptr) return "";
  char v[64] = {0};
  if (std::fscanf(p, "%63s", v) != 1) v[0] = 0;
  pclose(p);
  return v;
}

}  // namespace

int main(int argc, char** argv) {
  int batch = 64, threads = 1, rounds = 5;
  double min_time = 0.3;
  bool torch = true;
  std::string python = "/usr/bin/python3";
  std::string script = COHORT_BENCH_DIR "/layers_bench_torch.py";
  std::string spec = "host";
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "layers_bench: %s needs a value\n", a.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--batch") batch = std::atoi(next().c_str());
    else if (a == "--min-time") min_time = std::atof(next().c_str());
    else if (a == "--rounds") rounds = std::atoi(next().c_str());
    else if (a == "--threads") threads = std::atoi(next().c_str());
    else if (a == "--no-torch") torch = false;
    else if (a == "--python") python = next();
    else if (a == "--torch-script") script = next();
    else if (a == "--device") spec = next();
    else {
      std::fprintf(stderr,
                   "usage: layers_bench [--batch N] [--min-time S] [--rounds N] [--threads N] "
                   "[--no-torch] [--python PATH] [--torch-script PATH] [--device SPEC]\n");
      return 2;
    }
  }
  if (batch < 1 || threads < 1 || rounds < 1) {
    std::fprintf(stderr, "layers_bench: --batch, --threads and --rounds must be >= 1\n");
    return 2;
  }
  // After the host device exists (it sets its own count when created): oneDNN's sgemm threads
  // through OpenMP, and the contention governor must not change the count mid-measurement.
  cohort::set_host_threads(threads);
  cohort::Device* picked = nullptr;
  try {
    picked = &cohort::device(spec);
  } catch (const cohort::Error& e) {
    std::fprintf(stderr, "layers_bench: %s\n", e.what());
    return 2;
  }
  cohort::Device& dev = *picked;
  const bool gpu = dev.type() == cohort::DeviceType::cuda;
  nn::manual_seed(0);
  const std::int64_t b = batch;

  auto conv1 = nn::make<nn::Conv2d>(nn::Conv2dOptions(1, 32, 3), dev);
  auto conv2 = nn::make<nn::Conv2d>(nn::Conv2dOptions(32, 64, 3), dev);
  auto fc1 = nn::make<nn::Linear>(9216, 128, dev);
  auto fc2 = nn::make<nn::Linear>(128, 10, dev);
  struct Layer {
    std::string name;
    nn::ModulePtr m;
    Shape x;
    bool need_input_grad;
  };
  const std::vector<Layer> layers = {
      {"conv1", conv1, {b, 1, 28, 28}, false},
      {"relu1", nn::make<nn::ReLU>(), {b, 32, 26, 26}, true},
      {"conv2", conv2, {b, 32, 26, 26}, true},
      {"relu2", nn::make<nn::ReLU>(), {b, 64, 24, 24}, true},
      {"max_pool", nn::make<nn::MaxPool2d>(nn::MaxPool2dOptions(2)), {b, 64, 24, 24}, true},
      {"dropout1", nn::make<nn::Dropout>(0.25f), {b, 64, 12, 12}, true},
      {"flatten", nn::make<nn::Flatten>(), {b, 64, 12, 12}, true},
      {"fc1", fc1, {b, 9216}, true},
      {"relu3", nn::make<nn::ReLU>(), {b, 128}, true},
      {"dropout2", nn::make<nn::Dropout>(0.5f), {b, 128}, true},
      {"fc2", fc2, {b, 128}, true},
      {"log_softmax", nn::make<nn::LogSoftmax>(1), {b, 10}, true},
  };
  // The loss on log-probabilities, and the whole model: one training step's forward + backward
  // (the Sequential fuses conv+ReLU; the layers above are the same parameter-holding instances).
  const Tensor target = Tensor::from_vector(std::vector<std::int64_t>(b, 3), Shape{b}, dev);
  nn::LogSoftmax ls(1);
  const Tensor logp = ls.forward(Tensor::normal({b, 10}, 0.0f, 1.0f, 8, dev));
  nn::NLLLoss nll;
  nn::Sequential net({{"conv1", conv1}, {"relu1", nn::make<nn::ReLU>()}, {"conv2", conv2},
                      {"relu2", nn::make<nn::ReLU>()},
                      {"pool", nn::make<nn::MaxPool2d>(nn::MaxPool2dOptions(2))},
                      {"dropout1", nn::make<nn::Dropout>(0.25f)},
                      {"flatten", nn::make<nn::Flatten>()}, {"fc1", fc1},
                      {"relu3", nn::make<nn::ReLU>()}, {"dropout2", nn::make<nn::Dropout>(0.5f)},
                      {"fc2", fc2}, {"log_softmax", nn::make<nn::LogSoftmax>(1)}});
  const Tensor images = Tensor::normal({b, 1, 28, 28}, 0.0f, 1.0f, 9, dev);

  std::vector<std::string> order;
  std::map<std::string, std::vector<double>> ours, theirs;
  bool torch_failed = false;
  for (int r = 0; r < rounds; ++r) {
    for (const auto& l : layers) {
      const Tensor x = Tensor::normal(l.x, 0.0f, 1.0f, 7, dev);
      ours[l.name].push_back(time_module(*l.m, x, l.need_input_grad, min_time));
    }
    ours["nll_loss"].push_back(median_ms([&] {
      nll.forward(logp, target);
      nll.backward();
    }, min_time, dev));
    ours["model"].push_back(median_ms([&] {
      nll.forward(net.forward(images), target);
      net.backward(nll.backward(), false);
    }, min_time, dev));
    if (torch && !torch_failed) {
      const auto t = run_torch(python, script, batch, min_time, gpu ? "cuda" : "cpu");
      torch_failed = t.empty();
      for (const auto& [name, ms] : t) theirs[name].push_back(ms);
    }
  }
  for (const auto& l : layers) order.push_back(l.name);
  order.push_back("nll_loss");
  order.push_back("model");

  auto median = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
  };
  auto best = [](const std::vector<double>& v) { return *std::min_element(v.begin(), v.end()); };
  std::printf("# layers_bench: MNIST CNN, batch %d, cohort's host GEMM %d thread(s) (%s), "
              "forward+backward per layer; %d alternating rounds, each the median over >= %.2f s\n"
              "# cohort: %s; peer: %s\n",
              batch, cohort::host_threads().threads, cohort::host_threads().reason.c_str(), rounds,
              min_time,
              gpu ? (dev.name() + " (cuDNN, cuBLAS, Thrust; TF32 off)").c_str()
                  : "host device (Kokkos Serial + oneDNN sgemm)",
              torch ? (torch_failed ? std::string("PyTorch (FAILED to run)")
                                    : "PyTorch " + torch_version(python) +
                                          (gpu ? " on the same GPU (TF32 off)" : " CPU, 1 thread"))
                            .c_str()
                    : "none");
  std::printf("%-12s %10s %10s %13s %13s\n", "layer", "cohort ms", "torch ms", "cohort/torch",
              "(median rnd)");
  for (const auto& name : order) {
    const double ms = best(ours[name]);
    const auto it = theirs.find(name);
    if (it == theirs.end() || it->second.empty()) {
      std::printf("%-12s %10.3f %10s %13s %13s\n", name.c_str(), ms, "-", "-", "-");
    } else {
      const double t = best(it->second);
      std::printf("%-12s %10.3f %10.3f %12.2fx %12.2fx\n", name.c_str(), ms, t, ms / t,
                  median(ours[name]) / median(it->second));
    }
  }
  return torch && torch_failed ? 1 : 0;
}
