// TinyImageNet (CS231n's 200-class, 64x64 subset of ImageNet) from its JPEG files, decoded with
// libjpeg(-turbo). The directory layout of the official zip (tiny-imagenet-200/):
//
//   DIR/wnids.txt                          one wnid per line; class index = order of the lines
//   DIR/train/<wnid>/images/*.JPEG         500 per class in the real set
//   DIR/val/images/*.JPEG                  10000 in the real set
//   DIR/val/val_annotations.txt            "<file>\t<wnid>\t<x0>\t<y0>\t<x1>\t<y1>" per line
//
// DIR/test/ has no labels and is not read: Split::test loads DIR/val (the labelled held-out set,
// what every TinyImageNet paper reports as its test accuracy).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "cohort/data/dataset.hpp"
#include "cohort/data/idx.hpp"

namespace cohort::data {

class TinyImageNetDataset final : public Dataset {
 public:
  struct Item {
    std::string path;    // a 64x64 JPEG (RGB or grayscale)
    std::int64_t label;  // index into wnids
  };

  // `wnids` names the classes (class i = wnids[i]); `items` are the samples in order, each label
  // in [0, wnids.size()). Nothing is read here: files are decoded by get().
  TinyImageNetDataset(std::vector<std::string> wnids, std::vector<Item> items,
                      std::string description);

  std::int64_t size() const override { return static_cast<std::int64_t>(items_.size()); }
  Shape sample_shape() const override { return Shape{3, 64, 64}; }
  std::int64_t num_classes() const override { return static_cast<std::int64_t>(wnids_.size()); }
  // Reads and decodes items()[index] into [3, 64, 64] floats (pixel / 255, channels R, G, B; a
  // grayscale file gives R = G = B). Thread-safe. A file that cannot be read, is not a JPEG, is
  // corrupt or truncated (any libjpeg warning: its pixels would be partly made up), or is not
  // 64x64 (never resized here) is an error naming the file and libjpeg's message or its size.
  std::int64_t get(std::int64_t index, float* out) const override;
  std::string describe() const override { return description_; }

  const std::vector<std::string>& wnids() const { return wnids_; }
  const std::vector<Item>& items() const { return items_; }

 private:
  std::vector<std::string> wnids_;
  std::vector<Item> items_;
  std::string description_;
};

// Indexes DIR (layout above) for `split`: Split::train reads DIR/train, Split::test reads DIR/val.
// Samples are ordered by class (wnids.txt order), then by file name (byte order) within a class,
// for both splits, so the order never depends on the file system. Only the index is built here
// (directory listings; for val, one stat per listed file); images are decoded by get().
// Errors name the file or line at fault: DIR or wnids.txt missing, a duplicate wnid, a class
// whose train/<wnid>/images holds no .JPEG, a val_annotations.txt line without a wnid, with a
// wnid not in wnids.txt, repeating a file, or naming a file that does not exist.
std::shared_ptr<TinyImageNetDataset> load_tiny_imagenet_dir(const std::string& dir, Split split);

}  // namespace cohort::data
