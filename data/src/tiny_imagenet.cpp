// TinyImageNet: the directory index (load_tiny_imagenet_dir) and lazy JPEG decoding (get()).
//
// Files are read from disk at each get(), not kept in memory. Keeping them would cost ~250 MB
// for the real set (100000 files of ~2 KB) and 100000 open/read calls before the first batch;
// read lazily, one open and one small read sit next to a decode that costs several times more
// (get() takes ~55 us per 64x64 image on the 2-core development VM, ~10% of it in the kernel),
// memory stays flat, and from the second epoch on the reads hit the page cache. The price: a
// file removed after indexing shows up at get(), as an error naming it.
#include "cohort/data/tiny_imagenet.hpp"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>


#include "cohort/core/error.hpp"
#include "image_decode.hpp"
#include "path_kind.hpp"

namespace cohort::data {
namespace {

constexpr int kSide = 64;

// ---- the index ----

using detail::is_dir;
using detail::is_file;

// Without leading and trailing blanks (and the '\r' of a file written on Windows).
std::string trim(const std::string& s) {
  const auto b = s.find_first_not_of(" \t\r\n");
  if (b == std::string::npos) return "";
  return s.substr(b, s.find_last_not_of(" \t\r\n") - b + 1);
}

bool is_jpeg_name(const std::string& name) {
  const auto dot = name.rfind('.');
  if (dot == std::string::npos) return false;
  std::string ext = name.substr(dot + 1);
  std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) {
    return static_cast<char>(std::tolower(c));
  });
  return ext == "jpeg" || ext == "jpg";
}

// The non-empty lines of DIR/wnids.txt, each a wnid once.
std::vector<std::string> read_wnids(const std::string& dir) {
  const std::string path = dir + "/wnids.txt";
  std::ifstream in(path);
  COHORT_CHECK(in.good(), "TinyImageNet: '", path, "' cannot be opened (expected one wnid per "
               "line, e.g. n01443537; the class index is the line order)");
  std::vector<std::string> wnids;
  std::map<std::string, int> line_of;
  std::string line;
  for (int no = 1; std::getline(in, line); ++no) {
    const std::string w = trim(line);
    if (w.empty()) continue;
    COHORT_CHECK(w.find_first_of(" \t/") == std::string::npos, "TinyImageNet: '", path,
                 "' line ", no, ": '", w, "' is not a wnid (one per line, no blanks or '/')");
    const auto [it, fresh] = line_of.emplace(w, no);
    COHORT_CHECK(fresh, "TinyImageNet: '", path, "' line ", no, ": wnid '", w,
                 "' was already given at line ", it->second);
    wnids.push_back(w);
  }
  COHORT_CHECK(!wnids.empty(), "TinyImageNet: '", path, "' lists no wnids");
  return wnids;
}

// The .JPEG file names in `images_dir`, sorted.
std::vector<std::string> jpeg_names(const std::string& images_dir) {
  std::vector<std::string> names;
  std::error_code ec;
  for (std::filesystem::directory_iterator it(images_dir, ec), end; !ec && it != end;
       it.increment(ec)) {
    const std::string name = it->path().filename().string();
    std::error_code type_ec;  // a file that vanished meanwhile is simply not listed
    if (is_jpeg_name(name) && it->is_regular_file(type_ec)) names.push_back(name);
  }
  COHORT_CHECK(!ec, "TinyImageNet: listing '", images_dir, "' failed: ", ec.message());
  std::sort(names.begin(), names.end());
  return names;
}

std::vector<TinyImageNetDataset::Item> index_train(const std::string& dir,
                                                   const std::vector<std::string>& wnids) {
  std::vector<TinyImageNetDataset::Item> items;
  for (std::size_t c = 0; c < wnids.size(); ++c) {
    const std::string images = dir + "/train/" + wnids[c] + "/images";
    COHORT_CHECK(is_dir(images), "TinyImageNet: '", images, "' does not exist (class ", c, ", '",
                 wnids[c], "' of '", dir, "/wnids.txt')");
    const auto names = jpeg_names(images);
    COHORT_CHECK(!names.empty(), "TinyImageNet: '", images, "' holds no .JPEG files (class ", c,
                 ", '", wnids[c], "' of '", dir, "/wnids.txt')");
    for (const auto& n : names)
      items.push_back({images + "/" + n, static_cast<std::int64_t>(c)});
  }
  return items;
}

std::vector<TinyImageNetDataset::Item> index_val(const std::string& dir,
                                                 const std::vector<std::string>& wnids) {
  const std::string path = dir + "/val/val_annotations.txt";
  std::ifstream in(path);
  COHORT_CHECK(in.good(), "TinyImageNet: '", path, "' cannot be opened (the val split's labels: "
               "'<file>\\t<wnid>\\t<box>' per line)");
  std::map<std::string, std::int64_t> class_of;
  for (std::size_t c = 0; c < wnids.size(); ++c) class_of[wnids[c]] = static_cast<std::int64_t>(c);
  struct Listed {
    std::int64_t label;
    std::string name;
    bool operator<(const Listed& o) const {
      return label != o.label ? label < o.label : name < o.name;
    }
  };
  std::vector<Listed> listed;
  std::map<std::string, int> line_of;
  std::string line;
  for (int no = 1; std::getline(in, line); ++no) {
    if (trim(line).empty()) continue;
    // Fields: file name, wnid, then the bounding box (not used here).
    std::vector<std::string> fields;
    std::istringstream ls(line);
    for (std::string f; std::getline(ls, f, '\t');) fields.push_back(trim(f));
    COHORT_CHECK(fields.size() >= 2 && !fields[0].empty() && !fields[1].empty(),
                 "TinyImageNet: '", path, "' line ", no, ": '", trim(line),
                 "' is not '<file>\\t<wnid>\\t...' (tab-separated)");
    const std::string& name = fields[0];
    const std::string& wnid = fields[1];
    const auto cls = class_of.find(wnid);
    COHORT_CHECK(cls != class_of.end(), "TinyImageNet: '", path, "' line ", no, ": wnid '", wnid,
                 "' (of ", name, ") is not in '", dir, "/wnids.txt' (", wnids.size(),
                 " classes)");
    const auto [it, fresh] = line_of.emplace(name, no);
    COHORT_CHECK(fresh, "TinyImageNet: '", path, "' line ", no, ": '", name,
                 "' was already listed at line ", it->second);
    const std::string file = dir + "/val/images/" + name;
    COHORT_CHECK(is_file(file), "TinyImageNet: '", file, "', listed at '", path, "' line ", no,
                 ", does not exist");
    listed.push_back({cls->second, name});
  }
  COHORT_CHECK(!listed.empty(), "TinyImageNet: '", path, "' lists no images");
  std::sort(listed.begin(), listed.end());
  std::vector<TinyImageNetDataset::Item> items;
  items.reserve(listed.size());
  for (const auto& l : listed) items.push_back({dir + "/val/images/" + l.name, l.label});
  return items;
}

}  // namespace

TinyImageNetDataset::TinyImageNetDataset(std::vector<std::string> wnids, std::vector<Item> items,
                                         std::string description)
    : wnids_(std::move(wnids)), items_(std::move(items)), description_(std::move(description)) {
  COHORT_CHECK(!wnids_.empty(), "TinyImageNetDataset: no classes given");
  COHORT_CHECK(!items_.empty(), "TinyImageNetDataset: no images given (", description_, ")");
  for (const auto& it : items_)
    COHORT_CHECK(it.label >= 0 && it.label < num_classes(), "TinyImageNetDataset: '", it.path,
                 "' has label ", it.label, ", not a class index in [0, ", num_classes(), ")");
}

std::int64_t TinyImageNetDataset::get(std::int64_t index, float* out) const {
  COHORT_CHECK(index >= 0 && index < size(), "TinyImageNetDataset: index ", index,
               " out of range [0, ", size(), ")");
  const Item& item = items_[static_cast<std::size_t>(index)];
  const std::vector<unsigned char> bytes = detail::read_whole_file(item.path, "TinyImageNet");
  thread_local detail::RgbImage img;
  const detail::DecodeResult r =
      detail::decode_jpeg(bytes.data(), bytes.size(), img, kSide, kSide);
  switch (r.status) {
    case detail::DecodeStatus::ok:
      break;
    case detail::DecodeStatus::error:
      COHORT_FAIL("TinyImageNet: '", item.path, "' (", bytes.size(),
                  " bytes) cannot be decoded: ", r.message, " (libjpeg)");
    case detail::DecodeStatus::corrupt:
      COHORT_FAIL("TinyImageNet: '", item.path, "' (", bytes.size(), " bytes) is corrupt: ",
                  r.message, " (libjpeg", r.more_warnings > 0 ? ", and more warnings" : "", ")");
    case detail::DecodeStatus::wrong_size:
      COHORT_FAIL("TinyImageNet: '", item.path, "' is ", img.width, "x", img.height,
                  " (width x height), not ", kSide, "x", kSide,
                  "; images are not resized here: resize the data set beforehand");
  }
  const unsigned char* rgb = img.rgb.data();
  // Interleaved bytes to planes, one channel at a time, in a pass of its own: done inside the
  // scanline loop (three stores 16 KB apart per pixel) the conversion took half of the loader's
  // time, and the loader ran at 7000 instead of 9000 to 14000 images/s with num_workers = 0.
  constexpr int plane = kSide * kSide;
  for (int c = 0; c < 3; ++c)
    for (int i = 0; i < plane; ++i)
      out[c * plane + i] = static_cast<float>(rgb[i * 3 + c]) / 255.0f;
  return item.label;
}

std::shared_ptr<TinyImageNetDataset> load_tiny_imagenet_dir(const std::string& dir, Split split) {
  COHORT_CHECK(is_dir(dir), "TinyImageNet directory '", dir, "' does not exist (expected "
               "wnids.txt, train/<wnid>/images/*.JPEG, val/images/*.JPEG and "
               "val/val_annotations.txt: the tiny-imagenet-200 folder of the official zip)");
  auto wnids = read_wnids(dir);
  auto items = split == Split::train ? index_train(dir, wnids) : index_val(dir, wnids);
  std::ostringstream os;
  os << "TinyImageNet " << (split == Split::train ? "train" : "val") << " (" << items.size()
     << " x [3, " << kSide << ", " << kSide << "], " << wnids.size() << " classes) from " << dir;
  return std::make_shared<TinyImageNetDataset>(std::move(wnids), std::move(items), os.str());
}

}  // namespace cohort::data
