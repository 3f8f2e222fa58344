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
