// pad and repeat_channels: Fashion-MNIST 28x28 fed to the CIFAR models as 3x32x32.
#include <doctest/doctest.h>

#include "../common/testing.hpp"
#include "cohort/data/transforms.hpp"

using cohort::testing::error_of;
using namespace cohort::data;

TEST_CASE("pad and repeat_channels against hand-computed values") {
  const float in[4] = {1, 2, 3, 4};  // [1, 2, 2]
  auto p = pad(1);
  REQUIRE(p->output_shape({1, 2, 2}) == cohort::Shape{1, 4, 4});
  float out[16];
  p->apply(in, {1, 2, 2}, out, 0);
  CHECK(std::vector<float>(out, out + 16) ==
        std::vector<float>{0, 0, 0, 0, 0, 1, 2, 0, 0, 3, 4, 0, 0, 0, 0, 0});
  auto r = repeat_channels(3);
  REQUIRE(r->output_shape({1, 2, 2}) == cohort::Shape{3, 2, 2});
  float rep[12];
  r->apply(in, {1, 2, 2}, rep, 0);
  CHECK(std::vector<float>(rep, rep + 12) == std::vector<float>{1, 2, 3, 4, 1, 2, 3, 4, 1, 2, 3, 4});
  CHECK(pad(2)->output_shape({1, 28, 28}) == cohort::Shape{1, 32, 32});
  CHECK(error_of([] { repeat_channels(3)->output_shape({3, 2, 2}); })
            .find("repeat_channels: expected a one-channel sample, got [3, 2, 2]") != std::string::npos);
  CHECK(error_of([] { pad(-1); }).find("pad: padding -1 must be >= 0") != std::string::npos);
}
