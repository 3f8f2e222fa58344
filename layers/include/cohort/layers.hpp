// Everything of cohort's layer library (cohort::layers): the Module API, every layer, the losses
// and initialisation. See docs/LAYERS.md.
#pragma once

#include "cohort/layers/activation.hpp"
#include "cohort/layers/attention.hpp"
#include "cohort/layers/batchnorm.hpp"
#include "cohort/layers/clip_grad.hpp"
#include "cohort/layers/conv2d.hpp"
#include "cohort/layers/dropout.hpp"
#include "cohort/layers/encoder_block.hpp"
#include "cohort/layers/flatten.hpp"
#include "cohort/layers/init.hpp"
#include "cohort/layers/layernorm.hpp"
#include "cohort/layers/linear.hpp"
#include "cohort/layers/loss.hpp"
#include "cohort/layers/module.hpp"
#include "cohort/layers/pooling.hpp"
#include "cohort/layers/residual.hpp"
#include "cohort/layers/sequential.hpp"
#include "cohort/layers/softmax.hpp"
