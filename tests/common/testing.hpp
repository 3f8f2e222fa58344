// Helpers shared by the test programs.
#pragma once

#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <functional>
#include <string>

#include "cohort/core/error.hpp"

namespace cohort::testing {

// The message of the cohort::Error that fn throws, or "<no error>".
inline std::string error_of(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const cohort::Error& e) {
    return e.what();
  }
  return "<no error>";
}

// Whether `msg` holds `part`; prints both when not, so that a failed CHECK(mentions(...)) says
// what the message was.
inline bool mentions(const std::string& msg, const std::string& part) {
  if (msg.find(part) != std::string::npos) return true;
  std::fprintf(stderr, "'%s' not in: %s\n", part.c_str(), msg.c_str());
  return false;
}

// A fresh directory under the system temp dir, removed with everything in it at scope exit.
struct TempDir {
  std::filesystem::path path;
  explicit TempDir(const std::string& tag = "cohort_test")
      : path(std::filesystem::temp_directory_path() / (tag + "_" + std::to_string(::getpid()))) {
    std::filesystem::create_directories(path);
  }
  ~TempDir() { std::filesystem::remove_all(path); }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  std::string file(const std::string& name) const { return (path / name).string(); }
};

}  // namespace cohort::testing
