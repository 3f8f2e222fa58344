#include "cohort/train/metrics.hpp"

#include <cmath>

#include "cohort/core/error.hpp"

namespace cohort::train {
namespace {
void write_number(std::FILE* f, double v) {
  if (std::isfinite(v)) {
    if (v == std::floor(v) && std::fabs(v) < 1e15)
      std::fprintf(f, "%.0f", v);
    else
      std::fprintf(f, "%.9g", v);
  } else {
    std::fprintf(f, "null");  // JSON has no NaN/inf
  }
}
}  // namespace

MetricsWriter::MetricsWriter(const std::string& path) : path_(path) {
  f_ = std::fopen(path.c_str(), "w");
  COHORT_CHECK(f_ != nullptr, "cannot open metrics file '", path, "' for writing");
}

MetricsWriter::~MetricsWriter() {
  if (f_) std::fclose(f_);
}

MetricsWriter::MetricsWriter(MetricsWriter&& o) noexcept : f_(o.f_), path_(std::move(o.path_)) {
  o.f_ = nullptr;
}
MetricsWriter& MetricsWriter::operator=(MetricsWriter&& o) noexcept {
  if (this != &o) {
    if (f_) std::fclose(f_);
    f_ = o.f_;
    path_ = std::move(o.path_);
    o.f_ = nullptr;
  }
  return *this;
}

void MetricsWriter::write(const std::string& kind,
                          const std::vector<std::pair<std::string, double>>& values,
                          const std::map<std::string, std::map<std::string, double>>& groups) {
  if (!f_) return;
  std::fprintf(f_, "{\"kind\": \"%s\"", kind.c_str());
  for (const auto& [k, v] : values) {
    std::fprintf(f_, ", \"%s\": ", k.c_str());
    write_number(f_, v);
  }
  for (const auto& [g, m] : groups) {
    std::fprintf(f_, ", \"%s\": {", g.c_str());
    bool first = true;
    for (const auto& [k, v] : m) {
      std::fprintf(f_, "%s\"%s\": ", first ? "" : ", ", k.c_str());
      write_number(f_, v);
      first = false;
    }
    std::fprintf(f_, "}");
  }
  std::fprintf(f_, "}\n");
  COHORT_CHECK(std::fflush(f_) == 0, "writing metrics file '", path_, "' failed");
}

}  // namespace cohort::train

#include <fstream>
#include <nlohmann/json.hpp>

namespace cohort::train {

void merge_chrome_traces(const std::vector<std::string>& inputs, const std::string& output,
                         bool remove_inputs) {
  nlohmann::json all = nlohmann::json::array();
  for (const auto& in : inputs) {
    std::ifstream f(in);
    COHORT_CHECK(f.good(), "merge_chrome_traces: cannot read '", in, "'");
    nlohmann::json j;
    try {
      f >> j;
    } catch (const std::exception& e) {
      COHORT_FAIL("merge_chrome_traces: '", in, "' is not a trace: ", e.what());
    }
    COHORT_CHECK(j.contains("traceEvents") && j["traceEvents"].is_array(), "merge_chrome_traces: '",
                 in, "' has no traceEvents array");
    for (auto& e : j["traceEvents"]) all.push_back(std::move(e));
  }
  const std::string tmp = output + ".tmp";
  {
    std::ofstream out(tmp);
    COHORT_CHECK(out.good(), "merge_chrome_traces: cannot write '", tmp, "'");
    out << nlohmann::json{{"traceEvents", all}}.dump() << "\n";
    COHORT_CHECK(out.good(), "merge_chrome_traces: writing '", tmp, "' failed");
  }
  COHORT_CHECK(std::rename(tmp.c_str(), output.c_str()) == 0, "merge_chrome_traces: cannot move '",
               tmp, "' to '", output, "'");
  if (remove_inputs)
    for (const auto& in : inputs)
      if (in != output) std::remove(in.c_str());
}

}  // namespace cohort::train
