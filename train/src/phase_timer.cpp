#include "cohort/train/phase_timer.hpp"

#include <algorithm>
#include <cstdio>

#include "cohort/core/trace.hpp"

namespace cohort::train {

PhaseTimer::Scope::Scope(PhaseTimer& t, std::string name, const char* track)
    : t_(t), name_(std::move(name)), track_(track), start_(std::chrono::steady_clock::now()),
      trace_start_(trace::enabled() ? trace::now_us() : -1) {}

PhaseTimer::Scope::~Scope() {
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  t_.add(name_, s);
  if (trace_start_ >= 0) trace::record(name_, track_, trace_start_, trace::now_us() - trace_start_);
}

void PhaseTimer::add(const std::string& name, double seconds) {
  if (seconds_.find(name) == seconds_.end()) order_.push_back(name);
  seconds_[name] += seconds;
}

double PhaseTimer::total(const std::string& name) const {
  const auto it = seconds_.find(name);
  return it == seconds_.end() ? 0.0 : it->second;
}

std::map<std::string, double> PhaseTimer::mean_ms() const {
  std::map<std::string, double> m;
  for (const auto& [k, v] : seconds_) m[k] = steps_ ? 1e3 * v / static_cast<double>(steps_) : 0.0;
  return m;
}

std::string PhaseTimer::summary() const {
  double all = 0;
  for (const auto& [k, v] : seconds_) all += v;
  std::string out;
  char line[160];
  std::snprintf(line, sizeof line, "%-14s %10s %10s %7s\n", "phase", "total s", "ms/step", "share");
  out += line;
  for (const auto& name : order_) {
    const double v = seconds_.at(name);
    std::snprintf(line, sizeof line, "%-14s %10.3f %10.3f %6.1f%%\n", name.c_str(), v,
                  steps_ ? 1e3 * v / static_cast<double>(steps_) : 0.0, all > 0 ? 100.0 * v / all : 0.0);
    out += line;
  }
  std::snprintf(line, sizeof line, "%-14s %10.3f %10.3f %6.1f%%  (%lld steps)\n", "total", all,
                steps_ ? 1e3 * all / static_cast<double>(steps_) : 0.0, 100.0,
                static_cast<long long>(steps_));
  out += line;
  return out;
}

void PhaseTimer::reset() {
  order_.clear();
  seconds_.clear();
  steps_ = 0;
}

}  // namespace cohort::train
