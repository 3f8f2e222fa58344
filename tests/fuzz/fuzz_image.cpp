// libFuzzer target: the image folders' decoders (JPEG through libjpeg, PNG through libpng, chosen
// by content) on arbitrary bytes, then the reference recipe's resampling of what they accepted.
// Bad bytes may only be refused with cohort::Error: no crash, no out-of-bounds access (ASan), no
// other exception (a huge header is refused before memory is taken).
#include <vector>

#include "cohort/data/transforms.hpp"
#include "fuzz_input.hpp"
#include "image_decode.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  fuzz::MemFile f(data, size);
  fuzz::expect_clean([&] {
    cohort::data::detail::RgbImage img;
    cohort::data::detail::decode_image_file(f.path(), "fuzz", img);
    if (img.rgb.size() != static_cast<std::size_t>(img.width * img.height * 3)) std::abort();
    if (img.width * img.height > 4096 * 4096) return;  // keep each input fast
    const cohort::Shape s{3, img.height, img.width};
    std::vector<float> in(img.rgb.begin(), img.rgb.end()), out(3 * 17 * 17);
    cohort::data::detail::resized_crop(in.data(), s, {0, 0, img.height, img.width}, 17, 17,
                                       out.data());
  });
  return 0;
}
