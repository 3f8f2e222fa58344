// A small real TinyImageNet tree (tiny-imagenet-200's layout, JPEGs encoded with libjpeg's
// compressor, of flat colour blocks whose decoded values are known), for the loader's unit test
// and, through tests/data/make_tiny_imagenet_tree.cpp, the examples' tests.
#pragma once

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

#include <jpeglib.h>

namespace tiny_imagenet_tree {

namespace fs = std::filesystem;

using Bytes = std::vector<unsigned char>;

// Encodes w x h pixels (`channels` interleaved bytes per pixel: 1 grayscale, 3 RGB) at quality
// 100. Chroma is kept at full resolution (4:4:4) unless `subsample` (libjpeg's default 4:2:0):
// with it, flat 8x8 blocks decode to their colour within rounding, block edges included.
inline Bytes encode_jpeg(int w, int h, int channels, const Bytes& px, bool subsample = false) {
  if (px.size() != static_cast<std::size_t>(w * h * channels)) throw std::invalid_argument("encode_jpeg: pixel count");
  jpeg_compress_struct c;
  jpeg_error_mgr err;
  c.err = jpeg_std_error(&err);
  jpeg_create_compress(&c);
  unsigned char* buf = nullptr;
  unsigned long size = 0;
  jpeg_mem_dest(&c, &buf, &size);
  c.image_width = static_cast<JDIMENSION>(w);
  c.image_height = static_cast<JDIMENSION>(h);
  c.input_components = channels;
  c.in_color_space = channels == 3 ? JCS_RGB : JCS_GRAYSCALE;
  jpeg_set_defaults(&c);
  jpeg_set_quality(&c, 100, TRUE);
  if (!subsample)
    for (int i = 0; i < c.num_components; ++i)
      c.comp_info[i].h_samp_factor = c.comp_info[i].v_samp_factor = 1;
  jpeg_start_compress(&c, TRUE);
  while (c.next_scanline < c.image_height) {
    JSAMPROW row = const_cast<JSAMPROW>(&px[static_cast<std::size_t>(c.next_scanline) *
                                            static_cast<std::size_t>(w * channels)]);
    jpeg_write_scanlines(&c, &row, 1);
  }
  jpeg_finish_compress(&c);
  Bytes out(buf, buf + size);
  jpeg_destroy_compress(&c);
  std::free(buf);
  return out;
}

inline void write_file(const fs::path& p, const Bytes& b) {
  fs::create_directories(p.parent_path());
  std::ofstream(p, std::ios::binary)
      .write(reinterpret_cast<const char*>(b.data()), static_cast<std::streamsize>(b.size()));
}
inline void write_text(const fs::path& p, const std::string& s) {
  fs::create_directories(p.parent_path());
  std::ofstream(p) << s;
}

// Image `id`: four 32x32 quadrants (top-left, top-right, bottom-left, bottom-right), each of one
// colour; channel c of quadrant q is value(id, q, c). Grayscale images use channel 0 everywhere.
inline int value(int id, int q, int c) { return (37 * id + 61 * q + 89 * c + 20) % 216 + 20; }
inline int quadrant(int y, int x) { return (y >= 32 ? 2 : 0) + (x >= 32 ? 1 : 0); }
inline Bytes quadrants(int id, int channels) {
  Bytes px;
  for (int y = 0; y < 64; ++y)
    for (int x = 0; x < 64; ++x)
      for (int c = 0; c < channels; ++c)
        px.push_back(static_cast<unsigned char>(value(id, quadrant(y, x), c)));
  return px;
}

inline const std::vector<std::string> kWnids = {"n01443537", "n01629819", "n01641577"};

// The tree: 3 classes x 2 train images (image id 2 * class + j in <wnid>_j.JPEG), plus the
// box files and notes the real set has beside them; 3 val images: val_0 (class 2, id 10),
// val_1 (class 0, grayscale, id 11), val_2 (class 1, one flat colour, 4:2:0, id 12).
inline void make_tree(const fs::path& dir) {
  std::string wnids;
  for (const auto& w : kWnids) wnids += w + "\n";
  write_text(dir / "wnids.txt", wnids);
  for (int c = 0; c < 3; ++c) {
    const fs::path cls = dir / "train" / kWnids[c];
    for (int j = 1; j >= 0; --j)
      write_file(cls / "images" / (kWnids[c] + "_" + std::to_string(j) + ".JPEG"),
                 encode_jpeg(64, 64, 3, quadrants(2 * c + j, 3)));
    write_text(cls / (kWnids[c] + "_boxes.txt"), kWnids[c] + "_0.JPEG\t0\t0\t63\t63\n");
    write_text(cls / "images" / "README", "not an image");
  }
  write_file(dir / "val" / "images" / "val_0.JPEG", encode_jpeg(64, 64, 3, quadrants(10, 3)));
  write_file(dir / "val" / "images" / "val_1.JPEG", encode_jpeg(64, 64, 1, quadrants(11, 1)));
  Bytes flat;
  for (int i = 0; i < 64 * 64; ++i) flat.insert(flat.end(), {200, 90, 30});
  write_file(dir / "val" / "images" / "val_2.JPEG", encode_jpeg(64, 64, 3, flat, true));
  write_text(dir / "val" / "val_annotations.txt",
             "val_0.JPEG\t" + kWnids[2] + "\t0\t2\t60\t61\n"
             "val_1.JPEG\t" + kWnids[0] + "\t1\t2\t3\t4\n"
             "val_2.JPEG\t" + kWnids[1] + "\t5\t6\t7\t8\n");
}

}  // namespace tiny_imagenet_tree
