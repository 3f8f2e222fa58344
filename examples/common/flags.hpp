// Command-line checks shared by the examples: CLI11's own range checks print the whole double
// range; these say what is wrong in a few words.
#pragma once

#include <CLI/CLI.hpp>

#include <cstdio>
#include <exception>
#include <string>

namespace examples {

inline const CLI::Validator kPositive(
    [](std::string& s) -> std::string {
      try {
        std::size_t used = 0;
        if (std::stoll(s, &used) >= 1 && used == s.size()) return "";
      } catch (const std::exception&) {
      }
      return "must be a positive integer, got '" + s + "'";
    },
    "N>=1");

inline const CLI::Validator kNonNegative(
    [](std::string& s) -> std::string {
      try {
        std::size_t used = 0;
        if (std::stod(s, &used) >= 0 && used == s.size()) return "";
      } catch (const std::exception&) {
      }
      return "must be a non-negative number, got '" + s + "'";
    },
    "X>=0");

// Parses argv with `app` and runs `run()`: a command-line error ends with one line and exit
// status 2, a failure (an exception) with one line and 1; otherwise run()'s status.
template <class Run>
int parse_and_run(CLI::App& app, int argc, char** argv, const std::string& name, Run&& run) {
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::fprintf(stderr, "%s: %s (see --help)\n", name.c_str(), e.what());
    return 2;
  }
  try {
    return run();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: %s\n", name.c_str(), e.what());
    return 1;
  }
}

}  // namespace examples
