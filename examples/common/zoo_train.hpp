// The training program behind cifar_cnn and resnet50_tinyimagenet: a zoo model
// (cohort::models), one of the data sets, mnist_cnn's flags plus --model, --optimizer,
// --weight-decay, --model-folder, --dataset and --synthetic; one process or data-parallel under
// any launcher (cohortrun, mpirun, srun, torchrun's variables). Each program only picks defaults.
#pragma once

#include <string>
#include <vector>

namespace examples {

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

}  // namespace examples
