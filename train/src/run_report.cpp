// RunReport as one flat JSON object (see run_report.hpp), through nlohmann-json. The reader
// ignores keys it does not know (a newer writer's fields) and refuses missing or mistyped ones.
#include "cohort/train/run_report.hpp"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>

#include "cohort/core/error.hpp"

namespace cohort::train {

void write_run_report(const std::string& path, const RunReport& r) {
  COHORT_CHECK(!path.empty(), "write_run_report: empty path");
  for (const double v : {r.images_per_s, r.step_ms, r.comm_ms, r.overlap_ms, r.final_loss})
    COHORT_CHECK(std::isfinite(v), "run report ", path, ": a figure is not finite (", v, ")");
  const nlohmann::ordered_json j = {
      {"backend", r.backend},       {"world_size", r.world_size},
      {"steps", r.steps},           {"images_per_s", r.images_per_s},
      {"step_ms", r.step_ms},       {"comm_ms", r.comm_ms},
      {"overlap_ms", r.overlap_ms}, {"final_loss", r.final_loss},
      {"deterministic", r.deterministic}, {"digest", r.digest},
      {"weights_identical", r.weights_identical}};
  const std::string tmp = path + ".tmp";
  {
    std::ofstream f(tmp, std::ios::trunc);
    COHORT_CHECK(f.good(), "run report: cannot write ", tmp, ": ", std::strerror(errno));
    f << j.dump() << "\n";
    f.flush();
    COHORT_CHECK(f.good(), "run report: writing ", tmp, " failed: ", std::strerror(errno));
  }
  COHORT_CHECK(std::rename(tmp.c_str(), path.c_str()) == 0, "run report: cannot rename ", tmp,
               " to ", path, ": ", std::strerror(errno));
}

void check_run_report_path(const std::string& path) {
  COHORT_CHECK(!path.empty(), "run report: empty path");
  const std::string tmp = path + ".tmp";
  std::FILE* f = std::fopen(tmp.c_str(), "w");
  COHORT_CHECK(f != nullptr, "run report: cannot write ", tmp, " (", std::strerror(errno),
               "): is the directory of ", path, " there and writable?");
  std::fclose(f);
  std::remove(tmp.c_str());
}

RunReport read_run_report(const std::string& path) {
  std::ifstream f(path);
  COHORT_CHECK(f.good(), "run report ", path, ": cannot open: ", std::strerror(errno));
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(f);
  } catch (const nlohmann::json::parse_error& e) {
    COHORT_FAIL("run report ", path, ": not JSON: ", e.what());
  }
  COHORT_CHECK(j.is_object(), "run report ", path, ": not a JSON object");
  const auto at = [&](const char* key) -> const nlohmann::json& {
    COHORT_CHECK(j.contains(key), "run report ", path, ": no \"", key, "\"");
    return j[key];
  };
  const auto str = [&](const char* key) {
    const auto& v = at(key);
    COHORT_CHECK(v.is_string(), "run report ", path, ": \"", key, "\" is not a string: ", v.dump());
    return v.get<std::string>();
  };
  const auto num = [&](const char* key) {
    const auto& v = at(key);
    COHORT_CHECK(v.is_number(), "run report ", path, ": \"", key, "\" is not a number: ", v.dump());
    return v.get<double>();
  };
  const auto count = [&](const char* key) {
    const auto& v = at(key);
    COHORT_CHECK(v.is_number_unsigned(), "run report ", path, ": \"", key,
                 "\" is not a count: ", v.dump());
    return v.get<std::int64_t>();
  };
  const auto boolean = [&](const char* key) {
    const auto& v = at(key);
    COHORT_CHECK(v.is_boolean(), "run report ", path, ": \"", key, "\" is not true or false: ",
                 v.dump());
    return v.get<bool>();
  };
  RunReport r;
  r.backend = str("backend");
  r.world_size = static_cast<int>(count("world_size"));
  r.steps = count("steps");
  r.images_per_s = num("images_per_s");
  r.step_ms = num("step_ms");
  r.comm_ms = num("comm_ms");
  r.overlap_ms = num("overlap_ms");
  r.final_loss = num("final_loss");
  r.deterministic = boolean("deterministic");
  r.digest = str("digest");
  r.weights_identical = boolean("weights_identical");
  COHORT_CHECK(r.world_size >= 1, "run report ", path, ": world_size ", r.world_size, " < 1");
  return r;
}

}  // namespace cohort::train
