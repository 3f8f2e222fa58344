// libpng against libspng on the PNGs of a folder: which decodes faster into 8-bit RGB (issue 52
// asked for the measurement before picking one). Decodes every file R rounds with each library,
// alternating which goes first, checks that both give the same pixels (8-bit files: libspng's
// SPNG_FMT_RGB8 is PIL's convert("RGB") there too), and prints the median ms per image of each
// and their ratio. The data set decodes with libpng (data/src/image_decode.cpp); this program is
// built only where libspng is installed (Debian's libspng-dev, not a dependency of cohort).
//
//   build/bin/png_decode_ab DIR [ROUNDS]
#include <png.h>
#include <spng.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "image_decode.hpp"

namespace fs = std::filesystem;
using cohort::data::detail::RgbImage;

namespace {

bool spng_rgb8(const std::vector<unsigned char>& bytes, std::vector<unsigned char>& out) {
  spng_ctx* ctx = spng_ctx_new(0);
  if (!ctx) return false;
  bool ok = spng_set_png_buffer(ctx, bytes.data(), bytes.size()) == 0;
  size_t size = 0;
  ok = ok && spng_decoded_image_size(ctx, SPNG_FMT_RGB8, &size) == 0;
  if (ok) out.resize(size);
  ok = ok && spng_decode_image(ctx, out.data(), out.size(), SPNG_FMT_RGB8, 0) == 0;
  spng_ctx_free(ctx);
  return ok;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int run(int argc, char** argv);

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "png_decode_ab: %s\n", e.what());
    return 1;
  }
}

int run(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: png_decode_ab DIR [ROUNDS]\n");
    return 2;
  }
  const int rounds = argc > 2 ? std::max(1, std::atoi(argv[2])) : 5;
  std::vector<std::vector<unsigned char>> files;
  std::int64_t pixels = 0;
  for (const auto& e : fs::recursive_directory_iterator(argv[1]))
    if (e.is_regular_file() && e.path().extension() == ".png")
      files.push_back(cohort::data::detail::read_whole_file(e.path().string(), "png_decode_ab"));
  if (files.empty()) {
    std::fprintf(stderr, "png_decode_ab: no .png under %s\n", argv[1]);
    return 1;
  }
  RgbImage img;
  std::vector<unsigned char> sp;
  int differ = 0;
  for (const auto& f : files) {
    const auto r = cohort::data::detail::decode_png(f.data(), f.size(), img);
    if (r.status != cohort::data::detail::DecodeStatus::ok || !spng_rgb8(f, sp)) {
      std::fprintf(stderr, "png_decode_ab: a file does not decode (%s)\n", r.message.c_str());
      return 1;
    }
    differ += sp != img.rgb;
    pixels += img.width * img.height;
  }
  std::vector<double> png_ms, spng_ms;
  using clock = std::chrono::steady_clock;
  for (int r = 0; r < rounds; ++r)
    for (int side = 0; side < 2; ++side) {
      const bool spng_side = (side == 0) == (r % 2 == 1);
      const auto t0 = clock::now();
      for (const auto& f : files) {
        if (spng_side)
          spng_rgb8(f, sp);
        else
          cohort::data::detail::decode_png(f.data(), f.size(), img);
      }
      const double ms = std::chrono::duration<double, std::milli>(clock::now() - t0).count() /
                        static_cast<double>(files.size());
      (spng_side ? spng_ms : png_ms).push_back(ms);
    }
  std::printf("png_decode_ab: %zu PNGs, %.0f pixels each on average, %d rounds alternating; "
              "pixels equal in %zu of %zu files\n",
              files.size(), static_cast<double>(pixels) / static_cast<double>(files.size()),
              rounds, files.size() - static_cast<std::size_t>(differ), files.size());
  std::printf("libpng %s: %.3f ms per image (median)\n", PNG_LIBPNG_VER_STRING, median(png_ms));
  std::printf("libspng %d.%d.%d: %.3f ms per image (median)\n", SPNG_VERSION_MAJOR,
              SPNG_VERSION_MINOR, SPNG_VERSION_PATCH, median(spng_ms));
  std::printf("libpng / libspng time: %.2fx (above 1: libspng faster)\n",
              median(png_ms) / median(spng_ms));
  return differ == 0 ? 0 : 1;
}
