// A process-wide timeline of named spans, written as Chrome trace JSON (open in Perfetto or
// chrome://tracing). Off by default; when off a Span costs one relaxed atomic load.
//
// Each span belongs to a track ("compute", "comm", "data"); one process is one rank, so a trace
// of a data-parallel job shows every rank's compute and communication as separate tracks. Ranks
// write their own files; the Trainer on rank 0 joins them (--trace FILE, docs/TRAINING.md).
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

namespace cohort::trace {

void enable(bool on);
bool enabled();
// The rank shown as the trace's process id; -1 (default) shows 0.
void set_rank(int rank);

// Microseconds since the trace clock's origin (first use in this process).
std::int64_t now_us();

// Records a finished span [start_us, start_us + duration_us) on `track`.
void record(const std::string& name, const std::string& track, std::int64_t start_us,
            std::int64_t duration_us);

// Records from construction to destruction when tracing is enabled.
class Span {
 public:
  Span(const char* name, const char* track = "compute");
  ~Span();
  Span(const Span&) = delete;
  Span& operator=(const Span&) = delete;

 private:
  const char* name_;
  const char* track_;
  std::int64_t start_ = -1;
};

// One recorded span.
struct Event {
  std::string name, track;
  std::int64_t start_us = 0, dur_us = 0;
};
// A copy of every span recorded so far, in recording order (for other file layouts:
// cohort/train/profile_trace.hpp).
std::vector<Event> snapshot();

// Writes every recorded span as Chrome trace JSON ({"traceEvents": [...]}) to `path`,
// atomically (temporary file + rename). Throws cohort::Error naming the path on failure.
void write_chrome_trace(const std::string& path);
std::size_t event_count();
void clear();

}  // namespace cohort::trace
