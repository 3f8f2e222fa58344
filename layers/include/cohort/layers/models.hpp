// Forwarding header: nn::mnist_net moved to the model zoo as models::mnist_net
// (cohort/models/mnist.hpp, models/mnist.cpp). Kept, with the nn:: name, for code outside
// layers/ that still includes this path or reaches mnist_net through cohort/layers.hpp
// (tests/memory/test_memory_cuda.cpp, tests/parity/test_fallback.cpp). It reaches up into
// models/, so only targets that link cohort::models (cohort::cohort does) may include it; delete
// it, and its line in cohort/layers.hpp, once those two include cohort/models/mnist.hpp.
#pragma once

#include "cohort/models/mnist.hpp"

namespace cohort::nn {

using models::mnist_net;

}  // namespace cohort::nn
