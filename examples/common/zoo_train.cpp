// See zoo_train.hpp. The data sets, their transforms and where their files live are in
// make_data(); the rest is mnist_cnn's flow (Trainer, DDP, checkpoints) with a zoo model.
#include "common/zoo_train.hpp"

#include <CLI/CLI.hpp>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <optional>
#include <filesystem>
#include <memory>

#include "cohort/cohort.hpp"
#include "cohort/core/trace.hpp"
#include "cohort/train/ascii_plot.hpp"
#include "cohort/data/cifar10.hpp"
#include "cohort/data/idx.hpp"
#include "cohort/data/image_folder.hpp"
#include "cohort/data/synthetic.hpp"
#include "cohort/data/tiny_imagenet.hpp"
#include "cohort/models.hpp"
#include "cohort/train/reference_schedule.hpp"
#include "cohort/train/weight_decay.hpp"
#include "common/flags.hpp"
#include "common/job.hpp"
#include "common/torchvision_log.hpp"
#include "common/trainer_flags.hpp"

namespace examples {
namespace {
namespace nn = cohort::nn;
namespace data = cohort::data;
namespace train = cohort::train;
namespace optim = cohort::optim;

using Flags = ZooFlags;

struct DataSets {
  data::DatasetPtr train, test;
  std::vector<data::TransformPtr> train_tf, test_tf;
  std::string what;  // first line of the run
};

bool has_file(const std::string& dir, const char* name) {
  return std::filesystem::exists(std::filesystem::path(dir) / name);
}

// The data set, its normalisation and augmentation (random crop with 4-pixel padding and a
// horizontal flip, as the CIFAR and TinyImageNet recipes use, seeded per sample).
DataSets make_data(const Flags& f, const ZooProgram& p) {
  DataSets d;
  std::vector<float> mean, stddev;
  std::int64_t size = 32;
  bool augment = false;
  if (f.synthetic) {
    const std::int64_t s = f.dataset == "tinyimagenet" ? 64 : 32;
    const std::int64_t classes = f.dataset == "tinyimagenet" ? 200 : 10;
    // One set cut in two: the test images share the training images' class templates.
    const std::int64_t n = f.synthetic_size, m = std::max<std::int64_t>(n / 4, 1);
    auto all =
        std::make_shared<data::SyntheticDataset>(n + m, cohort::Shape{3, s, s}, classes, f.seed);
    d.train = data::subset(all, 0, n);
    d.test = data::subset(all, n, n + m);
    d.what = "SYNTHETIC data (seeded, --synthetic): " + std::to_string(n) + " training and " +
             std::to_string(m) + " test images of " + all->describe();
    return d;
  }
  if (!f.data_path.empty()) {
    // torchvision's reference recipe (presets.py, bilinear, antialias): RandomResizedCrop and a
    // flip for training; Resize of the shorter side and CenterCrop for evaluation; ImageNet's
    // statistics.
    d.train = data::load_image_folder(f.data_path, data::Split::train);
    d.test = data::load_image_folder(f.data_path, data::Split::test);
    const std::vector<float> m = {0.485f, 0.456f, 0.406f}, sd = {0.229f, 0.224f, 0.225f};
    const data::Interpolation mode = data::parse_interpolation(f.interpolation);
    d.train_tf = {data::random_resized_crop(f.train_crop_size, 0.08f, 1.0f, 3.0f / 4.0f,
                                            4.0f / 3.0f, mode),
                  data::random_horizontal_flip(), data::normalize(m, sd)};
    d.test_tf = {data::resize(f.val_resize_size, mode), data::center_crop(f.val_crop_size),
                 data::normalize(m, sd)};
    d.what = d.train->describe() + " | train: RandomResizedCrop(" +
             std::to_string(f.train_crop_size) + ", " + f.interpolation + "), flip | val: Resize(" +
             std::to_string(f.val_resize_size) + "), CenterCrop(" +
             std::to_string(f.val_crop_size) + ") | " + std::to_string(d.test->size()) +
             " val images";
    return d;
  }
  if (f.dataset == "fashion-mnist") {
    const std::string dir = f.data_dir.empty() ? data::kFashionMnistDir : f.data_dir;
    d.train = data::load_mnist_dir(dir, data::Split::train);
    d.test = data::load_mnist_dir(dir, data::Split::test);
    // 28x28 grey -> 32x32 with 2 zero pixels per side, the grey copied to 3 channels.
    for (auto* tf : {&d.train_tf, &d.test_tf}) *tf = {data::pad(2), data::repeat_channels(3)};
    mean = {0.2860f};
    stddev = {0.3530f};
  } else if (f.dataset == "cifar10") {
    const std::string dir = f.data_dir.empty() ? "cifar-10-batches-bin" : f.data_dir;
    COHORT_CHECK(
        has_file(dir, "data_batch_1.bin") && has_file(dir, "test_batch.bin"),
        "no CIFAR-10 data in '", dir,
        "': put the binary version's data_batch_1.bin ... "
        "data_batch_5.bin and test_batch.bin there (or pass --data DIR); "
        "--dataset fashion-mnist trains on the real data set this machine has, --synthetic on "
        "generated images");
    d.train = data::load_cifar10_dir(dir, data::Split::train);
    d.test = data::load_cifar10_dir(dir, data::Split::test);
    mean = {0.4914f, 0.4822f, 0.4465f};
    stddev = {0.2470f, 0.2435f, 0.2616f};
    augment = true;
  } else if (f.dataset == "tinyimagenet") {
    const std::string dir = f.data_dir.empty() ? "tiny-imagenet-200" : f.data_dir;
    COHORT_CHECK(
        has_file(dir, "wnids.txt") && has_file(dir, "train") && has_file(dir, "val"),
        "no TinyImageNet in '", dir,
        "': unpack tiny-imagenet-200.zip there (wnids.txt, "
        "train/<wnid>/images/*.JPEG, val/images + val/val_annotations.txt) or pass --data DIR; "
        "--dataset fashion-mnist trains on the real data set this machine has, --synthetic on "
        "generated 64x64 images of 200 classes");
    d.train = data::load_tiny_imagenet_dir(dir, data::Split::train);
    d.test = data::load_tiny_imagenet_dir(dir, data::Split::test);
    mean = {0.485f, 0.456f, 0.406f};
    stddev = {0.229f, 0.224f, 0.225f};
    augment = true;
  } else {
    COHORT_FAIL("data set '", f.dataset, "' is not built into ", p.name);
  }
  size = d.train->sample_shape()[1] + (f.dataset == "fashion-mnist" ? 4 : 0);
  if (f.augment >= 0) augment = f.augment == 1;
  if (augment) {
    d.train_tf.push_back(data::random_crop(size, 4));
    d.train_tf.push_back(data::random_horizontal_flip());
  }
  d.train_tf.push_back(data::normalize(mean, stddev));
  d.test_tf.push_back(data::normalize(mean, stddev));
  d.what =
      d.train->describe() +
      (f.dataset == "fashion-mnist" ? " | padded by 2 to 32x32, grey copied to 3 channels" : "") +
      (augment ? " | augmented (crop 4, flip)" : "");
  return d;
}

// The optimizer over `model`'s parameters: one group, or with --norm-weight-decay,
// --bias-weight-decay or --transformer-embedding-decay the reference script's weight-decay
// groups (train::set_weight_decay).
std::unique_ptr<optim::Optimizer> make_optimizer_over(
    const Flags& f, const nn::Module& model, cohort::parallel::DistributedDataParallel* ddp) {
  const auto given = [](double v) { return std::isnan(v) ? std::optional<double>() : v; };
  auto groups = train::set_weight_decay(
      model, f.weight_decay, given(f.norm_weight_decay),
      train::reference_custom_keys(given(f.bias_weight_decay),
                                   given(f.transformer_embedding_decay)));
  for (auto& g : groups) g.params = optimizer_parameters(f, g.params, ddp);  // --zero-stage
  if (f.optimizer == "sgd" || f.optimizer == "sgd_nesterov") {  // train.py: "nesterov" in --opt
    optim::SGDOptions o;
    o.lr = f.lr;
    o.momentum = f.momentum;
    o.nesterov = f.optimizer == "sgd_nesterov";
    return train::make_grouped_optimizer<optim::SGD>(groups, o);
  }
  if (f.optimizer == "rmsprop") {  // train.py's: RMSprop(lr, momentum, wd, eps=0.0316, alpha=0.9)
    optim::RMSpropOptions o;
    o.lr = f.lr;
    o.momentum = f.momentum;
    o.eps = 0.0316;
    o.alpha = 0.9;
    return train::make_grouped_optimizer<optim::RMSprop>(groups, o);
  }
  if (f.optimizer == "adamw") {
    optim::AdamWOptions o;
    o.lr = f.lr;
    return train::make_grouped_optimizer<optim::AdamW>(groups, o);
  }
  optim::AdamOptions o;
  o.lr = f.lr;
  return train::make_grouped_optimizer<optim::Adam>(groups, o);
}

// The optimizer, attached to the DDP with --zero-stage (its step ends with the all-gather).
std::unique_ptr<optim::Optimizer> make_optimizer(const Flags& f, const nn::Module& model,
                                                 cohort::parallel::DistributedDataParallel* ddp) {
  auto opt = make_optimizer_over(f, model, ddp);
  zero_attach(f, *opt, ddp);
  return opt;
}

std::string format_double(double v) {
  char b[32];
  std::snprintf(b, sizeof b, "%g", v);
  return b;
}

// "weight decay 0.0001" or, with groups, "weight decay 0.0001 (norm 0, bias 0)".
std::string describe_decay(const Flags& f, const optim::Optimizer& opt) {
  std::string s = "weight decay " + format_double(f.weight_decay);
  if (opt.num_param_groups() > 1) {
    s += " (";
    const char* names[] = {"norm", "bias", "embeddings"};
    const double values[] = {f.norm_weight_decay, f.bias_weight_decay,
                             f.transformer_embedding_decay};
    bool first = true;
    for (int i = 0; i < 3; ++i)
      if (!std::isnan(values[i])) {
        s += std::string(first ? "" : ", ") + names[i] + " " + format_double(values[i]);
        first = false;
      }
    s += ")";
  }
  return s;
}

int run(const Flags& f, const ZooProgram& p) {
  cohort::Device& dev = cohort::device(f.device);  // cuda: the local rank's GPU
  Job job = join_job(f.comm, dev, &f,
                     p.name + " model=" + f.model + " batch=" + std::to_string(f.batch_size));
  const auto& comm = job.comm;
  const int world = job.world;
  bool lead = job.lead;  // an elastic group may change it (job.refresh)
  COHORT_CHECK(f.expected_world <= 0 || f.expected_world == world, "--world-size ",
               f.expected_world, " but the launcher started ", world, " rank", world > 1 ? "s" : "");

  auto& host = cohort::host_device();
  DataSets ds = make_data(f, p);
  // The reference script's presets: the automatic augmentation after the crop and flip, on
  // [0, 1] images, so just before Normalize (every pipeline here ends with it).
  COHORT_CHECK(f.auto_augment.empty() || f.interpolation != "bicubic",
               "--interpolation bicubic with --auto-augment: the augmentations' geometric "
               "operations take nearest or bilinear only (torchvision's tensor path too)");
  if (!f.auto_augment.empty() || f.color_jitter > 0) {
    COHORT_CHECK(!f.synthetic, "--auto-augment and --color-jitter need real images (--data-path, "
                               "--dataset cifar10, tinyimagenet or fashion-mnist), not --synthetic");
    const auto at = ds.train_tf.end() - 1;  // the Normalize
    std::vector<data::TransformPtr> aug;
    if (f.color_jitter > 0) {
      aug.push_back(data::color_jitter(f.color_jitter, f.color_jitter, f.color_jitter));
      ds.what += " | ColorJitter(" + std::to_string(f.color_jitter).substr(0, 4) + ")";
    }
    if (!f.auto_augment.empty()) {
      aug.push_back(data::auto_augment_by_name(
          f.auto_augment, data::parse_interpolation(f.interpolation), f.ra_magnitude));
      ds.what += " | auto-augment " + f.auto_augment +
                 (f.auto_augment == "ra" ? " (magnitude " + std::to_string(f.ra_magnitude) + ")"
                                         : std::string());
    }
    ds.train_tf.insert(at, aug.begin(), aug.end());
  }
  if (f.random_erase > 0) {  // after Normalize, as the reference script's presets
    ds.train_tf.push_back(data::random_erasing(f.random_erase));
    ds.what += " | RandomErasing(p=" + std::to_string(f.random_erase).substr(0, 4) + ")";
  }
  const cohort::Shape sample = data::transformed_sample_shape(*ds.train, ds.train_tf);

  nn::manual_seed(f.seed);
  cohort::models::ModelConfig mc;
  mc.num_classes = ds.train->num_classes();
  mc.in_channels = sample[0];
  mc.image_size = sample[1];
  auto model = cohort::models::make(f.model, dev, mc);
  // The initial weights, for a side-by-side run that starts PyTorch from the same point
  // (bench/zoo_torch.py --init FILE).
  if (!f.save_init.empty() && lead) train::save_model(f.save_init, *model);
  // torchvision's --sync-bn: every BatchNorm2d normalises with the global batch's statistics.
  std::string sync_note;
  if (f.sync_bn) {
    if (comm && world > 1) {
      const int n = cohort::parallel::convert_sync_batchnorm(*model, comm);
      sync_note = n > 0 ? " | SyncBatchNorm: " + std::to_string(n) + " layers over " +
                              std::to_string(world) + " ranks"
                        : " | --sync-bn: the model has no batch norm";
    } else {
      sync_note = " | --sync-bn with one rank: plain batch norm";
    }
  }
  std::shared_ptr<cohort::parallel::DistributedDataParallel> ddp;
  if (comm) {
    ddp = nn::make<cohort::parallel::DistributedDataParallel>(model, comm, ddp_options(f));
  }
  nn::Module& trained = ddp ? static_cast<nn::Module&>(*ddp) : *model;
  if (f.zero_stage > 0)
    sync_note += ddp ? " | " + zero_note(f.zero_stage, world, f.shard_group_size)
                     : " | --zero-stage without a communicator: one process, nothing to shard";

  data::DataLoaderOptions to;
  to.batch_size = f.batch_size;
  to.shuffle = f.shuffle == 1;
  to.seed = f.seed;
  to.num_workers = f.workers;
  to.skip_bad_samples = f.skip_bad_images;
  if (f.mixup_alpha > 0 || f.cutmix_alpha > 0)  // per batch: soft targets for the loss
    to.batch_transform =
        data::mixup_or_cutmix(ds.train->num_classes(), f.mixup_alpha, f.cutmix_alpha);
  data::DataLoader train_loader(ds.train, to, ds.train_tf, host, &dev);
  shard_training_loader(train_loader, job);  // as the Trainer would: steps per epoch
  data::DataLoaderOptions eo;
  eo.batch_size = f.test_batch_size;
  eo.num_workers = f.workers;
  eo.skip_bad_samples = f.skip_bad_images;
  data::DataLoader test_loader(ds.test, eo, ds.test_tf, host, &dev);

  auto optimizer = make_optimizer(f, *model, ddp.get());
  // torchvision's schedule flags, or the zoo's own (--schedule, --gamma, --warmup-steps).
  const bool reference = !f.lr_scheduler.empty() || !f.lr_warmup_method.empty() ||
                         f.lr_step_size >= 0 || f.lr_warmup_epochs >= 0 ||
                         !std::isnan(f.lr_gamma) || !std::isnan(f.lr_min) ||
                         !std::isnan(f.lr_warmup_decay);
  train::ReferenceSchedule rs;
  if (reference) {
    COHORT_CHECK(f.warmup_steps == 0 && f.schedule == "steplr" && f.gamma == 1.0 &&
                     f.scheduler_interval == "epoch",
                 "torchvision's schedule flags (--lr-scheduler, --lr-warmup-epochs, ...) cannot "
                 "be mixed with --schedule, --gamma, --warmup-steps or --scheduler-interval step");
    if (!f.lr_scheduler.empty()) {  // train.py lower-cases it ("StepLR" works there)
      rs.lr_scheduler = f.lr_scheduler;
      std::transform(rs.lr_scheduler.begin(), rs.lr_scheduler.end(), rs.lr_scheduler.begin(),
                     [](unsigned char ch) { return static_cast<char>(std::tolower(ch)); });
    }
    if (!f.lr_warmup_method.empty()) rs.lr_warmup_method = f.lr_warmup_method;
    if (f.lr_step_size >= 0) rs.lr_step_size = f.lr_step_size;
    if (f.lr_warmup_epochs >= 0) rs.lr_warmup_epochs = f.lr_warmup_epochs;
    if (!std::isnan(f.lr_gamma)) rs.lr_gamma = f.lr_gamma;
    if (!std::isnan(f.lr_min)) rs.lr_min = f.lr_min;
    if (!std::isnan(f.lr_warmup_decay)) rs.lr_warmup_decay = f.lr_warmup_decay;
    rs.epochs = f.epochs;
  }
  auto scheduler = reference ? train::reference_lr_scheduler(*optimizer, rs)
                             : make_scheduler(f, *optimizer, f.gamma, train_loader.num_batches());
  nn::CrossEntropyLoss criterion(nn::Reduction::mean, f.label_smoothing);

  if (lead) {
    std::printf("%s: %s%s\n", p.name.c_str(), ds.what.c_str(),
                to.batch_transform ? (" | batches: " + to.batch_transform->describe()).c_str() : "");
    std::printf(
        "model %s (%lld parameters, input %s) | device %s | %d rank%s (%s) x batch %lld"
        " | %s lr %g, %s | %lld epochs%s\n",
        f.model.c_str(), static_cast<long long>(model->num_parameters()), sample.str().c_str(),
        dev.name().c_str(), world, world > 1 ? "s" : "",
        comm ? comm->backend().c_str() : "no communicator", static_cast<long long>(f.batch_size),
        f.optimizer.c_str(), f.lr, describe_decay(f, *optimizer).c_str(),
        static_cast<long long>(f.epochs),
        sync_note.c_str());
    std::printf("schedule: %s\n", reference ? (train::describe(rs) + describe_recipe(f)).c_str()
                                             : describe_schedule(f, f.gamma).c_str());
  }
  start_trace(f.trace, f.profile_dir, job);
  auto scaler = amp_scaler(f);  // --amp f16's GradScaler
  train::TrainerOptions options = trainer_options(f);
  options.grad_scaler = scaler.get();
  options.elastic = job.elastic.get();  // --elastic
  // classify: train.py's lines instead of the Trainer's; --output-dir's checkpoint.
  if (f.torchvision_style) options.show_progress = false;
  if (!f.output_dir.empty()) {
    if (lead) std::filesystem::create_directories(f.output_dir);
    if (ddp && f.zero_stage > 0) {
      // ZeRO: the optimizer state is split over the ranks, so the checkpoint is sharded (one
      // file per rank, DIR/sharded), and a run given the same directory continues from it.
      options.checkpoint_dir = f.output_dir;
      if (lead)
        std::printf(
            "checkpoints: sharded (--zero-stage %d) in %s/sharded, continued from by a "
            "run with the same --output-dir (or --resume %s/sharded)\n",
            f.zero_stage, f.output_dir.c_str(), f.output_dir.c_str());
    } else {
      options.checkpoint_path = f.output_dir + "/checkpoint.safetensors";
    }
  }
  // --model-ema: train.py's decay, adjusted by world size, batch, EMA steps and epochs.
  std::unique_ptr<train::ExponentialMovingAverage> ema;
  if (f.model_ema) {
    COHORT_CHECK(!ddp || f.zero_stage < 3,
                 "--model-ema with --zero-stage 3: the parameters are "
                 "split over the ranks between steps, so there is no whole model to average; use "
                 "--zero-stage 1 or 2");
    const double decay = train::ExponentialMovingAverage::adjusted_decay(
        f.model_ema_decay, world, f.batch_size, f.model_ema_steps, f.epochs);
    ema = std::make_unique<train::ExponentialMovingAverage>(*model, decay);
    options.ema = ema.get();
    options.ema_steps = f.model_ema_steps;
    options.ema_warmup_epochs = reference ? rs.lr_warmup_epochs : 0;  // train.py's reset
    if (lead)
      std::printf("model EMA: decay %.8g (--model-ema-decay %g adjusted for %d rank%s x batch %lld "
                  "x %lld steps / %lld epochs), updated every %lld steps\n",
                  decay, f.model_ema_decay, world, world > 1 ? "s" : "",
                  static_cast<long long>(f.batch_size),
                  static_cast<long long>(f.model_ema_steps), static_cast<long long>(f.epochs),
                  static_cast<long long>(f.model_ema_steps));
  }
  train::Trainer trainer(trained, criterion, *optimizer, scheduler.get(), options);
  std::int64_t steps_per_epoch = train_loader.num_batches();
  if (f.max_steps_per_epoch > 0) steps_per_epoch = std::min(steps_per_epoch, f.max_steps_per_epoch);
  TorchvisionLog tv_log(steps_per_epoch, f.batch_size, f.log_interval);
  if (f.torchvision_style)
    trainer.after_step = [&](std::int64_t step, const std::vector<std::int64_t>&) {
      if (trainer.is_lead()) tv_log.step(step, optimizer->lr(), trainer.loss_history());
    };
  if (!f.resume.empty()) {
    const auto got = trainer.resume(f.resume);
    if (lead)
      std::printf("resumed from %s after epoch %lld\n", got.model_path.c_str(),
                  static_cast<long long>(got.progress.epoch));
  }
  // --test-only: evaluate the weights of --resume (a checkpoint, with its EMA under --model-ema)
  // or --weights (a model file, e.g. from --save-model or --model-folder) and stop.
  if (f.test_only) {
    COHORT_CHECK(!f.resume.empty() || !f.weights.empty(),
                 "--test-only needs weights to evaluate: --resume CHECKPOINT or --weights FILE");
    COHORT_CHECK(!f.no_eval, "--test-only and --no-eval contradict each other");
    if (!f.weights.empty()) train::load_model(f.weights, *model);
    const train::EvalResult r = trainer.evaluate(test_loader);
    if (lead && f.torchvision_style)
      TorchvisionLog::test(r, "");
    else if (lead)
      std::printf("Test: Acc@1 %.3f Acc@5 %.3f (loss %.4f, %lld images)\n", 100.0 * r.accuracy,
                  100.0 * r.accuracy5, r.loss, static_cast<long long>(r.samples));
    if (ema && !f.resume.empty()) {
      ema->swap(*model);
      const train::EvalResult e = trainer.evaluate(test_loader);
      ema->swap(*model);
      if (lead && f.torchvision_style)
        TorchvisionLog::test(e, "EMA");
      else if (lead)
        std::printf("Test: EMA Acc@1 %.3f Acc@5 %.3f (loss %.4f)\n", 100.0 * e.accuracy,
                    100.0 * e.accuracy5, e.loss);
    }
    return 0;
  }
  if (!f.model_folder.empty() && lead) std::filesystem::create_directories(f.model_folder);
  trainer.after_epoch = [&](const train::EpochResult& r) {
    // ZeRO stage 3: the model files need the whole values, gathered on every rank.
    std::optional<cohort::parallel::DistributedDataParallel::FullParams> whole;
    if (ddp && f.zero_stage >= 3 &&
        ((f.torchvision_style && !f.output_dir.empty()) || !f.model_folder.empty()))
      whole.emplace(ddp->summon_full_params(false));
    if (!trainer.is_lead()) return;
    if (f.torchvision_style) {  // train.py: evaluate, evaluate the EMA, save model_<epoch>
      if (!f.no_eval) TorchvisionLog::test(r.eval, "");
      if (!f.no_eval && ema) TorchvisionLog::test(r.eval_ema, "EMA");
      if (!f.output_dir.empty())
        train::save_model(f.output_dir + "/model_" + std::to_string(r.epoch - 1) + ".safetensors",
                          *model);
      tv_log.start_epoch();
      return;
    }
    // Like the PyTorch scripts' --model_folder: one model file per epoch, loadable with
    // safetensors.torch.load_file into the PyTorch definition (models/torch_models.py).
    if (!f.model_folder.empty()) {
      const std::string path =
          f.model_folder + "/" + f.model + "_epoch" + std::to_string(r.epoch) + ".safetensors";
      train::save_model(path, *model);
      std::printf("saved %s\n", path.c_str());
    }
    if (!f.no_eval) print_epoch(r, /*top5=*/true);
    if (!f.no_eval && ema)  // train.py's evaluate(model_ema, ..., log_suffix="EMA")
      std::printf("Test: EMA Acc@1 %.3f Acc@5 %.3f (loss %.4f)\n\n", 100.0 * r.eval_ema.accuracy,
                  100.0 * r.eval_ema.accuracy5, r.eval_ema.loss);
  };
  tv_log.start_run();
  tv_log.start_epoch();
  const auto results = trainer.fit(train_loader, f.no_eval ? nullptr : &test_loader);
  if (f.torchvision_style && lead) tv_log.end_run();
  if (trainer.left_group()) return 0;  // --replay-membership dropped this rank
  job.refresh();
  lead = job.lead;
  finish_trace(f.trace, f.profile_dir, job);
  check_ranks_identical(ddp.get(), job);
  // Every rank: at --zero-stage 3 the digest all-gathers the sharded parameters.
  const std::string digest = ddp ? ddp->weights_digest() : std::string();
  if (!lead) return 0;
  std::printf("time per phase:\n%s\n", trainer.timer().summary().c_str());
  if (ddp) std::printf("ranks hold identical weights: yes (digest %s)\n", digest.c_str());
  if (!results.empty() && f.no_eval)
    std::printf("training throughput: %.1f images/s  final train loss %.4f\n",
                trainer.images_per_s(), results.back().train_loss);
  else if (!results.empty())
    std::printf(
        "final test accuracy: %.2f%%  training throughput: %.1f images/s  final train loss %.4f\n",
        100.0 * results.back().eval.accuracy, trainer.images_per_s(), results.back().train_loss);
  return 0;
}

}  // namespace

int zoo_run(const ZooFlags& f, const ZooProgram& p) { return run(f, p); }

namespace {
std::string joined(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : "|") + x;
  return s;
}
}  // namespace

int zoo_main(int argc, char** argv, const ZooProgram& p) {
  Flags f;
  f.model = p.model;
  f.dataset = p.dataset;
  CLI::App app{p.description, p.name};
  app.add_option("--model", f.model, "model: " + joined(p.models))->check(CLI::IsMember(p.models));
  app.add_option("--dataset", f.dataset, "data set: " + joined(p.datasets))
      ->check(CLI::IsMember(p.datasets));
  app.add_flag("--no-eval", f.no_eval, "skip the test set after each epoch (benchmarks)");
  app.add_flag(
      "--synthetic", f.synthetic,
      "train on seeded synthetic images of the data set's shape (says so in the first line)");
  app.add_option("--synthetic-size", f.synthetic_size,
                 "training images with --synthetic (test: a quarter)")
      ->check(kPositive);
  app.add_option("--data", f.data_dir, "data directory (default: the data set's own)");
  app.add_option("--data-path", f.data_path,
                 "an image folder ROOT with train/<class>/ and val/<class>/ (JPEG, PNG), as "
                 "torchvision's reference script reads it; overrides --dataset");
  app.add_option("--train-crop-size", f.train_crop_size,
                 "with --data-path: RandomResizedCrop's size")
      ->check(kPositive)->capture_default_str();
  app.add_option("--val-resize-size", f.val_resize_size,
                 "with --data-path: evaluation's Resize (shorter side)")
      ->check(kPositive)->capture_default_str();
  app.add_option("--val-crop-size", f.val_crop_size, "with --data-path: evaluation's CenterCrop")
      ->check(kPositive)->capture_default_str();
  app.add_option("--mixup-alpha", f.mixup_alpha,
                 "MixUp of each training batch with Beta(alpha, alpha) (0: off; with "
                 "--cutmix-alpha, one of the two per batch)")
      ->check(CLI::Range(0.0f, 1000.0f));
  app.add_option("--cutmix-alpha", f.cutmix_alpha, "CutMix likewise (0: off)")
      ->check(CLI::Range(0.0f, 1000.0f));
  app.add_option("--random-erase", f.random_erase,
                 "RandomErasing of each training image with this probability, after normalize "
                 "(torchvision's defaults: 2-33% of the area, ratio 0.3-3.3, value 0)")
      ->check(CLI::Range(0.0f, 1.0f));
  app.add_option("--lr-scheduler", f.lr_scheduler,
                 "torchvision's schedule, stepped per epoch (with any --lr-* flag; default "
                 "steplr)")
      ->check(CLI::IsMember({"steplr", "cosineannealinglr", "exponentiallr"}, CLI::ignore_case));
  app.add_option("--lr-step-size", f.lr_step_size, "steplr: epochs per decay (default 30)")
      ->check(CLI::PositiveNumber);
  app.add_option("--lr-gamma", f.lr_gamma, "steplr, exponentiallr: the decay (default 0.1)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--lr-min", f.lr_min, "cosineannealinglr: eta_min (default 0)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--lr-warmup-epochs", f.lr_warmup_epochs, "warm-up epochs (default 0)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--lr-warmup-method", f.lr_warmup_method, "constant or linear (default constant)")
      ->check(CLI::IsMember({"constant", "linear"}));
  app.add_option("--lr-warmup-decay", f.lr_warmup_decay,
                 "the warm-up's factor of the lr (default 0.01)")
      ->check(CLI::Range(1e-12, 1.0));
  app.add_option("--norm-weight-decay", f.norm_weight_decay,
                 "weight decay of the normalisation layers' parameters (default: --weight-decay)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--bias-weight-decay", f.bias_weight_decay,
                 "weight decay of every bias (default: --weight-decay)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--transformer-embedding-decay", f.transformer_embedding_decay,
                 "weight decay of the ViT's class token (default: --weight-decay)")
      ->check(CLI::NonNegativeNumber);
  app.add_flag("--model-ema", f.model_ema,
               "keep an exponential moving average of the weights and evaluate it beside the "
               "model (torchvision's ExponentialMovingAverage)");
  app.add_option("--model-ema-steps", f.model_ema_steps,
                 "optimizer steps between EMA updates")
      ->check(CLI::PositiveNumber)->capture_default_str();
  app.add_option("--model-ema-decay", f.model_ema_decay,
                 "EMA decay before train.py's adjustment by ranks x batch x steps / epochs")
      ->check(CLI::Range(0.0, 1.0))->capture_default_str();
  app.add_flag("--sync-bn", f.sync_bn,
               "synchronised batch norm: the statistics of the whole global batch over the ranks "
               "(torch.nn.SyncBatchNorm)");
  app.add_flag("--skip-bad-images", f.skip_bad_images,
               "replace an image that fails to decode by the next one that reads, reporting "
               "each at the end of the epoch (default: the error stops the run)");
  app.add_option("--interpolation", f.interpolation,
                 "with --data-path: the resampling of the crops and resizes, and of "
                 "--auto-augment's geometric operations")
      ->check(CLI::IsMember({"nearest", "bilinear", "bicubic"}))->capture_default_str();
  app.add_option("--auto-augment", f.auto_augment,
                 "automatic augmentation of each training image before normalize: ta_wide "
                 "(TrivialAugmentWide), ra (RandAugment), imagenet, cifar10 or svhn (AutoAugment "
                 "policies)")
      ->check(CLI::IsMember({"ta_wide", "ra", "imagenet", "cifar10", "svhn"}));
  app.add_option("--ra-magnitude", f.ra_magnitude, "RandAugment's magnitude bin (of 31)")
      ->check(CLI::Range(0, 30))->capture_default_str();
  app.add_option("--color-jitter", f.color_jitter,
                 "ColorJitter of each training image with brightness = contrast = saturation = "
                 "this (0: off)")
      ->check(CLI::Range(0.0f, 1.0f));
  app.add_option("--workers", f.workers,
                 "threads decoding and transforming each batch (0: the loader's one thread)")
      ->check(CLI::Range(0, 256));
  app.add_option("--augment", f.augment,
                 "1: random crop (padding 4) + horizontal flip, 0: none (default: on for cifar10 "
                 "and tinyimagenet)")
      ->check(CLI::Range(0, 1));
  app.add_option("--optimizer", f.optimizer,
                 "sgd|sgd_nesterov|adam|adamw|rmsprop (rmsprop with train.py's eps 0.0316 and "
                 "alpha 0.9)")
      ->check(CLI::IsMember({"sgd", "sgd_nesterov", "adam", "adamw", "rmsprop"}));
  app.add_option("--lr", f.lr, "learning rate")->check(kNonNegative);
  app.add_option("--weight-decay", f.weight_decay,
                 "weight decay (L2 for sgd and adam, decoupled for adamw)")
      ->check(kNonNegative);
  app.add_option("--momentum", f.momentum, "SGD momentum")->check(kNonNegative);
  app.add_option("--gamma", f.gamma, "learning rate step gamma per epoch")->check(kNonNegative);
  app.add_option("--batch-size", f.batch_size, "input batch size for training (per rank)")
      ->check(kPositive);
  app.add_option("--test-batch-size", f.test_batch_size, "input batch size for testing")
      ->check(kPositive);
  add_trainer_flags(app, f, /*schedules=*/true);
  app.add_option("--save-init", f.save_init,
                 "write the initial weights (safetensors) to FILE before training");
  app.add_option("--shuffle", f.shuffle,
                 "1: reshuffle the training set every epoch (default), 0: in order")
      ->check(CLI::Range(0, 1));
  app.add_option("--model-folder", f.model_folder,
                 "write DIR/<model>_epoch<N>.safetensors after every epoch");
  app.add_option("--resume", f.resume, "resume from a model saved with --save-model");
  app.add_flag("--test-only", f.test_only,
               "only evaluate the weights of --resume or --weights, then stop (torchvision's "
               "--test-only)");
  app.add_option("--weights", f.weights, "with --test-only: a model file (safetensors) to evaluate");
  app.add_option("--seed", f.seed, "random seed");
  app.add_option("--device", f.device,
                 "host, cuda, cuda:N (default: COHORT_DEVICE or the best available)");
  app.add_option("--trace", f.trace, "write a Chrome trace to FILE");
  app.add_option("--comm", f.comm,
                 "communicator backend: shm, ucx, hier, nccl, self, auto (default: COHORT_COMM, then "
                 "auto: nccl for GPU training with a GPU per rank, else shm on one host, hier "
                 "for several hosts with several ranks each, ucx, self)");
  return examples::parse_and_run(app, argc, argv, p.name, [&] { return run(f, p); });
}

}  // namespace examples
