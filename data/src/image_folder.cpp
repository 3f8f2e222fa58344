// ImageFolderDataset (image_folder.hpp): the index, in torchvision's order, and lazy decoding.
// As for TinyImageNet, files are read at each get_sized(), not kept: memory stays flat over an
// epoch and the page cache serves the second one.
#include "cohort/data/image_folder.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <filesystem>
#include <sstream>

#include "cohort/core/error.hpp"
#include "image_decode.hpp"
#include "path_kind.hpp"

namespace cohort::data {
namespace {

namespace fs = std::filesystem;

using detail::is_dir;  // follows links, as os.walk's

std::string lower_extension(const std::string& name) {
  const auto dot = name.rfind('.');
  if (dot == std::string::npos) return "";
  std::string ext = name.substr(dot);
  std::transform(ext.begin(), ext.end(), ext.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return ext;
}

bool contains(const std::vector<std::string>& v, const std::string& s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

// The sub-folders of `dir`, sorted (torchvision's find_classes: entries that are directories,
// links to directories included).
std::vector<std::string> class_folders(const std::string& dir) {
  std::vector<std::string> names;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (is_dir(dir + "/" + name)) names.push_back(name);
  }
  COHORT_CHECK(!ec, "image folder '", dir, "' cannot be listed: ", ec.message());
  std::sort(names.begin(), names.end());
  return names;
}

// Every (folder, file names) below `root` (itself included), folders sorted by path and names
// sorted within each: torchvision's sorted(os.walk(root, followlinks=True)) and sorted(fnames).
// A link cycle is cut by the folders' real paths.
void walk(const std::string& root, std::vector<std::pair<std::string, std::vector<std::string>>>& out,
          std::vector<std::string>& seen) {
  std::error_code ec;
  const std::string real = fs::canonical(root, ec).string();
  if (!ec) {
    if (contains(seen, real)) return;
    seen.push_back(real);
  }
  std::vector<std::string> files, dirs;
  for (fs::directory_iterator it(root, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (is_dir(root + "/" + name))
      dirs.push_back(name);
    else
      files.push_back(name);
  }
  COHORT_CHECK(!ec, "image folder: '", root, "' cannot be listed: ", ec.message());
  std::sort(files.begin(), files.end());
  out.emplace_back(root, std::move(files));
  for (const auto& d : dirs) walk(root + "/" + d, out, seen);
}

}  // namespace

const std::vector<std::string>& image_folder_extensions() {
  static const std::vector<std::string> v = {".jpg", ".jpeg", ".png", ".ppm", ".bmp",
                                             ".pgm", ".tif",  ".tiff", ".webp"};
  return v;
}

const std::vector<std::string>& image_folder_decoded_extensions() {
  static const std::vector<std::string> v = {".jpg", ".jpeg", ".png"};
  return v;
}

ImageFolderDataset::ImageFolderDataset(std::vector<std::string> classes, std::vector<Item> items,
                                       std::string description)
    : classes_(std::move(classes)), items_(std::move(items)),
      description_(std::move(description)) {
  COHORT_CHECK(!classes_.empty(), "ImageFolderDataset: no classes");
  for (const Item& it : items_)
    COHORT_CHECK(it.label >= 0 && it.label < num_classes(), "ImageFolderDataset: '", it.path,
                 "' has label ", it.label, ", not a class index in [0, ", num_classes(), ")");
}

std::int64_t ImageFolderDataset::get(std::int64_t, float*) const {
  COHORT_FAIL("ImageFolderDataset: images differ in size; read them with get_sized() (the "
              "DataLoader does, given a transform that fixes the size)");
}

std::int64_t ImageFolderDataset::get_sized(std::int64_t index, std::vector<float>& out,
                                           Shape& shape) const {
  COHORT_CHECK(index >= 0 && index < size(), "ImageFolderDataset: index ", index,
               " out of range [0, ", size(), ")");
  const Item& item = items_[static_cast<std::size_t>(index)];
  thread_local detail::RgbImage img;
  detail::decode_image_file(item.path, "image folder", img);
  const std::int64_t plane = img.width * img.height;
  shape = Shape{3, img.height, img.width};
  out.resize(static_cast<std::size_t>(3 * plane));
  // Interleaved bytes to planes, one channel per pass (TinyImageNet's measurement: far faster
  // than three scattered stores per pixel), through a table of v / 255 (exactly the quotient,
  // which a multiplication by 1 / 255 is not).
  static const auto table = [] {
    std::array<float, 256> t{};
    for (int v = 0; v < 256; ++v) t[static_cast<std::size_t>(v)] = static_cast<float>(v) / 255.0f;
    return t;
  }();
  for (std::int64_t c = 0; c < 3; ++c) {
    float* o = out.data() + c * plane;
    const std::uint8_t* p = img.rgb.data() + c;
    for (std::int64_t i = 0; i < plane; ++i) o[i] = table[p[i * 3]];
  }
  return item.label;
}

std::map<std::string, std::int64_t> ImageFolderDataset::class_to_idx() const {
  std::map<std::string, std::int64_t> m;
  for (std::size_t i = 0; i < classes_.size(); ++i)
    m[classes_[i]] = static_cast<std::int64_t>(i);
  return m;
}

std::shared_ptr<ImageFolderDataset> load_image_folder(const std::string& dir) {
  COHORT_CHECK(is_dir(dir), "image folder '", dir, "' does not exist or is not a folder "
               "(expected one sub-folder per class holding its images, as torchvision's "
               "ImageFolder)");
  std::vector<std::string> classes = class_folders(dir);
  COHORT_CHECK(!classes.empty(), "image folder '", dir, "' has no class folders (expected "
               "DIR/<class>/<image>, as torchvision's ImageFolder)");
  std::vector<ImageFolderDataset::Item> items;
  std::vector<std::string> empty;
  for (std::size_t c = 0; c < classes.size(); ++c) {
    std::vector<std::pair<std::string, std::vector<std::string>>> folders;
    std::vector<std::string> seen;
    walk(dir + "/" + classes[c], folders, seen);
    std::sort(folders.begin(), folders.end(),
              [](const auto& a, const auto& b) { return a.first < b.first; });
    const std::size_t before = items.size();
    for (const auto& [folder, files] : folders)
      for (const auto& f : files) {
        const std::string ext = lower_extension(f);
        if (!contains(image_folder_extensions(), ext)) continue;  // torchvision skips it too
        const std::string path = folder + "/" + f;
        COHORT_CHECK(contains(image_folder_decoded_extensions(), ext), "image folder: '", path,
                     "' is a ", ext, " file: torchvision's ImageFolder would load it, cohort "
                     "decodes .jpg, .jpeg and .png only (convert it, or move it out of '", dir,
                     "')");
        items.push_back({path, static_cast<std::int64_t>(c)});
      }
    if (items.size() == before) empty.push_back(classes[c]);
  }
  if (!empty.empty()) {
    std::string list;
    for (const auto& e : empty) list += (list.empty() ? "'" : ", '") + e + "'";
    COHORT_FAIL("image folder '", dir, "': no image file in the class folder(s) ", list,
                " (extensions read: .jpg .jpeg .png .ppm .bmp .pgm .tif .tiff .webp, any case)");
  }
  std::ostringstream os;
  os << "image folder " << dir << " (" << items.size() << " images of their own sizes, "
     << classes.size() << " classes)";
  return std::make_shared<ImageFolderDataset>(std::move(classes), std::move(items), os.str());
}

std::shared_ptr<ImageFolderDataset> load_image_folder(const std::string& root, Split split) {
  const std::string train = root + "/train", val = root + "/val";
  COHORT_CHECK(is_dir(train) && is_dir(val), "image folder root '", root, "' needs train/ and "
               "val/ (each with one folder per class), as torchvision's reference scripts read "
               "it; missing: ", is_dir(train) ? "" : "train/ ", is_dir(val) ? "" : "val/");
  const auto a = class_folders(train), b = class_folders(val);
  if (a != b) {
    std::string only_train, only_val;
    for (const auto& c : a)
      if (!contains(b, c)) only_train += " '" + c + "'";
    for (const auto& c : b)
      if (!contains(a, c)) only_val += " '" + c + "'";
    COHORT_FAIL("image folder root '", root, "': train/ and val/ hold different classes, so "
                "class indices would mean different things (only in train/:",
                only_train.empty() ? " none" : only_train, "; only in val/:",
                only_val.empty() ? " none" : only_val, ")");
  }
  return load_image_folder(split == Split::train ? train : val);
}

}  // namespace cohort::data
