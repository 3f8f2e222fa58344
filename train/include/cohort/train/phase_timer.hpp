// Per-phase wall time of training steps (data wait, forward, backward, optimizer, comm, ...),
// accumulated always (two clock reads per phase) and printed as a summary table at the end. Each
// phase also becomes a trace span when tracing is on.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace cohort::train {

class PhaseTimer {
 public:
  // Times `fn()` as phase `name` (on trace track `track`).
  template <class Fn>
  auto time(const std::string& name, Fn&& fn, const char* track = "compute") {
    Scope s(*this, name, track);
    return fn();
  }

  // Manual form for phases measured elsewhere.
  void add(const std::string& name, double seconds);
  // A phase that is part of another's wall time (DDP's comm and overlap happen inside backward):
  // printed under `parent` as "of which <name>", its share of the step shown, but not added to
  // the total again.
  void add_within(const std::string& name, const std::string& parent, double seconds);
  // Time spent outside the training steps (evaluation): a row of its own below the total, not part
  // of the steps' total, shares or mean_ms.
  void add_outside(const std::string& name, double seconds);
  void end_step() { ++steps_; }

  double total(const std::string& name) const;
  std::int64_t steps() const { return steps_; }
  // Per-step mean of each phase in ms, for metrics.
  std::map<std::string, double> mean_ms() const;
  // Mean ms per step of the top-level phases (the summary's total row per step; 0 before a step).
  double step_ms() const;
  // Phase | total s | ms/step | share, in order of first use, each add_within phase right after
  // its parent; the total is the sum of the top-level phases (the step), and every share is of it.
  std::string summary() const;
  void reset();

  class Scope {
   public:
    Scope(PhaseTimer& t, std::string name, const char* track);
    ~Scope();

   private:
    PhaseTimer& timer_;
    std::string name_;
    const char* track_;
    std::chrono::steady_clock::time_point start_;
    std::int64_t trace_start_;
  };

 private:
  bool nested(const std::string& name) const;  // an add_within phase whose parent ran
  double step_seconds_total() const;            // the top-level phases' seconds
  std::vector<std::string> order_;
  std::map<std::string, double> seconds_;
  std::map<std::string, std::string> parent_;
  std::vector<std::pair<std::string, double>> outside_;  // add_within phases -> the phase they are part of
  std::int64_t steps_ = 0;
};

}  // namespace cohort::train
