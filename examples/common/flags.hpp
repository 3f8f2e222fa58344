// Command-line checks shared by the examples: CLI11's own range checks print the whole double
// range; these say what is wrong in a few words.
#pragma once

#include <CLI/CLI.hpp>

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

}  // namespace examples
