// cohort-checkpoint: sharded checkpoints (train/sharded_checkpoint.hpp) from the command line.
//   cohort-checkpoint describe DIR                 what the index holds, one line per tensor
//   cohort-checkpoint consolidate DIR OUT [--optimizer]
//       the model as one safetensors file OUT (PyTorch's load_state_dict and torchvision take
//       it), streamed one tensor at a time; --optimizer also writes the optimizer's buffers by
//       parameter name, with the training state's metadata, to OUT's ".state" companion
// Every shard file is checked against the index first. Exit status 0, or 1 with the error (naming
// the file and the tensor at fault) on stderr; 2 for bad usage.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <string>

#include "cohort/core/error.hpp"
#include "cohort/train/checkpoint.hpp"
#include "cohort/train/sharded_checkpoint.hpp"

int main(int argc, char** argv) {
  CLI::App app{"cohort-checkpoint: describe or consolidate a sharded checkpoint"};
  app.require_subcommand(1);
  std::string dir, out;
  bool optimizer = false;
  auto* describe = app.add_subcommand("describe", "what DIR/index.json holds");
  describe->add_option("DIR", dir, "the sharded checkpoint's directory")->required();
  auto* consolidate = app.add_subcommand("consolidate", "DIR into one safetensors file OUT");
  consolidate->add_option("DIR", dir, "the sharded checkpoint's directory")->required();
  consolidate->add_option("OUT", out, "the safetensors file to write")->required();
  consolidate->add_flag("--optimizer", optimizer,
                        "also the optimizer's state, by parameter name, to OUT's .state companion");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  try {
    if (*describe) {
      for (const auto& line : cohort::train::describe_sharded_checkpoint(dir))
        std::printf("%s\n", line.c_str());
      return 0;
    }
    const std::size_t n = cohort::train::consolidate_sharded_checkpoint(dir, out, optimizer);
    std::printf("%s: %zu tensors%s\n", out.c_str(), n,
                optimizer ? (" (with " + cohort::train::state_path_for(out) + ")").c_str() : "");
    return 0;
  } catch (const cohort::Error& e) {
    std::fprintf(stderr, "cohort-checkpoint: %s\n", e.why().c_str());
    return 1;
  }
}
