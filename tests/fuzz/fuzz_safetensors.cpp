// libFuzzer target: the safetensors reader (checkpoints, and files PyTorch wrote).
#include "cohort/train/safetensors.hpp"
#include "fuzz_input.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  fuzz::MemFile f(data, size);
  fuzz::expect_clean([&] {
    const auto file = cohort::io::load_safetensors(f.path());
    for (const auto& t : file.tensors) {
      std::size_t n = cohort::dtype_size(t.dtype);
      for (auto d : t.shape.dims()) n *= static_cast<std::size_t>(d);
      if (n != t.bytes.size()) std::abort();  // shapes match byte ranges, as promised
    }
  });
  return 0;
}
