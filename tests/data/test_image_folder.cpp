// Image folders against torchvision and PIL (tests/golden/images.json, made by
// tests/golden/make_image_golden.py with the peers' current torchvision): decoded pixels of the
// committed sample files equal PIL's convert("RGB"); resized_crop, resize, center_crop and the
// flip equal torchvision's tensor path (f32 to float rounding, uint8 within one level); the
// folder's classes and sample order equal ImageFolder's on the same tree. By hand: the boxes
// RandomResizedCrop draws (a fitting try, both fallbacks). Every bad file and folder is an error
// naming it; the DataLoader batches images of different sizes once a transform fixes the size,
// with the same bits for any number of worker threads.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <zlib.h>
#include <string>
#include <vector>

#include "../common/golden.hpp"
#include "../common/testing.hpp"
#include "cohort/data/dataloader.hpp"
#include "cohort/data/image_folder.hpp"
#include "cohort/data/transforms.hpp"
#include "cohort/devices.hpp"
#include "image_decode.hpp"

namespace fs = std::filesystem;
using namespace cohort::data;
using cohort::Shape;
using cohort::testing::error_of;
using cohort::testing::TempDir;

namespace {

const std::string kImages = std::string(COHORT_GOLDEN_DIR) + "/images";

const nlohmann::json& golden() { return cohort::testing::golden_json("images.json"); }

using cohort::testing::mentions;

// The decoded RGB bytes of a file as [3, H, W] floats / 255 (the data set's get_sized layout).
std::vector<float> planes(const detail::RgbImage& img) {
  const std::int64_t plane = img.width * img.height;
  std::vector<float> out(static_cast<std::size_t>(3 * plane));
  for (std::int64_t c = 0; c < 3; ++c)
    for (std::int64_t i = 0; i < plane; ++i)
      out[static_cast<std::size_t>(c * plane + i)] =
          static_cast<float>(img.rgb[static_cast<std::size_t>(i * 3 + c)]) / 255.0f;
  return out;
}

void write_bytes(const std::string& path, const std::string& bytes) {
  fs::create_directories(fs::path(path).parent_path());
  std::ofstream(path, std::ios::binary) << bytes;
}

void copy_to(const std::string& name, const std::string& path) {
  fs::create_directories(fs::path(path).parent_path());
  fs::copy_file(kImages + "/" + name, path, fs::copy_options::overwrite_existing);
}

}  // namespace

TEST_CASE("image decoding: every committed sample file gives PIL's convert('RGB') pixels") {
  const auto& decoded = golden().at("decoded");
  REQUIRE(decoded.size() >= 10);
  for (const auto& [name, want] : decoded.items()) {
    CAPTURE(name);
    CAPTURE(want.at("mode").get<std::string>());
    detail::RgbImage img;
    detail::decode_image_file(kImages + "/" + name, "test", img);
    REQUIRE(img.width == want.at("width").get<std::int64_t>());
    REQUIRE(img.height == want.at("height").get<std::int64_t>());
    const auto rgb = want.at("rgb").get<std::vector<int>>();
    REQUIRE(rgb.size() == img.rgb.size());
    std::size_t differ = 0, first = rgb.size();
    for (std::size_t i = 0; i < rgb.size(); ++i)
      if (rgb[i] != img.rgb[i]) {
        ++differ;
        first = std::min(first, i);
      }
    CAPTURE(first);
    CHECK(differ == 0);
  }
}

TEST_CASE("resampling: resized_crop, resize, center_crop and flip equal torchvision's") {
  detail::RgbImage img;
  detail::decode_image_file(kImages + "/rgb.png", "test", img);
  const std::vector<float> in = planes(img);
  const Shape s{3, img.height, img.width};
  const auto& cases = golden().at("transforms").at("cases");
  REQUIRE(cases.size() >= 10);
  for (const auto& c : cases) {
    const std::string name = c.at("name"), op = c.at("op");
    const auto& p = c.at("params");
    CAPTURE(name);
    const std::int64_t oh = c.at("height"), ow = c.at("width");
    std::vector<float> out(static_cast<std::size_t>(3 * oh * ow), -1.0f);
    if (op == "resized_crop") {
      const auto size = p.at("size").get<std::vector<std::int64_t>>();
      detail::resized_crop(in.data(), s,
                           {p.at("top").get<std::int64_t>(), p.at("left").get<std::int64_t>(),
                            p.at("height").get<std::int64_t>(), p.at("width").get<std::int64_t>()},
                           size[0], size[1], out.data());
    } else {
      TransformPtr t;
      if (op == "resize") {
        const auto& size = p.at("size");
        t = size.is_number() ? resize(size.get<std::int64_t>())
                             : resize(size[0].get<std::int64_t>(), size[1].get<std::int64_t>());
      } else if (op == "center_crop") {
        const auto size = p.at("output_size").get<std::vector<std::int64_t>>();
        t = center_crop(size[0], size[1]);
      } else if (op == "horizontal_flip") {
        t = random_horizontal_flip(1.0f);
      } else {
        FAIL("unknown op in images.json: ", op);
      }
      const Shape o = t->output_shape(s);
      REQUIRE(o == Shape{3, oh, ow});
      t->apply(in.data(), s, out.data(), 0);
    }
    const auto f32 = c.at("f32").get<std::vector<double>>();
    const auto u8 = c.at("u8").get<std::vector<int>>();
    REQUIRE(f32.size() == out.size());
    double worst = 0;
    int worst_u8 = 0;
    for (std::size_t i = 0; i < out.size(); ++i) {
      worst = std::max(worst, std::abs(out[i] - f32[i]));
      const int mine = static_cast<int>(std::lround(std::clamp(out[i], 0.0f, 1.0f) * 255.0f));
      worst_u8 = std::max(worst_u8, std::abs(mine - u8[i]));
    }
    CHECK(worst <= 2e-6);   // torchvision's float path, to f32 rounding
    CHECK(worst_u8 <= 1);   // its uint8 path, within one level of 8-bit rounding
  }
}

TEST_CASE("random_resized_crop: the boxes of torchvision's get_params, by hand") {
  float u[22];
  SUBCASE("the first try fits: area 8% at ratio 3/4, top from the 21st draw") {
    std::fill(u, u + 22, 0.0f);
    u[20] = 0.5f;
    // 100 x 200: target 1600, aspect 0.75: w = round(sqrt(1200)) = 35, h = round(46.19) = 46;
    // top = floor(0.5 * (100 - 46 + 1)) = 27, left = 0.
    const auto b = detail::random_resized_crop_box(100, 200, 0.08f, 1.0f, 0.75f, 4.0f / 3.0f, u);
    CHECK(b.top == 27);
    CHECK(b.left == 0);
    CHECK(b.height == 46);
    CHECK(b.width == 35);
  }
  SUBCASE("no try fits: the central crop of the widest allowed ratio (a wide image)") {
    for (int t = 0; t < 10; ++t) u[2 * t] = 0.99f, u[2 * t + 1] = 0.5f;  // ~141 x 141 > 100 high
    const auto b = detail::random_resized_crop_box(100, 200, 0.08f, 1.0f, 0.75f, 4.0f / 3.0f, u);
    CHECK(b.height == 100);
    CHECK(b.width == 133);  // round(100 * 4/3)
    CHECK(b.top == 0);
    CHECK(b.left == 33);    // (200 - 133) // 2
  }
  SUBCASE("no try fits: a tall image gets the narrowest ratio") {
    for (int t = 0; t < 10; ++t) u[2 * t] = 0.99f, u[2 * t + 1] = 0.5f;
    const auto b = detail::random_resized_crop_box(300, 100, 0.08f, 1.0f, 0.75f, 4.0f / 3.0f, u);
    CHECK(b.width == 100);
    CHECK(b.height == 133);  // round(100 / 0.75)
    CHECK(b.top == 83);
    CHECK(b.left == 0);
  }
  CHECK(mentions(error_of([] { random_resized_crop(0); }), "random_resized_crop: size 0"));
  CHECK(mentions(error_of([] { random_resized_crop(8, 0.5f, 0.2f); }),
                 "random_resized_crop: scale (0.5, 0.2)"));
  CHECK(mentions(error_of([] { random_resized_crop(8, 0.08f, 1.0f, 0.0f, 1.0f); }),
                 "random_resized_crop: ratio (0, 1)"));
  CHECK(mentions(error_of([] { center_crop(0, 3); }), "center_crop: size 0x3"));
  CHECK(mentions(error_of([] { resize(0); }), "resize: size 0"));
  CHECK(mentions(error_of([] { resize(4, 0); }), "resize: size 4x0"));
}

TEST_CASE("random_erasing: torchvision's boxes by hand; a rectangle of the given values") {
  float u[22];
  std::fill(u, u + 22, 0.0f);
  u[20] = 0.5f;
  // 100 x 200, area 20000: the first try erases 2% (400) at ratio 0.3: h = round(sqrt(120)) = 11,
  // w = round(sqrt(1333.3)) = 37; top = floor(0.5 * (100 - 11 + 1)) = 45, left = 0.
  auto b = detail::random_erasing_box(100, 200, 0.02f, 0.33f, 0.3f, 3.3f, u);
  CHECK(b.top == 45);
  CHECK(b.left == 0);
  CHECK(b.height == 11);
  CHECK(b.width == 37);
  // 2 x 2: every try gives w = round(sqrt(1.32 / 0.3)) = 2, not below the width: nothing erased.
  for (int t = 0; t < 10; ++t) u[2 * t] = 0.99f, u[2 * t + 1] = 0.0f;
  b = detail::random_erasing_box(2, 2, 0.02f, 0.33f, 0.3f, 3.3f, u);
  CHECK(b.top == 0);
  CHECK(b.left == 0);
  CHECK(b.height == 2);
  CHECK(b.width == 2);

  // Applied with p = 1: the output differs from the input in one rectangle, filled with the
  // channel's value, of an area and ratio within the ranges (up to rounding).
  const Shape s{3, 60, 80};
  std::vector<float> in(static_cast<std::size_t>(s.numel()));
  for (std::size_t i = 0; i < in.size(); ++i) in[i] = 10.0f + static_cast<float>(i % 97);
  const auto erase = random_erasing(1.0f, 0.02f, 0.33f, 0.3f, 3.3f, {0.5f, -1.0f, 2.0f});
  int erased_images = 0;
  for (std::uint64_t key = 1; key <= 50; ++key) {
    std::vector<float> out(in.size());
    erase->apply(in.data(), s, out.data(), key);
    std::int64_t y0 = 60, y1 = -1, x0 = 80, x1 = -1, changed = 0, wrong = 0;
    for (std::int64_t c = 0; c < 3; ++c)
      for (std::int64_t y = 0; y < 60; ++y)
        for (std::int64_t x = 0; x < 80; ++x) {
          const std::size_t i = static_cast<std::size_t>((c * 60 + y) * 80 + x);
          if (out[i] == in[i]) continue;
          wrong += out[i] != (c == 0 ? 0.5f : c == 1 ? -1.0f : 2.0f);
          ++changed;
          y0 = std::min(y0, y), y1 = std::max(y1, y), x0 = std::min(x0, x), x1 = std::max(x1, x);
        }
    CHECK(wrong == 0);
    if (changed == 0) continue;
    ++erased_images;
    const std::int64_t h = y1 - y0 + 1, w = x1 - x0 + 1;
    CHECK(changed == 3 * h * w);  // one rectangle, every channel
    CHECK(h * w >= static_cast<std::int64_t>(0.02 * 4800) - 12);
    CHECK(h * w <= static_cast<std::int64_t>(0.33 * 4800) + 120);
  }
  CHECK(erased_images >= 45);  // a try fits nearly always on 60 x 80
  std::vector<float> out(in.size());
  random_erasing(0.0f)->apply(in.data(), s, out.data(), 7);
  CHECK(out == in);
  CHECK(mentions(error_of([] { random_erasing(1.5f); }), "random_erasing: p 1.5 outside [0, 1]"));
  CHECK(mentions(error_of([&] {
                   random_erasing(0.5f, 0.02f, 0.33f, 0.3f, 3.3f, {1.0f, 2.0f})->output_shape(s);
                 }),
                 "random_erasing: 2 values for a sample with 3 channels"));
  CHECK(mentions(error_of([] { random_erasing(0.5f, 0.4f, 0.3f); }),
                 "random_erasing: scale (0.4, 0.3)"));
}

TEST_CASE("image folder: torchvision's classes, class indices and sample order") {
  const auto& g = golden().at("image_folder");
  TempDir d("cohort_image_folder_order");
  const std::string root = d.file("root");
  const auto decoded = image_folder_decoded_extensions();
  const auto ext_of = [](std::string name) {
    std::transform(name.begin(), name.end(), name.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    const auto dot = name.rfind('.');
    return dot == std::string::npos ? std::string() : name.substr(dot);
  };
  std::vector<std::string> refused;  // torchvision reads them; cohort names the first and stops
  for (const auto& rel : g.at("tree")) {
    const std::string r = rel.get<std::string>();
    copy_to("rgb.png", root + "/" + r);
  }
  for (const auto& e : g.at("empty_dirs")) fs::create_directories(root + "/" + e.get<std::string>());
  std::vector<std::pair<std::string, std::int64_t>> want;
  for (const auto& s : g.at("samples")) {
    const std::string r = s[0].get<std::string>();
    if (std::find(decoded.begin(), decoded.end(), ext_of(r)) == decoded.end())
      refused.push_back(r);
    else
      want.emplace_back(r, s[1].get<std::int64_t>());
  }
  REQUIRE(!refused.empty());
  CHECK(mentions(error_of([&] { load_image_folder(root); }),
                 "'" + root + "/" + refused.front() + "'"));
  for (const auto& r : refused) fs::remove(root + "/" + r);
  // C_upper held only refused formats: one PNG keeps the class (last of its class's samples).
  copy_to("rgb.png", root + "/C_upper/zz.png");
  want.insert(std::find_if(want.begin(), want.end(), [](const auto& w) { return w.second == 1; }),
              {"C_upper/zz.png", 0});
  const auto ds = load_image_folder(root);
  CHECK(ds->classes() == g.at("classes").get<std::vector<std::string>>());
  std::vector<std::pair<std::string, std::int64_t>> got;
  for (const auto& it : ds->items())
    got.emplace_back(it.path.substr(root.size() + 1), it.label);  // not fs::relative: no link resolved
  CHECK(got == want);
  for (const auto& [name, idx] : g.at("class_to_idx").items())
    CHECK(ds->class_to_idx().at(name) == idx.get<std::int64_t>());
  CHECK(image_folder_extensions() == g.at("img_extensions").get<std::vector<std::string>>());
  CHECK(ds->variable_size());
  CHECK(ds->sample_shape() == Shape{3, 0, 0});
}

TEST_CASE("image folder: symbolic links are followed as torchvision follows them") {
  const auto& g = golden().at("image_folder").at("symlink_example");
  TempDir d("cohort_image_folder_links");
  const std::string root = d.file("root");
  for (const auto& f : g.at("files")) copy_to("rgb.png", root + "/" + f.get<std::string>());
  copy_to("rgb.png", d.file("outside/o.png"));  // next to the root, reached through a link
  for (const auto& l : g.at("links"))
    fs::create_symlink(l[1].get<std::string>(), root + "/" + l[0].get<std::string>());
  const auto ds = load_image_folder(root);
  CHECK(ds->classes() == g.at("classes").get<std::vector<std::string>>());
  std::vector<std::pair<std::string, std::int64_t>> got, want;
  for (const auto& it : ds->items())
    got.emplace_back(it.path.substr(root.size() + 1), it.label);  // not fs::relative: no link resolved
  for (const auto& s : g.at("samples"))
    want.emplace_back(s[0].get<std::string>(), s[1].get<std::int64_t>());
  CHECK(got == want);
  // The dangling link is listed (as torchvision lists it) and fails when read, naming it.
  std::vector<float> out;
  Shape shape;
  CHECK(
      mentions(error_of([&] { ds->get_sized(2, out, shape); }), "dangling.jpg' cannot be opened"));
}

TEST_CASE("image folder: bad files and folders are errors naming them") {
  TempDir d("cohort_image_folder_bad");
  const std::string root = d.file("root");
  CHECK(mentions(error_of([&] { load_image_folder(root); }),
                 "image folder '" + root + "' does not exist or is not a folder"));
  fs::create_directories(root);
  write_bytes(root + "/loose.png", "not a class folder");
  CHECK(mentions(error_of([&] { load_image_folder(root); }), "has no class folders"));
  copy_to("rgb.jpg", root + "/cat/1.jpg");
  fs::create_directories(root + "/dog/sub");
  write_bytes(root + "/dog/notes.txt", "ignored, as torchvision ignores it");
  CHECK(mentions(error_of([&] { load_image_folder(root); }),
                 "no image file in the class folder(s) 'dog'"));
  copy_to("rgb.png", root + "/dog/sub/2.png");
  write_bytes(root + "/dog/3.BMP", "BM");
  CHECK(mentions(error_of([&] { load_image_folder(root); }),
                 "'" + root +
                     "/dog/3.BMP' is a .bmp file: torchvision's ImageFolder would load it, "
                     "cohort decodes .jpg, .jpeg and .png only"));
  fs::remove(root + "/dog/3.BMP");
  for (const char* bad : {"not_an_image.jpg", "truncated.jpg", "truncated.png", "empty.png"})
    copy_to(bad, root + "/dog/" + bad);
  const auto ds = load_image_folder(root);
  REQUIRE(ds->size() == 6);
  std::vector<float> out;
  Shape shape;
  const auto err_of = [&](const std::string& file) {
    for (std::int64_t i = 0; i < ds->size(); ++i)
      if (fs::path(ds->items()[static_cast<std::size_t>(i)].path).filename() == file)
        return error_of([&] { ds->get_sized(i, out, shape); });
    return std::string("<no such item>");
  };
  CHECK(mentions(err_of("not_an_image.jpg"), "not_an_image.jpg' ("));
  CHECK(mentions(err_of("not_an_image.jpg"), "is neither a JPEG nor a PNG"));
  CHECK(mentions(err_of("truncated.jpg"), "truncated.jpg' ("));
  CHECK(mentions(err_of("truncated.jpg"), "(libjpeg"));
  CHECK(mentions(err_of("truncated.png"), "truncated.png' ("));
  CHECK(mentions(err_of("truncated.png"),
                 "cannot be decoded: the file ends early (truncated) (libpng)"));
  CHECK(mentions(err_of("empty.png"), "empty.png' is empty"));
  {  // A header claiming 20000 x 20000 pixels: refused before any pixel memory is taken.
    std::string png = "\x89PNG\r\n\x1a\n";
    const auto be32 = [](std::uint32_t v) {
      return std::string{static_cast<char>(v >> 24), static_cast<char>(v >> 16),
                         static_cast<char>(v >> 8), static_cast<char>(v)};
    };
    const std::string ihdr = "IHDR" + be32(20000) + be32(20000) + std::string("\x08\x02\0\0\0", 5);
    png += be32(13) + ihdr +
           be32(static_cast<std::uint32_t>(crc32(0, reinterpret_cast<const Bytef*>(ihdr.data()),
                                                 static_cast<uInt>(ihdr.size()))));
    png += be32(0) + "IDAT" + be32(static_cast<std::uint32_t>(
                                   crc32(0, reinterpret_cast<const Bytef*>("IDAT"), 4)));
    detail::RgbImage big;
    const auto r = detail::decode_png(reinterpret_cast<const unsigned char*>(png.data()),
                                      png.size(), big);
    CHECK(r.status == detail::DecodeStatus::error);
    CHECK(mentions(r.message,
                   "20000x20000 pixels, more than 178956970 (PIL's decompression-bomb limit)"));
    CHECK(big.rgb.empty());
  }
  CHECK(mentions(err_of("1.jpg"), "<no error>"));
  CHECK(shape == Shape{3, golden()["decoded"]["rgb.jpg"]["height"].get<std::int64_t>(),
                       golden()["decoded"]["rgb.jpg"]["width"].get<std::int64_t>()});
  CHECK(mentions(error_of([&] { ds->get(0, out.data()); }), "read them with get_sized()"));

  // ROOT/train and ROOT/val must hold the same classes.
  const std::string two = d.file("two");
  copy_to("rgb.png", two + "/train/a/1.png");
  copy_to("rgb.png", two + "/train/b/1.png");
  copy_to("rgb.png", two + "/val/a/1.png");
  copy_to("rgb.png", two + "/val/c/1.png");
  CHECK(mentions(error_of([&] { load_image_folder(two, Split::train); }),
                 "train/ and val/ hold different classes, so class indices would mean different "
                 "things (only in train/: 'b'; only in val/: 'c')"));
  CHECK(mentions(error_of([&] { load_image_folder(d.file("none"), Split::test); }),
                 "needs train/ and val/"));
  fs::rename(two + "/val/c", two + "/val/b");
  CHECK(load_image_folder(two, Split::test)->items().at(1).path == two + "/val/b/1.png");
}

TEST_CASE("DataLoader: images of different sizes batch once a transform fixes the size") {
  TempDir d("cohort_image_folder_loader");
  const std::string root = d.file("root");
  // Sample files of several sizes and formats, two classes.
  const std::vector<std::string> a = {"rgb.jpg", "gray.png", "palette.png", "rgba.png"};
  const std::vector<std::string> b = {"rgb.png", "cmyk.jpg", "gray.jpg", "rgb_progressive.jpg",
                                      "gray_alpha.png"};
  for (const auto& f : a) copy_to(f, root + "/a/" + f);
  for (const auto& f : b) copy_to(f, root + "/b/" + f);
  const auto ds = load_image_folder(root);
  REQUIRE(ds->size() == 9);
  auto& host = cohort::host_device();

  // center_crop(12, 10): each row equals the crop taken by hand from the decoded file.
  DataLoaderOptions o;
  o.batch_size = 4;
  DataLoader plain(ds, o, {center_crop(12, 10)}, host);
  CHECK(plain.batch_shape(4) == Shape{4, 3, 12, 10});
  Batch batch;
  std::int64_t row_total = 0;
  while (plain.next(batch)) {
    const auto px = batch.images.to_vector<float>();
    const auto labels = batch.labels.to_vector<std::int64_t>();
    for (std::size_t r = 0; r < batch.samples.size(); ++r, ++row_total) {
      const auto& item = ds->items()[static_cast<std::size_t>(batch.samples[r])];
      CHECK(labels[r] == item.label);
      detail::RgbImage img;
      detail::decode_image_file(item.path, "test", img);
      const std::int64_t top = std::llround(std::nearbyint((img.height - 12) / 2.0));
      const std::int64_t left = std::llround(std::nearbyint((img.width - 10) / 2.0));
      REQUIRE(top >= 0);
      REQUIRE(left >= 0);
      int bad = 0;
      for (int c = 0; c < 3; ++c)
        for (int y = 0; y < 12; ++y)
          for (int x = 0; x < 10; ++x) {
            const float want =
                img.rgb[static_cast<std::size_t>(((top + y) * img.width + left + x) * 3 + c)] /
                255.0f;
            bad += px[r * 360 + static_cast<std::size_t>((c * 12 + y) * 10 + x)] != want;
          }
      CAPTURE(item.path);
      CHECK(bad == 0);
    }
  }
  CHECK(row_total == 9);

  // Subsets keep the parent's sizes rule and names.
  const DatasetPtr part = subset(ds, {8, 0});
  CHECK(part->variable_size());
  CHECK(part->class_names() == ds->classes());
  DataLoader partial(part, DataLoaderOptions{}, {center_crop(12, 10)}, host);
  REQUIRE(partial.next(batch));
  CHECK(batch.samples == std::vector<std::int64_t>{0, 1});
  CHECK(batch.labels.to_vector<std::int64_t>() ==
        std::vector<std::int64_t>{ds->items()[8].label, ds->items()[0].label});

  // The ImageNet training chain: the same bits with 0 and 2 worker threads, every epoch.
  const std::vector<TransformPtr> chain = {random_resized_crop(16), random_horizontal_flip(),
                                           normalize({0.485f, 0.456f, 0.406f},
                                                     {0.229f, 0.224f, 0.225f})};
  o.shuffle = true;
  o.seed = 7;
  std::vector<std::vector<float>> runs;
  for (int workers : {0, 2}) {
    o.num_workers = workers;
    DataLoader l(ds, o, chain, host);
    std::vector<float> all;
    for (std::int64_t epoch = 0; epoch < 2; ++epoch) {
      l.set_epoch(epoch);
      while (l.next(batch)) {
        CHECK(batch.images.shape()[1] == 3);
        CHECK(batch.images.shape()[2] == 16);
        const auto v = batch.images.to_vector<float>();
        all.insert(all.end(), v.begin(), v.end());
      }
    }
    runs.push_back(all);
  }
  CHECK(runs[0] == runs[1]);

  // Without a transform that fixes the size: an error naming the data set and the remedy.
  CHECK(mentions(error_of([&] { DataLoader bad(ds, o, {random_horizontal_flip()}, host); }),
                 "holds images of different sizes, and none of the 1 transforms fixes the size"));
  // A bad file surfaces from next(), naming it.
  copy_to("truncated.png", root + "/b/zz_truncated.png");
  DataLoader broken(load_image_folder(root), DataLoaderOptions{}, {center_crop(8)}, host);
  CHECK(mentions(error_of([&] {
                   while (broken.next(batch)) {
                   }
                 }),
                 "zz_truncated.png"));
}
