// MetricsWriter (see metrics.hpp): one JSON object per line, flushed; whole numbers printed as
// integers, others to 9 significant digits, non-finite ones as null (JSON has no NaN). And
// merge_chrome_traces, which joins the ranks' trace files into one.
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
  file_ = std::fopen(path.c_str(), "w");
  COHORT_CHECK(file_ != nullptr, "cannot open metrics file '", path, "' for writing");
}

MetricsWriter::~MetricsWriter() {
  if (file_) std::fclose(file_);
}

MetricsWriter::MetricsWriter(MetricsWriter&& o) noexcept
    : file_(o.file_), path_(std::move(o.path_)) {
  o.file_ = nullptr;
}
MetricsWriter& MetricsWriter::operator=(MetricsWriter&& o) noexcept {
  if (this != &o) {
    if (file_) std::fclose(file_);
    file_ = o.file_;
    path_ = std::move(o.path_);
    o.file_ = nullptr;
  }
  return *this;
}

void MetricsWriter::write(const std::string& kind,
                          const std::vector<std::pair<std::string, double>>& values,
                          const std::map<std::string, std::map<std::string, double>>& groups) {
  if (!file_) return;
  std::fprintf(file_, "{\"kind\": \"%s\"", kind.c_str());
  for (const auto& [k, v] : values) {
    std::fprintf(file_, ", \"%s\": ", k.c_str());
    write_number(file_, v);
  }
  for (const auto& [g, m] : groups) {
    std::fprintf(file_, ", \"%s\": {", g.c_str());
    bool first = true;
    for (const auto& [k, v] : m) {
      std::fprintf(file_, "%s\"%s\": ", first ? "" : ", ", k.c_str());
      write_number(file_, v);
      first = false;
    }
    std::fprintf(file_, "}");
  }
  std::fprintf(file_, "}\n");
  COHORT_CHECK(std::fflush(file_) == 0, "writing metrics file '", path_, "' failed");
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
