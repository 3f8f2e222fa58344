// Uses only installed headers: makes tensors on the default device and multiplies them.
#include <cohort/core/ops.hpp>
#include <cohort/devices.hpp>

#include <cmath>
#include <cstdio>

int main() {
  cohort::Device& dev = cohort::host_device();
  auto a = cohort::Tensor::from_vector<float>({1, 2, 3, 4, 5, 6}, {2, 3}, dev);
  auto b = cohort::Tensor::from_vector<float>({1, 0, 0, 1, 1, 1}, {3, 2}, dev);
  auto c = cohort::ops::matmul(a, b).to_vector<float>();
  const float expect[4] = {4, 5, 10, 11};  // [[1,2,3],[4,5,6]] @ [[1,0],[0,1],[1,1]]
  for (int i = 0; i < 4; ++i) {
    if (std::fabs(c[i] - expect[i]) > 1e-6f) {
      std::printf("consumer: wrong matmul element %d: %f != %f\n", i, c[i], expect[i]);
      return 1;
    }
  }
  std::printf("consumer OK on %s\n", dev.name().c_str());
  return 0;
}
