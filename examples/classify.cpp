// torchvision's references/classification/train.py, as a cohort program: the same flags by the
// same names and defaults, so that
//
//   torchrun --nproc_per_node 2 train.py --data-path my_images --model resnet18 -b 32 ...
//
// becomes
//
//   cohortrun --nproc-per-node 2 classify --data-path my_images --model resnet18 -b 32 ...
//
// and prints train.py's lines (examples/common/torchvision_log.hpp). It is a naming front end:
// the flags fill the zoo program's ZooFlags (examples/common/zoo_train.hpp), which trains. A
// train.py flag that cohort does not implement is refused by name with the reason, never
// ignored; the few that differ by necessity (--backend, --weights, --device) say how.
// docs/TRAINING.md ("classify: train.py's command line") has the table and a real run.
#include <CLI/CLI.hpp>

#include <cctype>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <string>

#include "cohort/core/error.hpp"
#include "common/flags.hpp"
#include "common/zoo_train.hpp"

namespace {

// What train.py's own argparse holds; classify's defaults are its defaults.
struct Args {
  std::string data_path = "/datasets01/imagenet_full_size/061417/", model = "resnet18";
  std::string device = "";  // train.py: "cuda"; here the best available (COHORT_DEVICE)
  std::int64_t batch_size = 32, epochs = 90;
  int workers = 16;
  std::string opt = "sgd";
  double lr = 0.1, momentum = 0.9, weight_decay = 1e-4;
  double norm_weight_decay = std::nan(""), bias_weight_decay = std::nan(""),
         transformer_embedding_decay = std::nan("");
  double label_smoothing = 0, mixup_alpha = 0, cutmix_alpha = 0;
  std::string lr_scheduler = "steplr";
  std::int64_t lr_warmup_epochs = 0;
  std::string lr_warmup_method = "constant";
  double lr_warmup_decay = 0.01;
  std::int64_t lr_step_size = 30;
  double lr_gamma = 0.1, lr_min = 0;
  std::int64_t print_freq = 10;
  std::string output_dir = ".", resume;
  std::int64_t start_epoch = 0;
  bool cache_dataset = false, sync_bn = false, test_only = false;
  std::string auto_augment;
  int ra_magnitude = 9, augmix_severity = 3;
  double random_erase = 0;
  bool amp = false;
  std::int64_t world_size = 1;
  std::string dist_url = "env://";
  bool model_ema = false;
  std::int64_t model_ema_steps = 32;
  double model_ema_decay = 0.99998;
  bool use_deterministic_algorithms = false;
  std::string interpolation = "bilinear";
  std::int64_t val_resize_size = 256, val_crop_size = 224, train_crop_size = 224;
  double clip_grad_norm = 0;
  bool ra_sampler = false;
  int ra_reps = 3;
  std::string weights;
  std::string backend = "tensor";  // train.py: "PIL"; cohort has torchvision's tensor path only
  bool use_v2 = false;
  // cohort's own, not train.py's.
  std::uint64_t seed = 1;
  std::string comm;
  bool skip_bad_images = false;
  int zero_stage = 0;
  int shard_group_size = 0;
};

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// The flags train.py has and cohort does not implement: refused by name, with why.
void refuse_missing(const CLI::App& app, const Args& a) {
  const auto given = [&](const char* flag) { return app.count(flag) > 0; };
  COHORT_CHECK(!a.cache_dataset, "--cache-dataset is not implemented: cohort indexes an image "
               "folder when it starts (no cache file to save or load); leave the flag out");
  COHORT_CHECK(!a.ra_sampler && !given("--ra-reps"),
               "--ra-sampler and --ra-reps (repeated-augmentation sampling) are not implemented");
  COHORT_CHECK(lower(a.auto_augment) != "augmix" && !given("--augmix-severity"),
               "--auto-augment augmix and --augmix-severity are not implemented (ta_wide, ra, "
               "imagenet, cifar10 and svhn are)");
  COHORT_CHECK(lower(a.backend) == "tensor",
               "--backend ", a.backend, ": cohort's transforms are torchvision's tensor path "
               "(--backend tensor, classify's default); the PIL path is not implemented");
  COHORT_CHECK(a.dist_url == "env://", "--dist-url ", a.dist_url, ": only env:// (the launcher's "
               "RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT) is implemented");
  COHORT_CHECK(a.weights.empty() || std::filesystem::is_regular_file(a.weights),
               "--weights ", a.weights, ": not a file; train.py's weight names (e.g. "
               "ResNet18_Weights.IMAGENET1K_V1) download from the hub, which cohort does not; give "
               "a safetensors model file");
  COHORT_CHECK(a.start_epoch == 0 || !a.resume.empty(),
               "--start-epoch ", a.start_epoch, " without --resume: train.py would run epochs ",
               a.start_epoch, "..", a.epochs - 1, " from fresh weights and a fresh schedule; "
               "cohort continues a run only from its checkpoint (--resume DIR/checkpoint.safetensors)");
}

examples::ZooFlags to_zoo(const CLI::App& app, const Args& a) {
  refuse_missing(app, a);
  examples::ZooFlags f;
  f.torchvision_style = true;
  f.model = a.model;
  f.data_path = a.data_path;
  f.device = lower(a.device) == "cpu" ? "host" : a.device;
  f.batch_size = a.batch_size;
  f.test_batch_size = a.batch_size;  // train.py's test loader takes -b too
  f.epochs = a.epochs;
  f.workers = a.workers;
  f.optimizer = lower(a.opt);
  f.lr = a.lr;
  f.momentum = a.momentum;
  f.weight_decay = a.weight_decay;
  f.norm_weight_decay = a.norm_weight_decay;
  f.bias_weight_decay = a.bias_weight_decay;
  f.transformer_embedding_decay = a.transformer_embedding_decay;
  f.label_smoothing = a.label_smoothing;
  f.mixup_alpha = static_cast<float>(a.mixup_alpha);
  f.cutmix_alpha = static_cast<float>(a.cutmix_alpha);
  f.lr_scheduler = lower(a.lr_scheduler);
  f.lr_warmup_epochs = a.lr_warmup_epochs;
  f.lr_warmup_method = lower(a.lr_warmup_method);
  f.lr_warmup_decay = a.lr_warmup_decay;
  f.lr_step_size = a.lr_step_size;
  f.lr_gamma = a.lr_gamma;
  f.lr_min = a.lr_min;
  f.log_interval = a.print_freq;
  f.output_dir = a.output_dir;
  f.resume = a.resume;
  f.sync_bn = a.sync_bn;
  f.zero_stage = a.zero_stage;
  f.shard_group_size = a.shard_group_size;
  f.test_only = a.test_only;
  f.auto_augment = lower(a.auto_augment);
  f.ra_magnitude = a.ra_magnitude;
  f.random_erase = static_cast<float>(a.random_erase);
  // train.py's --amp: autocast with a GradScaler; on the host, bf16 (what autocast means there).
  f.amp = a.amp ? (f.device.rfind("cuda", 0) == 0 ? "f16" : "bf16") : "off";
  f.model_ema = a.model_ema;
  f.model_ema_steps = a.model_ema_steps;
  f.model_ema_decay = a.model_ema_decay;
  f.deterministic = a.use_deterministic_algorithms;
  f.interpolation = a.interpolation;
  f.val_resize_size = a.val_resize_size;
  f.val_crop_size = a.val_crop_size;
  f.train_crop_size = a.train_crop_size;
  f.clip_grad_norm = a.clip_grad_norm;
  f.weights = a.weights;
  f.seed = a.seed;
  f.comm = a.comm;
  f.skip_bad_images = a.skip_bad_images;
  return f;
}

}  // namespace

int main(int argc, char** argv) {
  Args a;
  CLI::App app{"torchvision's references/classification/train.py on cohort: its flags, names "
               "and defaults (docs/TRAINING.md)",
               "classify"};
  // argparse's rule: a flag given twice takes its last value (a script that appends to a base
  // command line relies on it).
  app.option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  using examples::kNonNegative;
  using examples::kPositive;
  app.add_option("--data-path", a.data_path, "an image folder ROOT with train/<class>/ and "
                 "val/<class>/")->capture_default_str();
  app.add_option("--model", a.model, "resnet18, resnet34, resnet50, resnet101, resnet152, "
                 "wide_resnet50_2, resnet9, cnn_a, cnn_b, vit")
      ->check(CLI::IsMember({"resnet18", "resnet34", "resnet50", "resnet101", "resnet152",
                             "wide_resnet50_2", "resnet9", "cnn_a", "cnn_b", "vit"}))
      ->capture_default_str();
  app.add_option("--device", a.device, "cpu (= host), host, cuda, cuda:N (default: "
                 "COHORT_DEVICE or the best available; train.py's is cuda)");
  app.add_option("-b,--batch-size", a.batch_size, "images per rank per step (and for the test "
                 "set)")->check(kPositive)->capture_default_str();
  app.add_option("--epochs", a.epochs, "epochs to train")->check(kPositive)->capture_default_str();
  app.add_option("-j,--workers", a.workers, "data loading threads per rank")
      ->check(CLI::Range(0, 256))->capture_default_str();
  app.add_option("--opt", a.opt, "sgd, sgd_nesterov, rmsprop, adamw")
      ->check(CLI::IsMember({"sgd", "sgd_nesterov", "rmsprop", "adamw"}, CLI::ignore_case))
      ->capture_default_str();
  app.add_option("--lr", a.lr, "initial learning rate")->check(kNonNegative)->capture_default_str();
  app.add_option("--momentum", a.momentum, "momentum (sgd, rmsprop)")->check(kNonNegative)
      ->capture_default_str();
  app.add_option("--wd,--weight-decay", a.weight_decay, "weight decay")->check(kNonNegative)
      ->capture_default_str();
  app.add_option("--norm-weight-decay", a.norm_weight_decay,
                 "weight decay of normalisation layers (default: --wd)")->check(kNonNegative);
  app.add_option("--bias-weight-decay", a.bias_weight_decay,
                 "weight decay of biases (default: --wd)")->check(kNonNegative);
  app.add_option("--transformer-embedding-decay", a.transformer_embedding_decay,
                 "weight decay of the ViT's embedding parameters (default: --wd)")
      ->check(kNonNegative);
  app.add_option("--label-smoothing", a.label_smoothing, "label smoothing")
      ->check(CLI::Range(0.0, 1.0))->capture_default_str();
  app.add_option("--mixup-alpha", a.mixup_alpha, "mixup alpha")->check(kNonNegative)
      ->capture_default_str();
  app.add_option("--cutmix-alpha", a.cutmix_alpha, "cutmix alpha")->check(kNonNegative)
      ->capture_default_str();
  app.add_option("--lr-scheduler", a.lr_scheduler, "steplr, cosineannealinglr, exponentiallr")
      ->check(CLI::IsMember({"steplr", "cosineannealinglr", "exponentiallr"}, CLI::ignore_case))
      ->capture_default_str();
  app.add_option("--lr-warmup-epochs", a.lr_warmup_epochs, "warm-up epochs")
      ->check(kNonNegative)->capture_default_str();
  app.add_option("--lr-warmup-method", a.lr_warmup_method, "constant or linear")
      ->check(CLI::IsMember({"constant", "linear"}, CLI::ignore_case))->capture_default_str();
  app.add_option("--lr-warmup-decay", a.lr_warmup_decay, "the warm-up's factor of the lr")
      ->check(CLI::Range(1e-12, 1.0))->capture_default_str();
  app.add_option("--lr-step-size", a.lr_step_size, "steplr: epochs per decay")->check(kPositive)
      ->capture_default_str();
  app.add_option("--lr-gamma", a.lr_gamma, "steplr, exponentiallr: the decay")
      ->check(kNonNegative)->capture_default_str();
  app.add_option("--lr-min", a.lr_min, "cosineannealinglr: the lowest lr")->check(kNonNegative)
      ->capture_default_str();
  app.add_option("--print-freq", a.print_freq, "steps between progress lines")->check(kPositive)
      ->capture_default_str();
  app.add_option("--output-dir", a.output_dir, "DIR/model_<epoch>.safetensors and "
                 "DIR/checkpoint.safetensors after every epoch (empty: none)")
      ->capture_default_str();
  app.add_option("--resume", a.resume, "a checkpoint to continue from (DIR/checkpoint.safetensors)");
  app.add_option("--start-epoch", a.start_epoch, "with --resume the checkpoint's epoch decides, "
                 "as in train.py; without it only 0")->check(kNonNegative)->capture_default_str();
  app.add_flag("--cache-dataset", a.cache_dataset, "not implemented (refused)");
  app.add_flag("--sync-bn", a.sync_bn, "synchronised batch norm over the ranks");
  app.add_flag("--test-only", a.test_only, "only evaluate --resume's or --weights' weights");
  app.add_option("--auto-augment", a.auto_augment, "ta_wide, ra, imagenet, cifar10, svhn");
  app.add_option("--ra-magnitude", a.ra_magnitude, "RandAugment's magnitude")
      ->check(CLI::Range(0, 30))->capture_default_str();
  app.add_option("--augmix-severity", a.augmix_severity, "not implemented (refused)")
      ->capture_default_str();
  app.add_option("--random-erase", a.random_erase, "RandomErasing's probability")
      ->check(CLI::Range(0.0, 1.0))->capture_default_str();
  app.add_flag("--amp", a.amp, "mixed precision: f16 with a GradScaler on a GPU, bf16 on the host");
  app.add_option("--world-size", a.world_size, "the launcher's WORLD_SIZE decides (as train.py "
                 "under torchrun); a different value is an error")->check(kPositive)->default_str("1");
  app.add_option("--dist-url", a.dist_url, "env:// only")->capture_default_str();
  app.add_flag("--model-ema", a.model_ema, "keep an EMA of the weights and evaluate it");
  app.add_option("--model-ema-steps", a.model_ema_steps, "steps between EMA updates")
      ->check(kPositive)->capture_default_str();
  app.add_option("--model-ema-decay", a.model_ema_decay, "the EMA's decay before train.py's "
                 "adjustment")->check(CLI::Range(0.0, 1.0))->capture_default_str();
  app.add_flag("--use-deterministic-algorithms", a.use_deterministic_algorithms,
               "deterministic gradient reduction (bit-identical reruns)");
  app.add_option("--interpolation", a.interpolation, "nearest, bilinear, bicubic")
      ->check(CLI::IsMember({"nearest", "bilinear", "bicubic"}))->capture_default_str();
  app.add_option("--val-resize-size", a.val_resize_size, "evaluation's Resize")->check(kPositive)
      ->capture_default_str();
  app.add_option("--val-crop-size", a.val_crop_size, "evaluation's CenterCrop")->check(kPositive)
      ->capture_default_str();
  app.add_option("--train-crop-size", a.train_crop_size, "RandomResizedCrop's size")
      ->check(kPositive)->capture_default_str();
  app.add_option("--clip-grad-norm", a.clip_grad_norm, "the gradients' largest total 2-norm")
      ->check(kNonNegative);
  app.add_flag("--ra-sampler", a.ra_sampler, "not implemented (refused)");
  app.add_option("--ra-reps", a.ra_reps, "not implemented (refused)")->capture_default_str();
  app.add_option("--weights", a.weights, "a safetensors model file (train.py's weight names are "
                 "refused: they download)");
  app.add_option("--backend", a.backend, "tensor (cohort's only: torchvision's tensor path; PIL "
                 "refused)")->capture_default_str();
  app.add_flag("--use-v2", a.use_v2, "accepted: cohort's transforms follow transforms.v2");
  // cohort's own.
  app.add_option("--seed", a.seed, "cohort: the random seed (train.py seeds nothing)")
      ->capture_default_str();
  app.add_option("--comm", a.comm, "cohort: the communicator (default: COHORT_COMM, then auto)");
  app.add_flag("--skip-bad-images", a.skip_bad_images,
               "cohort: replace an image that fails to decode by the next one, reporting it");
  app.add_option("--zero-stage", a.zero_stage,
                 "cohort: ZeRO sharding over the ranks: 1 the optimizer state, 2 the gradients "
                 "too, 3 the parameters too (FSDP's FULL_SHARD); 0: DDP (default)")
      ->check(CLI::Range(0, 3));
  app.add_option("--shard-group-size", a.shard_group_size,
                 "cohort: with --zero-stage, hybrid sharding (FSDP's HYBRID_SHARD): shard inside "
                 "groups of N consecutive ranks, replicated across them (0: all ranks, default)")
      ->check(CLI::NonNegativeNumber);
  return examples::parse_and_run(app, argc, argv, "classify", [&] {
    examples::ZooFlags f = to_zoo(app, a);
    if (app.count("--world-size") > 0) f.expected_world = a.world_size;
    return examples::zoo_run(
        f, {"classify", "", a.model,
            {"resnet18", "resnet34", "resnet50", "resnet101", "resnet152", "wide_resnet50_2",
             "resnet9", "cnn_a", "cnn_b", "vit"},
            "", {}});
  });
}
