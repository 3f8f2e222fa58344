// COHORT_FUSION, the environment's default for the layers that fuse neighbouring work
// (Sequential, EncoderBlock): on (the default) or off; any other value is an error naming it.
// Internal header of the layers library.
#pragma once

#include <cstdlib>
#include <cstring>

#include "cohort/core/error.hpp"

namespace cohort::nn::detail {

inline bool fusion_by_default() {
  const char* v = std::getenv("COHORT_FUSION");
  if (v == nullptr || *v == '\0' || std::strcmp(v, "on") == 0) return true;
  COHORT_CHECK(std::strcmp(v, "off") == 0, "COHORT_FUSION='", v,
               "' is not a fusion setting: use on (the default) or off");
  return false;
}

}  // namespace cohort::nn::detail
