// Chrome-trace spans (--trace): a process-wide recorder that costs one branch when off.
#include "cohort/core/trace.hpp"

#include <atomic>
#include <cstdio>
#include <map>
#include <mutex>
#include <vector>

#include "cohort/core/error.hpp"

namespace cohort::trace {
namespace {
std::atomic<bool> g_on{false};
std::atomic<int> g_rank{-1};
std::mutex g_mu;
std::vector<Event>& events() {
  static auto* e = new std::vector<Event>();  // never destroyed: spans may end during exit
  return *e;
}
const auto g_origin = std::chrono::steady_clock::now();

std::string json_escape(const std::string& s) {
  std::string o;
  for (char c : s) {
    if (c == '"' || c == '\\') o += '\\';
    if (static_cast<unsigned char>(c) < 0x20) continue;
    o += c;
  }
  return o;
}
}  // namespace

void enable(bool on) { g_on.store(on, std::memory_order_relaxed); }
bool enabled() { return g_on.load(std::memory_order_relaxed); }
void set_rank(int rank) { g_rank.store(rank); }

std::int64_t now_us() {
  return std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() -
                                                               g_origin)
      .count();
}

void record(const std::string& name, const std::string& track, std::int64_t start_us,
            std::int64_t duration_us) {
  if (!enabled()) return;
  std::lock_guard<std::mutex> lock(g_mu);
  events().push_back({name, track, start_us, duration_us});
}

Span::Span(const char* name, const char* track) : name_(name), track_(track) {
  if (enabled()) start_ = now_us();
}
Span::~Span() {
  if (start_ >= 0) record(name_, track_, start_, now_us() - start_);
}

void write_chrome_trace(const std::string& path) {
  const std::vector<Event> copy = snapshot();
  const int pid = g_rank.load() < 0 ? 0 : g_rank.load();
  // Tracks become threads of the rank's process, numbered in order of first appearance.
  std::map<std::string, int> tids;
  for (const auto& e : copy) tids.emplace(e.track, static_cast<int>(tids.size()) + 1);
  const std::string tmp = path + ".tmp";
  std::FILE* f = std::fopen(tmp.c_str(), "w");
  COHORT_CHECK(f != nullptr, "cannot write trace file '", tmp, "'");
  std::fprintf(f, "{\"traceEvents\": [\n");
  bool first = true;
  std::fprintf(f, "{\"name\": \"process_name\", \"ph\": \"M\", \"pid\": %d, \"args\": {\"name\": \"rank %d\"}}",
               pid, pid);
  first = false;
  for (const auto& [track, tid] : tids)
    std::fprintf(f, ",\n{\"name\": \"thread_name\", \"ph\": \"M\", \"pid\": %d, \"tid\": %d, \"args\": {\"name\": \"%s\"}}",
                 pid, tid, json_escape(track).c_str());
  for (const auto& e : copy) {
    std::fprintf(f,
                 "%s{\"name\": \"%s\", \"ph\": \"X\", \"pid\": %d, \"tid\": %d, \"ts\": %lld, "
                 "\"dur\": %lld}",
                 first ? "" : ",\n", json_escape(e.name).c_str(), pid, tids[e.track],
                 static_cast<long long>(e.start_us), static_cast<long long>(e.dur_us));
  }
  std::fprintf(f, "\n]}\n");
  const bool ok = std::fflush(f) == 0 && std::ferror(f) == 0;
  std::fclose(f);
  COHORT_CHECK(ok && std::rename(tmp.c_str(), path.c_str()) == 0, "cannot write trace file '",
               path, "'");
}

std::vector<Event> snapshot() {
  std::lock_guard<std::mutex> lock(g_mu);
  return events();
}

std::size_t event_count() {
  std::lock_guard<std::mutex> lock(g_mu);
  return events().size();
}

void clear() {
  std::lock_guard<std::mutex> lock(g_mu);
  events().clear();
}

}  // namespace cohort::trace
