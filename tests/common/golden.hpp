// Reads golden vectors written by the python3-torch scripts in tests/golden/ (committed data; CI
// never needs torch). File format (JSON):
//   { "cases": { "<case>": { "config": {...},
//                             "tensors": { "<name>": {"shape": [..], "data": [..]}, ... } } } }
// Float data is written with Python's repr, so it round-trips exactly to float64 and then f32;
// NaN and infinities, which JSON lacks, as the strings "nan", "inf" and "-inf".
#pragma once

#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cohort/core/error.hpp"
#include "cohort/core/tensor.hpp"

namespace cohort::testing {

// A golden JSON file of tests/golden (COHORT_GOLDEN_DIR) of any layout, parsed once per name.
inline const nlohmann::json& golden_json(const std::string& name) {
  static std::map<std::string, nlohmann::json> cache;
  auto it = cache.find(name);
  if (it == cache.end()) {
    const std::string path = std::string(COHORT_GOLDEN_DIR) + "/" + name;
    std::ifstream in(path);
    COHORT_CHECK(in.good(), "golden file '", path, "' cannot be opened");
    it = cache.emplace(name, nlohmann::json::parse(in)).first;
  }
  return it->second;
}

struct GoldenTensor {
  std::vector<std::int64_t> shape;
  std::vector<float> data;
  Shape as_shape() const { return Shape(shape); }
};

class GoldenFile {
 public:
  explicit GoldenFile(const std::string& path) : path_(path) {
    std::ifstream in(path);
    COHORT_CHECK(in.good(), "golden file '", path, "' cannot be opened (run from the build tree; "
                 "COHORT_GOLDEN_DIR points at tests/golden)");
    in >> json_;
    COHORT_CHECK(json_.contains("cases"), "golden file '", path, "' has no \"cases\" object");
  }
  std::vector<std::string> cases() const {
    std::vector<std::string> out;
    for (auto it = json_["cases"].begin(); it != json_["cases"].end(); ++it) out.push_back(it.key());
    return out;
  }
  const nlohmann::json& config(const std::string& c) const { return at(c)["config"]; }
  bool has_tensor(const std::string& c, const std::string& name) const {
    return at(c)["tensors"].contains(name);
  }
  GoldenTensor tensor(const std::string& c, const std::string& name) const {
    const auto& t = at(c)["tensors"];
    COHORT_CHECK(t.contains(name), "golden file '", path_, "', case '", c, "': no tensor '", name, "'");
    GoldenTensor g;
    g.shape = t[name]["shape"].get<std::vector<std::int64_t>>();
    for (const auto& v : t[name]["data"])
      g.data.push_back(v.is_string() ? std::stof(v.get<std::string>())
                                     : static_cast<float>(v.get<double>()));
    return g;
  }
  // The golden tensor on `device`.
  Tensor load(const std::string& c, const std::string& name, Device& device) const {
    const GoldenTensor g = tensor(c, name);
    return Tensor::from_vector(g.data, g.as_shape(), device);
  }

 private:
  const nlohmann::json& at(const std::string& c) const {
    COHORT_CHECK(json_["cases"].contains(c), "golden file '", path_, "': no case '", c, "'");
    return json_["cases"][c];
  }
  std::string path_;
  nlohmann::json json_;
};

// Directory of the committed golden files, passed by CMake as a compile definition.
inline std::string golden_dir() {
#ifdef COHORT_GOLDEN_DIR
  return COHORT_GOLDEN_DIR;
#else
  return "tests/golden";
#endif
}

}  // namespace cohort::testing
