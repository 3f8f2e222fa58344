// IDX and CIFAR-10 readers on files the test writes (plain and gzip), every corruption the
// readers promise to catch, and the real Fashion-MNIST files from Debian's package.
#include <doctest/doctest.h>

#include "../common/testing.hpp"

using cohort::testing::error_of;
using cohort::testing::TempDir;
#include <zlib.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <unistd.h>

#include "cohort/core/error.hpp"
#include "cohort/data/cifar10.hpp"
#include "cohort/data/idx.hpp"

namespace fs = std::filesystem;
using namespace cohort::data;

namespace {

std::vector<std::uint8_t> idx_bytes(std::uint8_t type, const std::vector<std::uint32_t>& dims,
                                    const std::vector<std::uint8_t>& values) {
  std::vector<std::uint8_t> b = {0, 0, type, static_cast<std::uint8_t>(dims.size())};
  for (auto d : dims)
    for (int s = 24; s >= 0; s -= 8) b.push_back(static_cast<std::uint8_t>(d >> s));
  b.insert(b.end(), values.begin(), values.end());
  return b;
}
void write_plain(const std::string& p, const std::vector<std::uint8_t>& b) {
  std::ofstream(p, std::ios::binary).write(reinterpret_cast<const char*>(b.data()),
                                           static_cast<std::streamsize>(b.size()));
}
void write_gz(const std::string& p, const std::vector<std::uint8_t>& b) {
  gzFile f = gzopen(p.c_str(), "wb");
  REQUIRE(f != nullptr);
  REQUIRE(gzwrite(f, b.data(), static_cast<unsigned>(b.size())) == static_cast<int>(b.size()));
  gzclose(f);
}

// 3 images of 2x2, labels 7, 0, 9.
std::vector<std::uint8_t> kPixels = {0, 51, 102, 255, 1, 2, 3, 4, 10, 20, 30, 40};
std::vector<std::uint8_t> kImages = idx_bytes(0x08, {3, 2, 2}, kPixels);
std::vector<std::uint8_t> kLabels = idx_bytes(0x08, {3}, {7, 0, 9});
}  // namespace

TEST_CASE("IDX: plain and gzip files read the same values") {
  TempDir d;
  write_plain(d.file("img"), kImages);
  write_plain(d.file("lbl"), kLabels);
  write_gz(d.file("img.gz"), kImages);
  write_gz(d.file("lbl.gz"), kLabels);
  for (auto [img, lbl] : {std::pair{"img", "lbl"}, std::pair{"img.gz", "lbl.gz"}}) {
    IdxDataset ds(d.file(img), d.file(lbl));
    REQUIRE(ds.size() == 3);
    CHECK(ds.sample_shape() == cohort::Shape{1, 2, 2});
    float px[4];
    CHECK(ds.get(0, px) == 7);
    CHECK(px[1] == doctest::Approx(0.2));
    CHECK(px[3] == 1.0f);
    CHECK(ds.get(2, px) == 9);
    CHECK(px[0] == doctest::Approx(10.0 / 255));
  }
}

TEST_CASE("IDX: every corruption is an error naming the file and the sizes") {
  TempDir d;
  write_plain(d.file("lbl"), kLabels);
  auto with = [&](const std::vector<std::uint8_t>& bytes, bool gz = false) {
    const std::string p = d.file(gz ? "bad.gz" : "bad");
    gz ? write_gz(p, bytes) : write_plain(p, bytes);
    return error_of([&] { IdxDataset(p, d.file("lbl")); });
  };
  // truncated: one pixel missing
  std::vector<std::uint8_t> cut(kImages.begin(), kImages.end() - 1);
  std::string e = with(cut);
  CHECK(e.find("is truncated: expected 28 bytes (header 16 + 3x2x2), found 27") != std::string::npos);
  CHECK(e.find(d.file("bad")) != std::string::npos);
  CHECK(with(cut, true).find("is truncated: expected 28 bytes") != std::string::npos);
  // trailing bytes
  auto extra = kImages;
  extra.push_back(0);
  CHECK(with(extra).find("1 unexpected trailing bytes") != std::string::npos);
  // bad magic
  auto magic = kImages;
  magic[0] = 0x1f;
  CHECK(with(magic).find("bad magic number") != std::string::npos);
  // wrong element type
  auto type = kImages;
  type[2] = 0x0d;
  CHECK(with(type).find("element type 0xd") != std::string::npos);
  // header cut short
  CHECK(with({0, 0, 8, 3, 0, 0}).find("truncated in its header") != std::string::npos);
  CHECK(with({0, 0}).find("too short for a header") != std::string::npos);
  // dims whose product overflows 64 bits (found by tests/fuzz/fuzz_idx: signed overflow before)
  CHECK(with({0, 0, 8, 4, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
              0x7f, 0xff, 0xff, 0xff, 1, 2, 3})
            .find("is corrupt: its header claims") != std::string::npos);
  // a gzip stream cut in the middle
  write_gz(d.file("full.gz"), kImages);
  std::ifstream in(d.file("full.gz"), std::ios::binary);
  std::vector<char> gz((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::ofstream(d.file("cut.gz"), std::ios::binary).write(gz.data(), static_cast<std::streamsize>(gz.size() - 6));
  CHECK(error_of([&] { read_idx(d.file("cut.gz")); }).find(d.file("cut.gz")) != std::string::npos);
  // label problems
  write_plain(d.file("img"), kImages);
  write_plain(d.file("lbl2"), idx_bytes(0x08, {2}, {1, 2}));
  CHECK(error_of([&] { IdxDataset(d.file("img"), d.file("lbl2")); })
            .find("has 3 images, '" + d.file("lbl2") + "' has 2 labels") != std::string::npos);
  write_plain(d.file("lbl3"), idx_bytes(0x08, {3}, {1, 12, 2}));
  CHECK(error_of([&] { IdxDataset(d.file("img"), d.file("lbl3")); })
            .find("label 12 of sample 1 is not below 10") != std::string::npos);
  CHECK(error_of([&] { IdxDataset(d.file("nope"), d.file("lbl")); })
            .find("data file '" + d.file("nope") + "' does not exist") != std::string::npos);
  CHECK(error_of([&] { IdxDataset(d.file("lbl"), d.file("lbl")); })
            .find("must have 3 dimensions [N, H, W], has 1") != std::string::npos);
}

TEST_CASE("load_mnist_dir: missing directory and files are named") {
  TempDir d;
  CHECK(error_of([&] { load_mnist_dir(d.file("absent"), Split::train); })
            .find("data directory '" + d.file("absent") + "' does not exist") != std::string::npos);
  CHECK(error_of([&] { load_mnist_dir(d.path.string(), Split::test); })
            .find("t10k-images-idx3-ubyte.gz nor") != std::string::npos);
  write_plain(d.file("t10k-images-idx3-ubyte"), kImages);
  write_gz(d.file("t10k-labels-idx1-ubyte.gz"), kLabels);
  CHECK(load_mnist_dir(d.path.string(), Split::test)->size() == 3);
}

TEST_CASE("Fashion-MNIST from Debian's dataset-fashion-mnist") {
  if (!fs::exists(std::string(kFashionMnistDir) + "/train-images-idx3-ubyte.gz")) {
    // tools/setup.sh installs the package; without it this test cannot say anything.
    FAIL("Fashion-MNIST is not installed at ", kFashionMnistDir, " (run tools/setup.sh)");
  }
  auto train = load_mnist_dir(kFashionMnistDir, Split::train);
  auto test = load_mnist_dir(kFashionMnistDir, Split::test);
  CHECK(train->size() == 60000);
  CHECK(test->size() == 10000);
  CHECK(train->sample_shape() == cohort::Shape{1, 28, 28});
  // Fashion-MNIST is balanced: 6000 / 1000 samples per class.
  std::vector<int> counts(10, 0), tcounts(10, 0);
  for (auto l : train->labels()) ++counts[l];
  for (auto l : test->labels()) ++tcounts[l];
  for (int c = 0; c < 10; ++c) {
    CHECK(counts[static_cast<std::size_t>(c)] == 6000);
    CHECK(tcounts[static_cast<std::size_t>(c)] == 1000);
  }
}

TEST_CASE("CIFAR-10 binary: records, channel order and errors") {
  TempDir d;
  const std::size_t rec = 3073;
  std::vector<std::uint8_t> bytes(2 * rec);
  bytes[0] = 3;
  bytes[1] = 255;          // R plane, pixel 0
  bytes[1 + 1024] = 51;    // G plane, pixel 0
  bytes[1 + 2048 + 5] = 102;  // B plane, pixel 5
  bytes[rec] = 9;
  write_plain(d.file("test_batch.bin"), bytes);
  auto ds = load_cifar10_dir(d.path.string(), Split::test);
  REQUIRE(ds->size() == 2);
  std::vector<float> px(3072);
  CHECK(ds->get(0, px.data()) == 3);
  CHECK(px[0] == 1.0f);
  CHECK(px[1024] == doctest::Approx(0.2));
  CHECK(px[2048 + 5] == doctest::Approx(0.4));
  CHECK(ds->get(1, px.data()) == 9);
  bytes.pop_back();
  write_plain(d.file("short.bin"), bytes);
  CHECK(error_of([&] { Cifar10Dataset({d.file("short.bin")}); })
            .find("has 6145 bytes, not a whole number of 3073-byte records (1 records + 3072 bytes)") !=
        std::string::npos);
  bytes.push_back(0);
  bytes[rec] = 10;
  write_plain(d.file("label.bin"), bytes);
  CHECK(error_of([&] { Cifar10Dataset({d.file("label.bin")}); }).find("record 1 has label 10") !=
        std::string::npos);
  CHECK(error_of([&] { load_cifar10_dir(d.path.string(), Split::train); })
            .find("data_batch_1.bin' cannot be opened") != std::string::npos);
}
