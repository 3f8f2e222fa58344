// Backend interface: where each op runs on each device of this build, for `cohort-doctor --ops`
// and docs/ARCHITECTURE.md. Each backend writes its part next to its op table
// (backends/host/op_table.cpp, backends/cuda/op_table.cu), so the code that routes an op and the
// line that says so are one screen apart; the registry (backends/registry.cpp) collects them.
#pragma once

#include <string>
#include <vector>

#include "cohort/backend/op_list.hpp"

namespace cohort {

struct OpRoute {
  Op op = Op::fill;
  std::string family;  // the shared family header under backends/common/ops/, e.g. "conv2d.hpp"
  std::string path;    // what runs first: "shared", or the vendor call ("cuDNN (cuda/conv2d.cpp)")
  std::string why;     // why, and what runs when that path declines the case ("" when nothing)
};

struct DeviceRoutes {
  std::string device;  // the backend's name: "host", "cuda"
  std::string shared;  // how its executor runs the shared family templates
  std::vector<OpRoute> routes;  // one per op, in Op order
};

// Every backend compiled into this library, whether or not a device of it is usable here.
std::vector<DeviceRoutes> op_routes();

}  // namespace cohort
