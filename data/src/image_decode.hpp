// Decoding image files to 8-bit RGB, the pixels PIL gives for Image.open(f).convert("RGB") (what
// torchvision's ImageFolder loads): JPEG through libjpeg(-turbo), PNG through libpng. Internal
// to cohort::data (the data sets call it; libjpeg and libpng stay out of public headers).
//
// Conversions, as PIL's: grayscale replicated to R = G = B; alpha dropped (not composited);
// palette looked up (transparency ignored); CMYK read as Adobe-inverted (PIL's rule, marker or not) and
// converted by PIL's cmyk2rgb; 16-bit PNG channels: RGB by their high byte, grayscale clipped to 255 (PIL's I;16 -> L).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace cohort::data::detail {

enum class ImageFormat { jpeg, png, unknown };

// From the first bytes (the magic numbers), not the file name.
ImageFormat sniff_image(const unsigned char* data, std::size_t size);

struct RgbImage {
  std::int64_t width = 0, height = 0;
  std::vector<std::uint8_t> rgb;  // height rows of width R, G, B bytes
};

enum class DecodeStatus { ok, error, corrupt, wrong_size };

struct DecodeResult {
  DecodeStatus status = DecodeStatus::ok;
  std::string message;  // the decoder's words for error and corrupt (its first warning)
  int more_warnings = 0;
};

// Decodes a JPEG into `out`. expect_w/expect_h > 0: a file of another size is wrong_size (its
// size in out.width/height, no pixels decoded). Any libjpeg warning makes the result corrupt
// (its pixels would be partly made up). Never throws, never prints.
DecodeResult decode_jpeg(const unsigned char* data, std::size_t size, RgbImage& out,
                         std::int64_t expect_w = 0, std::int64_t expect_h = 0);
// Decodes a PNG into `out` (truncated data and CRC errors are errors). Never throws or prints.
DecodeResult decode_png(const unsigned char* data, std::size_t size, RgbImage& out);

// The whole file; throws naming `who` and the path when it cannot be opened, is empty or
// cannot be read.
std::vector<unsigned char> read_whole_file(const std::string& path, const char* who);

// Decodes the file at `path` (JPEG or PNG, by its content) or throws an Error naming `who`, the
// file, its size and the decoder's message: not an image, a format not decoded here, corrupt.
void decode_image_file(const std::string& path, const char* who, RgbImage& out);

}  // namespace cohort::data::detail
