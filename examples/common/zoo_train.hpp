// The training program behind cifar_cnn and resnet50_tinyimagenet: a zoo model
// (cohort::models), one of the data sets, mnist_cnn's flags plus --model, --optimizer,
// --weight-decay, --model-folder, --dataset and --synthetic; one process or data-parallel under
// any launcher (cohortrun, mpirun, srun, torchrun's variables). Each program only picks defaults.
#pragma once

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "common/trainer_flags.hpp"

namespace examples {

// What the zoo program runs: its flags as parsed. Epochs, steps, checkpoint, metrics and
// TensorBoard are TrainerFlags (trainer_flags.hpp). classify (classify.cpp) fills the same
// struct from train.py's command line.
struct ZooFlags : TrainerFlags {
  std::string model, dataset, data_dir, data_path, optimizer = "adam", device, comm;
  // torchvision's reference script's defaults (--data-path: an image folder).
  std::int64_t train_crop_size = 224, val_resize_size = 256, val_crop_size = 224;
  float mixup_alpha = 0, cutmix_alpha = 0;  // torchvision's --mixup-alpha, --cutmix-alpha
  float random_erase = 0;                   // torchvision's --random-erase
  std::string interpolation = "bilinear";   // torchvision's --interpolation
  std::string auto_augment;                 // torchvision's --auto-augment (empty: none)
  int ra_magnitude = 9;                     // torchvision's --ra-magnitude
  float color_jitter = 0;                   // timm's --color-jitter (0: none)
  bool skip_bad_images = false;
  bool sync_bn = false;                     // torchvision's --sync-bn
  bool test_only = false;                   // torchvision's --test-only
  std::string weights;                      // a model file to evaluate (--test-only)
  bool model_ema = false;                   // torchvision's --model-ema, -steps, -decay
  std::int64_t model_ema_steps = 32;
  double model_ema_decay = 0.99998;
  // torchvision's --norm-weight-decay, --bias-weight-decay, --transformer-embedding-decay (NaN:
  // not given: those parameters keep --weight-decay).
  // torchvision's schedule flags (--lr-scheduler, --lr-step-size, ...): any of them given, the
  // schedule is train::reference_lr_scheduler's with the reference script's defaults for the rest.
  std::string lr_scheduler, lr_warmup_method;
  std::int64_t lr_step_size = -1, lr_warmup_epochs = -1;
  double lr_gamma = std::nan(""), lr_min = std::nan(""), lr_warmup_decay = std::nan("");
  double norm_weight_decay = std::nan(""), bias_weight_decay = std::nan(""),
         transformer_embedding_decay = std::nan("");
  std::string resume, trace, model_folder, save_init;
  std::int64_t batch_size = 64, test_batch_size = 1000;
  std::int64_t synthetic_size = 2048;
  int workers = 0, shuffle = 1;
  double lr = 1e-3, gamma = 1.0, weight_decay = 0.0, momentum = 0.9;
  std::uint64_t seed = 1;
  bool synthetic = false, no_eval = false;
  // classify: torchvision's train.py's conventions (its progress and test lines, epochs counted
  // from 0, DIR/model_<epoch>.safetensors and DIR/checkpoint.safetensors under output_dir).
  bool torchvision_style = false;
  std::string output_dir;
  std::int64_t expected_world = 0;  // > 0: the launcher must have started this many ranks
  int augment = -1;  // -1: the data set's default (on for CIFAR-10 and TinyImageNet)
};


struct ZooProgram {
  std::string name;                     // "cifar_cnn"
  std::string description;              // --help's first line
  std::string model;                    // default --model
  std::vector<std::string> models;      // what --model accepts
  std::string dataset;                  // default --dataset
  std::vector<std::string> datasets;    // what --dataset accepts
};

// Parses argv, trains, prints; returns the exit status (1: bad input or a failure, with one line
// on stderr; 2: a command-line error).
int zoo_main(int argc, char** argv, const ZooProgram& program);

// Trains (or with test_only evaluates) as the flags say; returns the exit status. Throws on bad
// input or a failure (zoo_main and classify turn that into one line and status 1).
int zoo_run(const ZooFlags& flags, const ZooProgram& program);

}  // namespace examples
