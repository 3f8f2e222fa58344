// TinyImageNet on a small real tree the test writes (JPEGs encoded here with libjpeg's
// compressor, of flat colour blocks whose decoded values are known): labels, order, pixels,
// grayscale files, every bad tree and file the loader promises to name, and the DataLoader's
// worker threads giving the batches of a loader without them.
#include <doctest/doctest.h>

#include "../common/testing.hpp"

using cohort::testing::error_of;
using cohort::testing::TempDir;

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <jpeglib.h>

#include "tiny_imagenet_tree.hpp"

#include "cohort/data/dataloader.hpp"
#include "cohort/data/tiny_imagenet.hpp"
#include "cohort/data/transforms.hpp"
#include "cohort/devices.hpp"

namespace fs = std::filesystem;
using namespace cohort::data;

namespace {

using namespace tiny_imagenet_tree;

// Checks `out` ([3, 64, 64]) against image `id` within 2/255 (JPEG at quality 100 on flat
// blocks); a grayscale image has R = G = B = its one channel.
void check_pixels(const std::vector<float>& out, int id, bool gray) {
  int worst = 0;
  for (int c = 0; c < 3; ++c)
    for (int y = 0; y < 64; ++y)
      for (int x = 0; x < 64; ++x) {
        const int want = value(id, quadrant(y, x), gray ? 0 : c);
        const float got = out[static_cast<std::size_t>((c * 64 + y) * 64 + x)] * 255.0f;
        worst = std::max(worst, static_cast<int>(std::lround(std::abs(got - float(want)))));
      }
  CAPTURE(id);
  CHECK(worst <= 2);
}

using cohort::testing::mentions;

}  // namespace

TEST_CASE("TinyImageNet: a small tree decodes to the pixels written, in class then name order") {
  TempDir tmp("cohort_tin_good");
  const std::string dir = tmp.path.string();
  make_tree(tmp.path);

  auto train = load_tiny_imagenet_dir(dir, Split::train);
  REQUIRE(train->size() == 6);
  CHECK(train->sample_shape() == cohort::Shape{3, 64, 64});
  CHECK(train->num_classes() == 3);
  CHECK(train->wnids() == kWnids);
  CHECK(train->describe() == "TinyImageNet train (6 x [3, 64, 64], 3 classes) from " + dir);
  std::vector<float> out(3 * 64 * 64);
  for (int i = 0; i < 6; ++i) {
    const int c = i / 2, j = i % 2;  // class order, then file name order within the class
    CHECK(train->items()[static_cast<std::size_t>(i)].path ==
          dir + "/train/" + kWnids[c] + "/images/" + kWnids[c] + "_" + std::to_string(j) + ".JPEG");
    CHECK(train->get(i, out.data()) == c);
    check_pixels(out, 2 * c + j, false);
  }

  auto val = load_tiny_imagenet_dir(dir, Split::test);
  REQUIRE(val->size() == 3);
  CHECK(val->num_classes() == 3);
  CHECK(val->describe() == "TinyImageNet val (3 x [3, 64, 64], 3 classes) from " + dir);
  // Ordered by class: val_1 (class 0), val_2 (class 1), val_0 (class 2).
  CHECK(val->items()[0].path == dir + "/val/images/val_1.JPEG");
  CHECK(val->items()[1].path == dir + "/val/images/val_2.JPEG");
  CHECK(val->items()[2].path == dir + "/val/images/val_0.JPEG");
  CHECK(val->get(0, out.data()) == 0);
  check_pixels(out, 11, true);  // grayscale: R = G = B
  CHECK(val->get(1, out.data()) == 1);
  int worst = 0;  // one flat colour, chroma subsampled 4:2:0
  const int flat[3] = {200, 90, 30};
  for (int c = 0; c < 3; ++c)
    for (int p = 0; p < 64 * 64; ++p) {
      const float got = out[static_cast<std::size_t>(c * 4096 + p)] * 255.0f;
      worst = std::max(worst, static_cast<int>(std::lround(std::abs(got - float(flat[c])))));
    }
  CHECK(worst <= 2);
  CHECK(val->get(2, out.data()) == 2);
  check_pixels(out, 10, false);
  CHECK(mentions(error_of([&] { val->get(3, out.data()); }), "index 3 out of range [0, 3)"));
}

TEST_CASE("TinyImageNet: every bad tree and file is an error naming the file at fault") {
  TempDir tmp("cohort_tin_bad");
  int n = 0;
  // A fresh good tree for each case.
  auto fresh = [&] {
    const fs::path d = tmp.path / ("case" + std::to_string(n++));
    make_tree(d);
    return d;
  };
  std::vector<float> out(3 * 64 * 64);

  const std::string nowhere = (tmp.path / "nowhere").string();
  CHECK(mentions(error_of([&] { load_tiny_imagenet_dir(nowhere, Split::train); }),
                 "TinyImageNet directory '" + nowhere + "' does not exist"));
  {
    const fs::path d = fresh();
    fs::remove(d / "wnids.txt");
    CHECK(mentions(error_of([&] { load_tiny_imagenet_dir(d.string(), Split::train); }),
                   "'" + (d / "wnids.txt").string() + "' cannot be opened"));
  }
  {
    const fs::path d = fresh();
    write_text(d / "wnids.txt", kWnids[0] + "\n" + kWnids[1] + "\n" + kWnids[0] + "\n");
    CHECK(mentions(error_of([&] { load_tiny_imagenet_dir(d.string(), Split::train); }),
                   "wnids.txt' line 3: wnid '" + kWnids[0] + "' was already given at line 1"));
  }
  {
    const fs::path d = fresh();  // an empty class directory
    const fs::path images = d / "train" / kWnids[1] / "images";
    fs::remove_all(images);
    fs::create_directories(images);
    CHECK(mentions(error_of([&] { load_tiny_imagenet_dir(d.string(), Split::train); }),
                   "'" + images.string() + "' holds no .JPEG files (class 1, '" + kWnids[1] + "'"));
    fs::remove_all(d / "train" / kWnids[1]);
    CHECK(mentions(error_of([&] { load_tiny_imagenet_dir(d.string(), Split::train); }),
                   "'" + images.string() + "' does not exist (class 1"));
  }
  {
    const fs::path d = fresh();  // a wnid not in wnids.txt
    write_text(d / "val" / "val_annotations.txt",
               "val_0.JPEG\t" + kWnids[2] + "\t0\t0\t1\t1\nval_1.JPEG\tn99999999\t0\t0\t1\t1\n");
    CHECK(mentions(error_of([&] { load_tiny_imagenet_dir(d.string(), Split::test); }),
                   "val_annotations.txt' line 2: wnid 'n99999999' (of val_1.JPEG) is not in '" +
                       (d / "wnids.txt").string() + "' (3 classes)"));
  }
  {
    const fs::path d = fresh();  // a listed file that is missing
    fs::remove(d / "val" / "images" / "val_2.JPEG");
    CHECK(mentions(error_of([&] { load_tiny_imagenet_dir(d.string(), Split::test); }),
                   "'" + (d / "val" / "images" / "val_2.JPEG").string() + "', listed at '" +
                       (d / "val" / "val_annotations.txt").string() + "' line 3, does not exist"));
  }
  {
    const fs::path d = fresh();  // lines that are not annotations, a file listed twice
    write_text(d / "val" / "val_annotations.txt", "val_0.JPEG " + kWnids[2] + "\n");
    CHECK(mentions(error_of([&] { load_tiny_imagenet_dir(d.string(), Split::test); }),
                   "val_annotations.txt' line 1: 'val_0.JPEG " + kWnids[2] +
                       "' is not '<file>\\t<wnid>\\t...' (tab-separated)"));
    write_text(d / "val" / "val_annotations.txt",
               "val_0.JPEG\t" + kWnids[2] + "\n\nval_0.JPEG\t" + kWnids[1] + "\n");
    CHECK(mentions(error_of([&] { load_tiny_imagenet_dir(d.string(), Split::test); }),
                   "val_annotations.txt' line 3: 'val_0.JPEG' was already listed at line 1"));
    fs::remove(d / "val" / "val_annotations.txt");
    CHECK(mentions(error_of([&] { load_tiny_imagenet_dir(d.string(), Split::test); }),
                   "val_annotations.txt' cannot be opened"));
  }
  {
    // Files that index fine and fail at get(): the wrong size, not a JPEG, truncated, empty.
    const fs::path d = fresh();
    const fs::path imgs = d / "train" / kWnids[0] / "images";
    const fs::path f0 = imgs / (kWnids[0] + "_0.JPEG"), f1 = imgs / (kWnids[0] + "_1.JPEG");
    Bytes small;
    for (int i = 0; i < 48 * 32 * 3; ++i) small.push_back(100);
    write_file(f0, encode_jpeg(48, 32, 3, small));
    auto ds = load_tiny_imagenet_dir(d.string(), Split::train);
    CHECK(mentions(error_of([&] { ds->get(0, out.data()); }),
                   "TinyImageNet: '" + f0.string() + "' is 48x32 (width x height), not 64x64"));
    write_text(f0, "not a JPEG at all");
    CHECK(mentions(
        error_of([&] { ds->get(0, out.data()); }),
        "TinyImageNet: '" + f0.string() + "' (17 bytes) cannot be decoded: Not a JPEG file"));
    Bytes good = encode_jpeg(64, 64, 3, quadrants(0, 3));
    std::size_t sos = 0;  // cut inside the scan data, a few bytes after the SOS marker
    while (sos + 1 < good.size() && !(good[sos] == 0xFF && good[sos + 1] == 0xDA)) ++sos;
    REQUIRE(sos + 40 < good.size());
    good.resize(sos + 30);
    write_file(f0, good);
    CHECK(mentions(error_of([&] { ds->get(0, out.data()); }),
                   "TinyImageNet: '" + f0.string() + "' (" + std::to_string(good.size()) +
                       " bytes) is corrupt: Premature end of JPEG file (libjpeg"));
    write_text(f0, "");
    CHECK(mentions(error_of([&] { ds->get(0, out.data()); }), "'" + f0.string() + "' is empty"));
    fs::remove(f1);
    CHECK(mentions(error_of([&] { ds->get(1, out.data()); }),
                   "'" + f1.string() + "' cannot be opened"));
    // Through a loader with workers: the first failing sample of the batch, in row order.
    DataLoaderOptions o;
    o.batch_size = 6;
    o.num_workers = 2;
    DataLoader loader(ds, o, {}, cohort::host_device());
    Batch b;
    CHECK(mentions(error_of([&] { loader.next(b); }), "'" + f0.string() + "' is empty"));
  }
}

TEST_CASE("TinyImageNet through the DataLoader: num_workers = 2 gives the batches of 0") {
  TempDir tmp("cohort_tin_loader");
  make_tree(tmp.path);
  auto ds = load_tiny_imagenet_dir(tmp.path.string(), Split::train);
  const std::vector<TransformPtr> tf = {random_crop(56, 4), random_horizontal_flip(),
                                        normalize({0.48f, 0.45f, 0.40f}, {0.27f, 0.26f, 0.28f})};
  auto run = [&](int workers, bool prefetch) {
    DataLoaderOptions o;
    o.batch_size = 4;  // 2 batches, the last of 2 rows
    o.shuffle = true;
    o.seed = 5;
    o.num_workers = workers;
    o.prefetch = prefetch;
    DataLoader loader(ds, o, tf, cohort::host_device());
    std::vector<std::vector<float>> images;
    std::vector<std::vector<std::int64_t>> labels;
    for (std::int64_t e = 0; e < 2; ++e) {
      loader.set_epoch(e);
      for (const Batch& b : loader) {
        CHECK(b.images.shape()[1] == 3);
        CHECK(b.images.shape()[2] == 56);
        images.push_back(b.images.to_vector<float>());
        labels.push_back(b.labels.to_vector<std::int64_t>());
      }
    }
    return std::make_pair(images, labels);
  };
  const auto want = run(0, true);
  REQUIRE(want.first.size() == 4);
  CHECK(run(2, true) == want);
  CHECK(run(2, false) == want);
  CHECK(run(0, false) == want);
}
