// libFuzzer target: the IDX reader (MNIST / Fashion-MNIST files).
#include "cohort/data/idx.hpp"
#include "fuzz_input.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  fuzz::MemFile f(data, size);
  fuzz::expect_clean([&] {
    const auto a = cohort::data::read_idx(f.path());
    std::size_t n = 1;
    for (auto d : a.dims) n *= static_cast<std::size_t>(d);
    if (n != a.values.size()) std::abort();  // the reader promised dims match the values
  });
  return 0;
}
