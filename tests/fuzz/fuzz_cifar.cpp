// libFuzzer target: the CIFAR-10 binary-batch reader, then every sample of what it accepted.
#include <vector>

#include "cohort/data/cifar10.hpp"
#include "fuzz_input.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  fuzz::MemFile f(data, size);
  fuzz::expect_clean([&] {
    cohort::data::Cifar10Dataset ds({f.path()});
    std::vector<float> img(3 * 32 * 32);
    for (std::int64_t i = 0; i < ds.size(); ++i) {
      const auto label = ds.get(i, img.data());
      if (label < 0 || label >= 10) std::abort();
    }
  });
  return 0;
}
