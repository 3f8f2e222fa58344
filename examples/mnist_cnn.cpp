// PyTorch's MNIST example (examples/mnist/main.py) in cohort: the same network, optimizer
// (Adadelta), schedule (StepLR) and flags, trained on Fashion-MNIST from Debian's
// dataset-fashion-mnist package (or any MNIST-layout directory via --data).
//
//   build/bin/mnist_cnn --epochs 1
//   build/bin/cohortrun --nproc-per-node 2 build/bin/mnist_cnn --comm shm --epochs 1
//   build/bin/mnist_cnn --batch-size 64 --test-batch-size 1000 --epochs 14 --lr 1.0 --gamma 0.7
//       --log-interval 10 --save-model mnist_cnn.safetensors --metrics run.jsonl --trace run.json
//   build/bin/mnist_cnn --epochs 2 --warmup-steps 100 --clip-grad-norm 1 --label-smoothing 0.1
//   build/bin/cohortrun --nproc-per-node 2 --max-restarts 2 build/bin/mnist_cnn --comm shm
//       --checkpoint-dir ckpt --checkpoint-every 50 --deterministic
//
// Bad input (missing data, corrupt files, unknown flags, batch size 0) ends with one line on
// stderr and exit status 1 (2 for command-line errors).
#include <CLI/CLI.hpp>

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>

#include "cohort/collectives/registry.hpp"
#include "cohort/core/trace.hpp"
#include "cohort/data/dataloader.hpp"
#include "cohort/data/idx.hpp"
#include "cohort/devices.hpp"
#include "cohort/optim.hpp"
#include "cohort/parallel/ddp.hpp"
#include "cohort/parallel/zero.hpp"
#include "cohort/train/ascii_plot.hpp"
#include "cohort/train/checkpoint.hpp"
#include "cohort/train/metrics.hpp"
#include "cohort/train/trainer.hpp"
#include "cohort/layers.hpp"
#include "cohort/models/mnist.hpp"
#include "common/flags.hpp"
#include "common/job.hpp"
#include "common/trainer_flags.hpp"

namespace nn = cohort::nn;
namespace data = cohort::data;
namespace train = cohort::train;

namespace {
// Epochs, steps, checkpoint, metrics and TensorBoard are TrainerFlags (examples/common).
struct Flags : examples::TrainerFlags {
  Flags() { epochs = 14; }  // the PyTorch example's default
  std::int64_t batch_size = 64, test_batch_size = 1000;
  double lr = 1.0, gamma = 0.7;
  std::uint64_t seed = 1;
  std::string data_dir = data::kFashionMnistDir, device, trace, resume, comm;
  std::string grad_compression = "none";  // none | bf16 | f16 (DDP's all-reduce of gradients)
  std::string sample_log;                 // --sample-log: the samples of every step, FILE.rank<R>
  std::int64_t poison_sample = -1;        // --poison-sample: this training sample kills its rank
};

// --poison-sample I (fault injection for the elastic tests): the training set's sample I kills
// the process that decodes it, as a corrupt record that crashes a decoder would.
class PoisonedDataset : public data::Dataset {
 public:
  PoisonedDataset(data::DatasetPtr inner, std::int64_t poison)
      : inner_(std::move(inner)), poison_(poison) {}
  std::int64_t size() const override { return inner_->size(); }
  cohort::Shape sample_shape() const override { return inner_->sample_shape(); }
  std::int64_t num_classes() const override { return inner_->num_classes(); }
  std::int64_t get(std::int64_t index, float* out) const override {
    if (index == poison_) {
      std::fprintf(stderr,
                   "mnist_cnn: training sample %lld is poison (--poison-sample): "
                   "aborting\n",
                   static_cast<long long>(index));
      std::abort();
    }
    return inner_->get(index, out);
  }
  std::string describe() const override { return inner_->describe(); }

 private:
  data::DatasetPtr inner_;
  std::int64_t poison_;
};

int run(const Flags& f) {
  // Data parallel when launched with several ranks or asked for a backend: each rank trains on
  // its shard, DDP averages gradients.
  cohort::Device& dev = cohort::device(f.device);  // cuda: the local rank's GPU
  examples::Job job = examples::join_job(
      f.comm, dev, &f,
      "mnist_cnn batch=" + std::to_string(f.batch_size) + " compression=" + f.grad_compression);
  const auto& comm = job.comm;
  const int world = job.world;
  bool lead = job.lead;  // an elastic group may change it (job.refresh)

  auto& host = cohort::host_device();
  nn::manual_seed(f.seed);
  auto model = cohort::models::mnist_net(dev);
  // With a communicator the DDP module wraps the model and is what the Trainer trains: its
  // forward syncs buffers, its backward averages gradients. Checkpoints save the plain model.
  std::shared_ptr<cohort::parallel::DistributedDataParallel> ddp;
  if (comm) {
    cohort::parallel::DDPOptions o = examples::ddp_options(f);
    o.bf16_compression = f.grad_compression == "bf16";
    o.f16_compression = f.grad_compression == "f16";
    ddp = nn::make<cohort::parallel::DistributedDataParallel>(model, comm, o);
  }
  nn::Module& trained = ddp ? static_cast<nn::Module&>(*ddp) : *model;

  data::DatasetPtr train_set = data::load_mnist_dir(f.data_dir, data::Split::train);
  if (f.poison_sample >= 0)
    train_set = std::make_shared<PoisonedDataset>(train_set, f.poison_sample);
  auto test_set = data::load_mnist_dir(f.data_dir, data::Split::test);
  // The PyTorch example's normalisation (MNIST's mean and standard deviation).
  const std::vector<data::TransformPtr> tf = {data::normalize({0.1307f}, {0.3081f})};
  // Unsharded: given a DDP model, the Trainer shards both loaders itself (the test set without
  // padding, so every rank's evaluation covers it exactly once between them).
  data::DataLoaderOptions to;
  to.batch_size = f.batch_size;
  to.shuffle = true;
  to.seed = f.seed;
  data::DataLoader train_loader(train_set, to, tf, host, &dev);
  examples::shard_training_loader(train_loader, job);  // as the Trainer would: steps per epoch
  data::DataLoaderOptions eo;
  eo.batch_size = f.test_batch_size;
  data::DataLoader test_loader(test_set, eo, tf, host, &dev);

  cohort::optim::AdadeltaOptions ao;
  ao.lr = f.lr;
  cohort::optim::Adadelta optimizer(
      examples::optimizer_parameters(f, cohort::parallel::trainable_parameters(*model), ddp.get()),
      ao);
  examples::zero_attach(f, optimizer, ddp.get());
  auto scheduler = examples::make_scheduler(f, optimizer, f.gamma, train_loader.num_batches());
  // The net ends in log_softmax. Label smoothing needs CrossEntropyLoss, which on those
  // log-probabilities is the same loss (log_softmax of log-probabilities is themselves), and the
  // same gradient after the LogSoftmax layer's backward.
  nn::NLLLoss nll;
  nn::CrossEntropyLoss smoothed(nn::Reduction::mean, f.label_smoothing);
  nn::Loss& criterion = f.label_smoothing > 0 ? static_cast<nn::Loss&>(smoothed) : nll;

  if (lead) {
    std::printf("host threads: %d per rank (%s)\n", cohort::host_threads().threads,
                cohort::host_threads().reason.c_str());
    std::printf(
        "cohort mnist_cnn: %s | device %s | %d rank%s (%s%s) x batch %lld | %lld epochs"
        " | Adadelta lr %g, StepLR gamma %g\n",
        train_set->describe().c_str(), dev.name().c_str(), world, world > 1 ? "s" : "",
        comm ? comm->backend().c_str() : "no communicator",
        ((ddp && f.grad_compression != "none" ? ", " + f.grad_compression + " gradients"
                                              : std::string()) +
         (ddp && f.zero_stage > 0
              ? ", " + examples::zero_note(f.zero_stage, world, f.shard_group_size)
              : std::string()))
            .c_str(),
        static_cast<long long>(f.batch_size), static_cast<long long>(f.epochs), f.lr, f.gamma);
    if (f.warmup_steps > 0 || f.clip_grad_norm > 0 || f.label_smoothing > 0 ||
        f.scheduler_interval != "epoch" || f.amp != "off")
      std::printf("recipe: %s\n", examples::describe_schedule(f, f.gamma).c_str());
  }
  examples::start_trace(f.trace, f.profile_dir, job);

  // Given the DDP module, the Trainer does the distributed rest (see trainer_options).
  auto scaler = examples::amp_scaler(f);  // --amp f16's GradScaler
  cohort::train::TrainerOptions options = examples::trainer_options(f);
  options.grad_scaler = scaler.get();
  options.elastic = job.elastic.get();  // --elastic
  train::Trainer trainer(trained, criterion, optimizer, scheduler.get(), options);

  if (!f.resume.empty()) {
    const auto got = trainer.resume(f.resume);
    if (lead)
      std::printf("resumed from %s after epoch %lld (step %lld)\n", got.model_path.c_str(),
                  static_cast<long long>(got.progress.epoch),
                  static_cast<long long>(got.progress.global_step));
  }
  // One line per optimizer step: "STEP INDEX INDEX ...", in this rank's own file (its launch rank,
  // which an elastic group keeps for life).
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> sample_log(nullptr, &std::fclose);
  if (!f.sample_log.empty()) {
    const std::string path = f.sample_log + ".rank" +
                             std::to_string(job.elastic ? job.elastic->launch_rank() : job.rank);
    // A rank that joined a running group (elastic) appends to what its predecessor wrote.
    sample_log.reset(std::fopen(path.c_str(), job.elastic && job.elastic->joined() ? "a" : "w"));
    COHORT_CHECK(sample_log != nullptr, "--sample-log: cannot write ", path);
    trainer.after_step = [&](std::int64_t step, const std::vector<std::int64_t>& samples) {
      std::fprintf(sample_log.get(), "%lld", static_cast<long long>(step));
      for (const auto s : samples)
        std::fprintf(sample_log.get(), " %lld", static_cast<long long>(s));
      std::fputc('\n', sample_log.get());
      std::fflush(sample_log.get());
    };
  }
  trainer.after_epoch = [&](const train::EpochResult& r) {
    if (trainer.is_lead()) examples::print_epoch(r);
  };
  const auto results = trainer.fit(train_loader, &test_loader);
  if (trainer.left_group()) return 0;  // --replay-membership dropped this rank
  job.refresh();
  lead = job.lead;
  examples::finish_trace(f.trace, f.profile_dir, job);
  examples::check_ranks_identical(ddp.get(), job);
  // Every rank: at --zero-stage 3 the digest all-gathers the sharded parameters.
  const std::string digest = ddp ? ddp->weights_digest() : std::string();
  if (!lead) return 0;

  std::printf(
      "%s\n",
      train::ascii_plot(trainer.loss_history(), "training loss per step (cost history)").c_str());
  std::printf("time per phase:\n%s\n", trainer.timer().summary().c_str());
  if (!f.trace.empty())
    std::printf("trace: %s (%d rank%s)\n", f.trace.c_str(), world, world > 1 ? "s" : "");
  if (ddp) std::printf("ranks hold identical weights: yes (digest %s)\n", digest.c_str());
  if (!f.save_model.empty())
    std::printf("model: %s (+ %s)\n", f.save_model.c_str(),
                train::state_path_for(f.save_model).c_str());
  if (!results.empty())
    std::printf("final test accuracy: %.2f%%  training throughput: %.1f images/s\n",
                100.0 * results.back().eval.accuracy, trainer.images_per_s());
  return 0;
}
}  // namespace

using examples::kNonNegative;
using examples::kPositive;

int main(int argc, char** argv) {
  Flags f;
  CLI::App app{"cohort's port of PyTorch's MNIST example (Fashion-MNIST by default)", "mnist_cnn"};
  app.add_option("--batch-size", f.batch_size, "input batch size for training")->check(kPositive);
  app.add_option("--test-batch-size", f.test_batch_size, "input batch size for testing")
      ->check(kPositive);
  examples::add_trainer_flags(app, f, /*schedules=*/false);
  app.add_option("--lr", f.lr, "learning rate")->check(kNonNegative);
  app.add_option("--gamma", f.gamma, "learning rate step gamma")->check(kNonNegative);
  app.add_option("--resume", f.resume, "resume from a model saved with --save-model");
  app.add_option("--data", f.data_dir, "MNIST-layout data directory");
  app.add_option("--seed", f.seed, "random seed");
  app.add_option("--device", f.device,
                 "host, cuda, cuda:N (default: COHORT_DEVICE or the best available)");
  app.add_option("--trace", f.trace, "write a Chrome trace to FILE");
  app.add_option("--sample-log", f.sample_log,
                 "write the dataset indices of every optimizer step to FILE.rank<R> (audits: "
                 "which samples the run saw, e.g. across an elastic group's changes)");
  app.add_option("--poison-sample", f.poison_sample,
                 "testing: the training sample with this index aborts the rank that loads it "
                 "(a poison batch, for elastic training's --elastic-step-failures)");
  app.add_option("--grad-compression", f.grad_compression,
                 "data parallel: all-reduce gradients as bf16 or f16 "
                 "(half the bytes; default none)")
      ->check(CLI::IsMember({"none", "bf16", "f16"}));
  app.add_option("--comm", f.comm,
                 "communicator backend: shm, ucx, hier, nccl, self, auto (default: COHORT_COMM, then "
                 "auto: nccl for GPU training with a GPU per rank, else shm on one host, hier "
                 "for several hosts with several ranks each, ucx, self)");
  return examples::parse_and_run(app, argc, argv, "mnist_cnn", [&] { return run(f); });
}
