// Device selection over a list of factories. The list itself is written by hand in
// backends/registry.cpp; keeping the policy here lets tests drive it with fake factories.
#include "cohort/core/device.hpp"
#include "cohort/backend/op_list.hpp"

#include <cstdlib>
#include <string>

#include "cohort/core/error.hpp"
#include "cohort/core/launch_info.hpp"

namespace cohort {

const char* op_name(Op op) {
  switch (op) {
#define COHORT_OP_NAME(name, Call) \
  case Op::name: return #name;
    COHORT_OP_LIST(COHORT_OP_NAME)
#undef COHORT_OP_NAME
    case Op::count_: break;
  }
  return "?";
}

int launcher_local_rank() {
  const LaunchInfo info = LaunchInfo::from_env();
  return info.source == "default" ? -1 : info.local_rank;
}

namespace {
std::string known_names(const std::vector<DeviceFactory>& factories) {
  std::string s;
  for (const auto& f : factories) s += (s.empty() ? "" : ", ") + f.name;
  return s;
}

Device& select_named(const std::vector<DeviceFactory>& factories, const std::string& spec,
                     const std::string& origin, int local_rank) {
  std::string name = spec;
  int index = -1;  // no index given: one device per local rank
  const auto colon = spec.find(':');
  if (colon != std::string::npos) {
    name = spec.substr(0, colon);
    const std::string idx = spec.substr(colon + 1);
    char* end = nullptr;
    const long v = idx.empty() ? -1 : std::strtol(idx.c_str(), &end, 10);
    COHORT_CHECK(!idx.empty() && end && *end == '\0' && v >= 0 && v < 1 << 20, "device '", spec,
                 "' from ", origin, ": index '", idx, "' is not a non-negative integer");
    index = static_cast<int>(v);
  }
  for (const auto& f : factories) {
    if (f.name != name) continue;
    std::string why;
    const int n = f.count(&why);
    COHORT_CHECK(n > 0, "device '", spec, "' from ", origin, " is not available: ",
                 why.empty() ? "no devices" : why);
    if (index < 0) index = local_rank >= 0 ? local_rank % n : 0;
    COHORT_CHECK(index < n, "device '", spec, "' from ", origin, ": index ", index,
                 " out of range, ", n, " ", name, " device", n == 1 ? "" : "s", " present (",
                 name, ":0", n > 1 ? (" .. " + name + ":" + std::to_string(n - 1)) : "", ")");
    return f.get(index);
  }
  COHORT_FAIL("unknown device '", spec, "' from ", origin, " (known devices: ",
              known_names(factories), ")");
}
}  // namespace

Device& select_device(const std::vector<DeviceFactory>& factories, const std::string& spec,
                      int local_rank) {
  if (!spec.empty() && spec != "auto")
    return select_named(factories, spec, "the argument", local_rank);
  const char* env = std::getenv("COHORT_DEVICE");
  if (spec.empty() && env && *env && std::string(env) != "auto")
    return select_named(factories, env, "COHORT_DEVICE", local_rank);
  const DeviceFactory* best = nullptr;
  std::string reasons;
  for (const auto& f : factories) {
    std::string why;
    if (f.count(&why) > 0) {
      if (!best || f.score > best->score) best = &f;
    } else {
      reasons += (reasons.empty() ? "" : "; ") + f.name + ": " + why;
    }
  }
  COHORT_CHECK(best != nullptr, "no device is available (", reasons, ")");
  return best->get(local_rank >= 0 ? local_rank % best->count(nullptr) : 0);
}

}  // namespace cohort
