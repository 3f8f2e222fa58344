// The trace in the PyTorch profiler plugin's layout (see profile_trace.hpp for the mapping).
#include "cohort/train/profile_trace.hpp"

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "cohort/core/error.hpp"
#include "cohort/core/trace.hpp"

namespace cohort::train {
namespace {

constexpr int kMainThread = 1;
constexpr int kCommThread = 2;

// "allreduce bucket" -> "all_reduce" and the other collectives DDP records, in PyTorch's names.
std::string collective_name(const std::string& span, const std::string& backend) {
  const std::string prefix = backend.empty() ? "comm" : backend;
  if (span.rfind("allreduce", 0) == 0) return prefix + ":all_reduce";
  if (span.rfind("allgather", 0) == 0) return prefix + ":all_gather";
  if (span.find("sync_buffers") != std::string::npos) return prefix + ":broadcast";
  return span;  // a wait, or a span the plugin need not classify
}

nlohmann::json event(const trace::Event& e, const ProfileTraceInfo& info) {
  nlohmann::json j = {{"ph", "X"},
                      {"pid", info.rank},
                      {"ts", e.start_us},
                      {"dur", e.dur_us},
                      {"args", {{"cohort track", e.track}, {"cohort name", e.name}}}};
  if (e.track == "steps" && e.name.rfind("step ", 0) == 0) {
    j["cat"] = "user_annotation";
    j["name"] = "ProfilerStep#" + e.name.substr(5);
    j["tid"] = kMainThread;
  } else if (e.track == "data") {
    j["cat"] = "cpu_op";
    j["name"] = "enumerate(DataLoader)#cohort.__next__";
    j["tid"] = kMainThread;
  } else if (e.track == "comm") {
    j["cat"] = "cpu_op";
    j["name"] = collective_name(e.name, info.backend);
    j["tid"] = kCommThread;
  } else {
    j["cat"] = "cpu_op";
    j["name"] = e.name;
    j["tid"] = kMainThread;
  }
  return j;
}

}  // namespace

std::string write_profile_trace(const std::string& dir, const ProfileTraceInfo& info) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::create_directories(dir, ec);
  COHORT_CHECK(!ec && fs::is_directory(dir), "profile directory '", dir,
               "' cannot be created: ", ec ? ec.message() : "not a directory");
  std::string worker = info.worker;
  if (worker.empty()) {
    char host[256] = "localhost";
    ::gethostname(host, sizeof host - 1);
    worker = std::string(host) + "_rank" + std::to_string(info.rank);
  }
  const long long ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                           std::chrono::system_clock::now().time_since_epoch())
                           .count();
  const std::string path =
      (fs::path(dir) / (worker + "." + std::to_string(ms) + ".pt.trace.json")).string();

  nlohmann::json events = nlohmann::json::array();
  events.push_back({{"ph", "M"},
                    {"name", "process_name"},
                    {"pid", info.rank},
                    {"args", {{"name", "rank " + std::to_string(info.rank)}}}});
  events.push_back({{"ph", "M"},
                    {"name", "thread_name"},
                    {"pid", info.rank},
                    {"tid", kMainThread},
                    {"args", {{"name", "main (steps, data, compute)"}}}});
  events.push_back({{"ph", "M"},
                    {"name", "thread_name"},
                    {"pid", info.rank},
                    {"tid", kCommThread},
                    {"args", {{"name", "comm"}}}});
  for (const trace::Event& e : trace::snapshot()) events.push_back(event(e, info));
  nlohmann::json doc = {{"schemaVersion", 1},
                        {"deviceProperties", nlohmann::json::array()},
                        {"traceName", path},
                        {"traceEvents", std::move(events)}};
  if (info.world_size > 1)
    doc["distributedInfo"] = {
        {"backend", info.backend}, {"rank", info.rank}, {"world_size", info.world_size}};

  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp);
    COHORT_CHECK(out.good(), "cannot write profile trace '", tmp, "'");
    out << doc.dump() << "\n";
    COHORT_CHECK(out.good(), "writing profile trace '", tmp, "' failed");
  }
  COHORT_CHECK(std::rename(tmp.c_str(), path.c_str()) == 0, "cannot move '", tmp, "' to '", path,
               "'");
  return path;
}

}  // namespace cohort::train
