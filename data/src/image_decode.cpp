// JPEG and PNG to PIL's RGB (image_decode.hpp). Both libraries report errors by longjmp: the
// functions that call setjmp hold no object with a destructor across the libraries' calls (a
// longjmp over one is undefined behaviour); buffers they fill are sized before.
#include "image_decode.hpp"

#include <png.h>

#include <csetjmp>
#include <cstdio>
#include <cstring>
#include <fstream>

#include <jpeglib.h>

#include "cohort/core/error.hpp"

namespace cohort::data::detail {

ImageFormat sniff_image(const unsigned char* d, std::size_t n) {
  if (n >= 3 && d[0] == 0xFF && d[1] == 0xD8 && d[2] == 0xFF) return ImageFormat::jpeg;
  static const unsigned char kPng[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1A, '\n'};
  if (n >= 8 && std::memcmp(d, kPng, 8) == 0) return ImageFormat::png;
  return ImageFormat::unknown;
}

namespace {

// PIL's decompression-bomb limit (2 x Image.MAX_IMAGE_PIXELS, where PIL raises): a header that
// claims more is refused before any pixel memory is taken.
constexpr std::uint64_t kMaxPixels = 2ull * 89478485ull;

bool too_many_pixels(std::uint64_t w, std::uint64_t h, char* message, std::size_t n) {
  if (w * h <= kMaxPixels) return false;
  std::snprintf(message, n, "%llux%llu pixels, more than %llu (PIL's decompression-bomb limit)",
                static_cast<unsigned long long>(w), static_cast<unsigned long long>(h),
                static_cast<unsigned long long>(kMaxPixels));
  return true;
}

// PIL's MULDIV255 and cmyk2rgb (Convert.c): nk = 255 - k; c' = nk - c * nk / 255 (rounded).
inline std::uint8_t muldiv255(unsigned a, unsigned b) {
  const unsigned t = a * b + 128;
  return static_cast<std::uint8_t>(((t >> 8) + t) >> 8);
}
inline std::uint8_t clip8(int v) { return static_cast<std::uint8_t>(v < 0 ? 0 : v > 255 ? 255 : v); }

// ---- JPEG ----

struct JpegErrors {
  jpeg_error_mgr pub;  // first: libjpeg sees a jpeg_error_mgr*
  std::jmp_buf jump;
  char error[JMSG_LENGTH_MAX];
  char warning[JMSG_LENGTH_MAX];  // the first warning
  int warnings;
};

void jpeg_on_error(j_common_ptr cinfo) {
  auto* e = reinterpret_cast<JpegErrors*>(cinfo->err);
  (*cinfo->err->format_message)(cinfo, e->error);
  std::longjmp(e->jump, 1);
}

void jpeg_on_message(j_common_ptr cinfo, int level) {
  if (level >= 0) return;  // trace messages
  auto* e = reinterpret_cast<JpegErrors*>(cinfo->err);
  if (e->warnings++ == 0) (*cinfo->err->format_message)(cinfo, e->warning);
}

// 0: decoded; 1: libjpeg error; 2: wrong size. `row` is scratch of width * 4 bytes for CMYK,
// sized by the caller after the header (hence the two phases).
int jpeg_decode_c(const unsigned char* data, std::size_t size, JpegErrors& errors,
                  std::int64_t expect_w, std::int64_t expect_h, RgbImage& out,
                  std::vector<std::uint8_t>& row) {
  jpeg_decompress_struct cinfo;
  cinfo.err = jpeg_std_error(&errors.pub);
  errors.pub.error_exit = jpeg_on_error;
  errors.pub.emit_message = jpeg_on_message;
  errors.error[0] = errors.warning[0] = '\0';
  errors.warnings = 0;
  if (setjmp(errors.jump)) {
    jpeg_destroy_decompress(&cinfo);
    return 1;
  }
  jpeg_create_decompress(&cinfo);
  jpeg_mem_src(&cinfo, data, static_cast<unsigned long>(size));
  jpeg_read_header(&cinfo, TRUE);
  out.width = cinfo.image_width;
  out.height = cinfo.image_height;
  if ((expect_w > 0 && out.width != expect_w) || (expect_h > 0 && out.height != expect_h)) {
    jpeg_destroy_decompress(&cinfo);
    return 2;
  }
  if (too_many_pixels(cinfo.image_width, cinfo.image_height, errors.error, sizeof errors.error)) {
    jpeg_destroy_decompress(&cinfo);
    return 1;
  }
  const bool cmyk = cinfo.jpeg_color_space == JCS_CMYK || cinfo.jpeg_color_space == JCS_YCCK;
  cinfo.out_color_space = cmyk ? JCS_CMYK : JCS_RGB;  // grayscale: libjpeg replicates it
  jpeg_start_decompress(&cinfo);
  const std::size_t w = cinfo.output_width;
  // Sized before any further libjpeg call can longjmp: resize() here allocates, which is safe
  // (nothing of ours is destroyed by a longjmp out of the calls below).
  out.rgb.resize(w * cinfo.output_height * 3);
  if (cmyk) row.resize(w * 4);
  // PIL reads (and writes) every CMYK JPEG as inverted ("CMYK;I", Adobe's convention), marker
  // or not.
  const bool inverted = cmyk;
  while (cinfo.output_scanline < cinfo.output_height) {
    const JDIMENSION y = cinfo.output_scanline;
    std::uint8_t* dst = out.rgb.data() + static_cast<std::size_t>(y) * w * 3;
    JSAMPROW rows[1] = {cmyk ? row.data() : dst};
    if (jpeg_read_scanlines(&cinfo, rows, 1) != 1) {  // only a suspending source returns 0
      std::snprintf(errors.error, sizeof errors.error, "no data for row %u", y);
      jpeg_destroy_decompress(&cinfo);
      return 1;
    }
    if (cmyk)
      for (std::size_t x = 0; x < w; ++x) {
        unsigned c[4];
        for (int k = 0; k < 4; ++k) c[k] = inverted ? 255u - row[x * 4 + k] : row[x * 4 + k];
        const unsigned nk = 255u - c[3];
        for (int k = 0; k < 3; ++k)
          dst[x * 3 + k] = clip8(static_cast<int>(nk) - muldiv255(c[k], nk));
      }
  }
  jpeg_finish_decompress(&cinfo);
  jpeg_destroy_decompress(&cinfo);
  return 0;
}

// ---- PNG ----

struct PngSource {
  const unsigned char* data;
  std::size_t size, pos;
  std::jmp_buf jump;
  char error[256];
  char warning[256];
  int warnings;
};

void png_on_error(png_structp png, png_const_charp msg) {
  auto* s = static_cast<PngSource*>(png_get_error_ptr(png));
  std::snprintf(s->error, sizeof s->error, "%s", msg);
  std::longjmp(s->jump, 1);
}

void png_on_warning(png_structp png, png_const_charp msg) {
  auto* s = static_cast<PngSource*>(png_get_error_ptr(png));
  if (s->warnings++ == 0) std::snprintf(s->warning, sizeof s->warning, "%s", msg);
}

void png_read_mem(png_structp png, png_bytep out, png_size_t n) {
  auto* s = static_cast<PngSource*>(png_get_io_ptr(png));
  if (n > s->size - s->pos) png_error(png, "the file ends early (truncated)");
  std::memcpy(out, s->data + s->pos, n);
  s->pos += n;
}

// 0: decoded; 1: error. `raw` and `rows` are scratch sized by the caller's second call... sized
// here before the reading calls, as for JPEG.
int png_decode_c(PngSource& src, RgbImage& out, std::vector<std::uint8_t>& raw,
                 std::vector<png_bytep>& rows) {
  png_structp png = png_create_read_struct(PNG_LIBPNG_VER_STRING, &src, png_on_error,
                                           png_on_warning);
  if (!png) {
    std::snprintf(src.error, sizeof src.error, "libpng could not start");
    return 1;
  }
  png_infop info = png_create_info_struct(png);
  if (!info) {
    png_destroy_read_struct(&png, nullptr, nullptr);
    std::snprintf(src.error, sizeof src.error, "libpng could not start");
    return 1;
  }
  if (setjmp(src.jump)) {
    png_destroy_read_struct(&png, &info, nullptr);
    return 1;
  }
  png_set_read_fn(png, &src, png_read_mem);
  png_read_info(png, info);
  const png_uint_32 w = png_get_image_width(png, info), h = png_get_image_height(png, info);
  const int depth = png_get_bit_depth(png, info), type = png_get_color_type(png, info);
  out.width = w;
  out.height = h;
  if (too_many_pixels(w, h, src.error, sizeof src.error)) {
    png_destroy_read_struct(&png, &info, nullptr);
    return 1;
  }
  // 16-bit grayscale without alpha is PIL's I;16, which convert("RGB") clips to 255; every other
  // 16-bit layout keeps the high byte. So only that one is read at 16 bits.
  const bool gray16 = depth == 16 && type == PNG_COLOR_TYPE_GRAY;
  if (type == PNG_COLOR_TYPE_PALETTE) png_set_palette_to_rgb(png);  // tRNS not applied: PIL's
  if (type == PNG_COLOR_TYPE_GRAY && depth < 8) png_set_expand_gray_1_2_4_to_8(png);
  if (depth == 16 && !gray16) png_set_strip_16(png);
  if (gray16) png_set_swap(png);  // little-endian 16-bit words
  // Alpha dropped, as PIL's convert("RGB") does; a palette's tRNS would otherwise come out as
  // alpha from png_set_palette_to_rgb.
  if ((type & PNG_COLOR_MASK_ALPHA) || (type == PNG_COLOR_TYPE_PALETTE &&
                                        png_get_valid(png, info, PNG_INFO_tRNS)))
    png_set_strip_alpha(png);
  if ((type == PNG_COLOR_TYPE_GRAY || type == PNG_COLOR_TYPE_GRAY_ALPHA) && !gray16)
    png_set_gray_to_rgb(png);
  png_set_interlace_handling(png);
  png_read_update_info(png, info);
  const std::size_t rowbytes = png_get_rowbytes(png, info);
  out.rgb.resize(static_cast<std::size_t>(w) * h * 3);
  std::uint8_t* base = out.rgb.data();
  if (gray16) {
    raw.resize(rowbytes * h);
    base = raw.data();
  } else if (rowbytes != static_cast<std::size_t>(w) * 3) {
    std::snprintf(src.error, sizeof src.error, "unexpected row of %zu bytes for %u pixels",
                  rowbytes, static_cast<unsigned>(w));
    png_destroy_read_struct(&png, &info, nullptr);
    return 1;
  }
  rows.resize(h);
  for (png_uint_32 y = 0; y < h; ++y) rows[y] = base + static_cast<std::size_t>(y) * rowbytes;
  png_read_image(png, rows.data());
  png_read_end(png, nullptr);
  png_destroy_read_struct(&png, &info, nullptr);
  if (gray16) {
    const auto* v = reinterpret_cast<const std::uint16_t*>(raw.data());
    for (std::size_t i = 0, n = static_cast<std::size_t>(w) * h; i < n; ++i) {
      const std::uint8_t g = static_cast<std::uint8_t>(v[i] > 255 ? 255 : v[i]);
      out.rgb[i * 3] = out.rgb[i * 3 + 1] = out.rgb[i * 3 + 2] = g;
    }
  }
  return 0;
}

}  // namespace

DecodeResult decode_jpeg(const unsigned char* data, std::size_t size, RgbImage& out,
                         std::int64_t expect_w, std::int64_t expect_h) {
  JpegErrors errors;
  std::vector<std::uint8_t> row;
  DecodeResult r;
  switch (jpeg_decode_c(data, size, errors, expect_w, expect_h, out, row)) {
    case 1:
      r.status = DecodeStatus::error;
      r.message = errors.error;
      return r;
    case 2:
      r.status = DecodeStatus::wrong_size;
      return r;
    default:
      break;
  }
  if (errors.warnings > 0) {
    r.status = DecodeStatus::corrupt;
    r.message = errors.warning;
    r.more_warnings = errors.warnings - 1;
  }
  return r;
}

DecodeResult decode_png(const unsigned char* data, std::size_t size, RgbImage& out) {
  PngSource src{};
  src.data = data;
  src.size = size;
  std::vector<std::uint8_t> raw;
  std::vector<png_bytep> rows;
  DecodeResult r;
  if (png_decode_c(src, out, raw, rows) != 0) {
    r.status = DecodeStatus::error;
    r.message = src.error;
  } else if (src.warnings > 0) {
    // libpng's warnings on a file it decoded (a bad ancillary chunk's CRC, say) leave the
    // pixels whole: PIL loads such files too.
  }
  return r;
}

std::vector<unsigned char> read_whole_file(const std::string& path, const char* who) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  COHORT_CHECK(in.good(), who, ": '", path, "' cannot be opened");
  const std::streamoff size = in.tellg();
  COHORT_CHECK(size > 0, who, ": '", path, "' is empty");
  std::vector<unsigned char> bytes(static_cast<std::size_t>(size));
  in.seekg(0);
  in.read(reinterpret_cast<char*>(bytes.data()), size);
  COHORT_CHECK(in.good(), who, ": '", path, "': read of ", size, " bytes failed");
  return bytes;
}

void decode_image_file(const std::string& path, const char* who, RgbImage& out) {
  const std::vector<unsigned char> bytes = read_whole_file(path, who);
  DecodeResult r;
  const char* lib = "";
  switch (sniff_image(bytes.data(), bytes.size())) {
    case ImageFormat::jpeg:
      r = decode_jpeg(bytes.data(), bytes.size(), out);
      lib = "libjpeg";
      break;
    case ImageFormat::png:
      r = decode_png(bytes.data(), bytes.size(), out);
      lib = "libpng";
      break;
    case ImageFormat::unknown:
      COHORT_FAIL(who, ": '", path, "' (", bytes.size(),
                  " bytes) is neither a JPEG nor a PNG (the formats decoded here; its first "
                  "bytes say so, whatever its extension)");
  }
  if (r.status == DecodeStatus::error)
    COHORT_FAIL(who, ": '", path, "' (", bytes.size(), " bytes) cannot be decoded: ", r.message,
                " (", lib, ")");
  if (r.status == DecodeStatus::corrupt)
    COHORT_FAIL(who, ": '", path, "' (", bytes.size(), " bytes) is corrupt: ", r.message, " (",
                lib, r.more_warnings > 0 ? ", and more warnings" : "", ")");
}

}  // namespace cohort::data::detail
