// PhaseTimer (see phase_timer.hpp): seconds per phase in first-seen order, "of which" rows kept
// under their parent, and the summary table; a Scope adds its time and, when tracing, a span.
#include "cohort/train/phase_timer.hpp"

#include <algorithm>
#include <cstdio>

#include "cohort/core/trace.hpp"

namespace cohort::train {

PhaseTimer::Scope::Scope(PhaseTimer& t, std::string name, const char* track)
    : timer_(t), name_(std::move(name)), track_(track), start_(std::chrono::steady_clock::now()),
      trace_start_(trace::enabled() ? trace::now_us() : -1) {}

PhaseTimer::Scope::~Scope() {
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  timer_.add(name_, s);
  if (trace_start_ >= 0) trace::record(name_, track_, trace_start_, trace::now_us() - trace_start_);
}

void PhaseTimer::add(const std::string& name, double seconds) {
  if (seconds_.find(name) == seconds_.end()) order_.push_back(name);
  seconds_[name] += seconds;
}

void PhaseTimer::add_within(const std::string& name, const std::string& parent, double seconds) {
  parent_[name] = parent;
  add(name, seconds);
}

void PhaseTimer::add_outside(const std::string& name, double seconds) {
  for (auto& [k, v] : outside_)
    if (k == name) {
      v += seconds;
      return;
    }
  outside_.emplace_back(name, seconds);
}

double PhaseTimer::total(const std::string& name) const {
  const auto it = seconds_.find(name);
  if (it != seconds_.end()) return it->second;
  for (const auto& [k, v] : outside_)
    if (k == name) return v;
  return 0.0;
}

std::map<std::string, double> PhaseTimer::mean_ms() const {
  std::map<std::string, double> m;
  for (const auto& [k, v] : seconds_) m[k] = steps_ ? 1e3 * v / static_cast<double>(steps_) : 0.0;
  return m;
}

bool PhaseTimer::nested(const std::string& name) const {
  // A part whose parent never ran is shown, and counted, as a phase of its own.
  const auto p = parent_.find(name);
  return p != parent_.end() && seconds_.count(p->second) != 0;
}

double PhaseTimer::step_seconds_total() const {
  double all = 0;
  for (const auto& [k, v] : seconds_)
    if (!nested(k)) all += v;
  return all;
}

double PhaseTimer::step_ms() const {
  return steps_ ? 1e3 * step_seconds_total() / static_cast<double>(steps_) : 0.0;
}

std::string PhaseTimer::summary() const {
  const double all = step_seconds_total();
  std::string out;
  char line[192];
  const double per_step = steps_ ? 1e3 / static_cast<double>(steps_) : 0.0;
  std::snprintf(line, sizeof line, "%-20s %10s %10s %7s\n", "phase", "total s", "ms/step", "share");
  out += line;
  const auto row = [&](const std::string& label, double v) {
    std::snprintf(line, sizeof line, "%-20s %10.3f %10.3f %6.1f%%\n", label.c_str(), v,
                  per_step * v, all > 0 ? 100.0 * v / all : 0.0);
    out += line;
  };
  for (const auto& name : order_) {
    if (nested(name)) continue;  // printed under its parent
    row(name, seconds_.at(name));
    for (const auto& child : order_)
      if (nested(child) && parent_.at(child) == name)
        row("  of which " + child, seconds_.at(child));
  }
  std::snprintf(line, sizeof line, "%-20s %10.3f %10.3f %6.1f%%  (%lld steps)\n", "total", all,
                per_step * all, 100.0, static_cast<long long>(steps_));
  out += line;
  for (const auto& [name, v] : outside_) {
    std::snprintf(line, sizeof line, "%-20s %10.3f %10s %7s  (outside the steps)\n", name.c_str(),
                  v, "-", "-");
    out += line;
  }
  return out;
}

void PhaseTimer::reset() {
  order_.clear();
  parent_.clear();
  seconds_.clear();
  outside_.clear();
  steps_ = 0;
}

}  // namespace cohort::train
