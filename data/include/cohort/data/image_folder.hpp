// Folders of images, one folder per class, with torchvision.datasets.ImageFolder's rules:
//
//   DIR/<class>/**/<file>        any depth below the class folder (symbolic links followed)
//
// Classes are the sub-folders of DIR sorted by name (byte order, as Python's sorted(): "Zebra"
// before "apple"); a class's index is its position. Files are taken in torchvision's order:
// folders by path, then files by name, and only files whose extension (case-insensitive) is one
// of torchvision's IMG_EXTENSIONS. Of those, .jpg, .jpeg and .png are decoded here (libjpeg-turbo,
// libpng; by content, so a PNG named .jpg works); .ppm, .bmp, .pgm, .tif, .tiff and .webp are
// refused when the folder is indexed, naming the first such file. Pixels are PIL's
// Image.open(f).convert("RGB"): grayscale replicated, alpha dropped, palettes looked up, CMYK
// converted (docs/TRAINING.md, "Your own images").
//
// Images keep their own sizes: variable_size() is true, sample_shape() is [3, 0, 0], and the
// DataLoader needs a transform that fixes the size (random_resized_crop, center_crop, resize to
// [H, W]) before batching.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "cohort/data/dataset.hpp"
#include "cohort/data/idx.hpp"

namespace cohort::data {

class ImageFolderDataset final : public Dataset {
 public:
  struct Item {
    std::string path;
    std::int64_t label;  // index into classes()
  };
  // `items` in order, each label in [0, classes.size()). Nothing is read here.
  ImageFolderDataset(std::vector<std::string> classes, std::vector<Item> items,
                     std::string description);

  std::int64_t size() const override { return static_cast<std::int64_t>(items_.size()); }
  Shape sample_shape() const override { return Shape{3, 0, 0}; }
  std::int64_t num_classes() const override { return static_cast<std::int64_t>(classes_.size()); }
  // Not used (images differ in size): throws, pointing at get_sized().
  std::int64_t get(std::int64_t index, float* out) const override;
  bool variable_size() const override { return true; }
  // Reads and decodes items()[index] into [3, H, W] floats (pixel / 255, R, G, B planes).
  // Thread-safe. A file that cannot be read, is neither a JPEG nor a PNG, or is corrupt or
  // truncated is an error naming it, its size and the decoder's message.
  std::int64_t get_sized(std::int64_t index, std::vector<float>& out, Shape& shape) const override;
  std::string describe() const override { return description_; }

  std::vector<std::string> class_names() const override { return classes_; }
  const std::vector<std::string>& classes() const { return classes_; }
  std::map<std::string, std::int64_t> class_to_idx() const;
  const std::vector<Item>& items() const { return items_; }

 private:
  std::vector<std::string> classes_;
  std::vector<Item> items_;
  std::string description_;
};

// torchvision's IMG_EXTENSIONS, lower case with the dot; and the ones decoded here.
const std::vector<std::string>& image_folder_extensions();
const std::vector<std::string>& image_folder_decoded_extensions();

// Indexes DIR (layout above). Only directory listings: images are decoded by get_sized(). Errors
// name the path at fault: DIR missing or not a folder, no class folder in it, a class folder
// with no image file (torchvision's allow_empty = false), a file of a format not decoded here.
std::shared_ptr<ImageFolderDataset> load_image_folder(const std::string& dir);
// The reference scripts' layout: ROOT/train for Split::train, ROOT/val for Split::test; both
// must hold the same classes (the same class index meaning the same thing), else an error naming
// the classes that differ.
std::shared_ptr<ImageFolderDataset> load_image_folder(const std::string& root, Split split);

}  // namespace cohort::data
