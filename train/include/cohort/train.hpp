// Everything of cohort::train: the Trainer, checkpoints (safetensors), metrics (JSON Lines),
// TensorBoard scalars, progress, phase timing and the ASCII loss chart.
#pragma once

#include "cohort/train/ascii_plot.hpp"
#include "cohort/train/checkpoint.hpp"
#include "cohort/train/metrics.hpp"
#include "cohort/train/phase_timer.hpp"
#include "cohort/train/profile_trace.hpp"
#include "cohort/train/progress.hpp"
#include "cohort/train/safetensors.hpp"
#include "cohort/train/sharded_checkpoint.hpp"
#include "cohort/train/tensorboard.hpp"
#include "cohort/train/trainer.hpp"
