// IDX reading with full validation. The whole file is decompressed into memory (Fashion-MNIST's
// training images are 47 MB) and validated before any sample is served, so a bad file fails at
// load time with the file named, never mid-training.
#include "cohort/data/idx.hpp"

#include <sys/stat.h>
#include <zlib.h>

#include <sstream>

#include "cohort/core/error.hpp"

namespace cohort::data {
namespace {

bool file_exists(const std::string& p) {
  struct stat st;
  return ::stat(p.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

// gzread reads gzip and plain files alike.
std::vector<std::uint8_t> read_all(const std::string& path) {
  COHORT_CHECK(file_exists(path), "data file '", path, "' does not exist");
  gzFile f = gzopen(path.c_str(), "rb");
  COHORT_CHECK(f != nullptr, "cannot open data file '", path, "'");
  std::vector<std::uint8_t> out;
  std::uint8_t buf[1 << 16];
  for (;;) {
    const int got = gzread(f, buf, sizeof buf);
    if (got < 0) {
      int errnum = 0;
      const std::string msg = gzerror(f, &errnum);
      gzclose(f);
      COHORT_FAIL("data file '", path, "' is corrupt: ", msg, " after ", out.size(),
                  " decompressed bytes");
    }
    if (got == 0) break;
    out.insert(out.end(), buf, buf + got);
  }
  // gzclose reports a truncated gzip stream that gzread treated as end of file.
  const int rc = gzclose(f);
  COHORT_CHECK(rc == Z_OK, "data file '", path, "' is corrupt or truncated (gzip stream ended ",
               "early after ", out.size(), " decompressed bytes, zlib status ", rc, ")");
  return out;
}

std::uint32_t be32(const std::uint8_t* p) {
  return (std::uint32_t(p[0]) << 24) | (std::uint32_t(p[1]) << 16) | (std::uint32_t(p[2]) << 8) |
         std::uint32_t(p[3]);
}

std::string dims_str(const std::vector<std::int64_t>& d) {
  std::ostringstream os;
  for (std::size_t i = 0; i < d.size(); ++i) os << (i ? "x" : "") << d[i];
  return os.str();
}

}  // namespace

IdxArray read_idx(const std::string& path) {
  std::vector<std::uint8_t> bytes = read_all(path);
  COHORT_CHECK(bytes.size() >= 4, "IDX file '", path, "' is too short for a header: ", bytes.size(),
               " bytes");
  COHORT_CHECK(bytes[0] == 0 && bytes[1] == 0, "IDX file '", path, "' has a bad magic number 0x",
               std::hex, be32(bytes.data()), " (expected 0x0000TTNN)");
  COHORT_CHECK(bytes[2] == 0x08, "IDX file '", path, "' has element type 0x", std::hex,
               int(bytes[2]), ", only unsigned byte (0x08) is supported");
  const int ndim = bytes[3];
  COHORT_CHECK(ndim >= 1 && ndim <= 4, "IDX file '", path, "' claims ", ndim, " dimensions");
  const std::size_t header = 4 + 4 * static_cast<std::size_t>(ndim);
  COHORT_CHECK(bytes.size() >= header, "IDX file '", path, "' is truncated in its header: ",
               bytes.size(), " bytes, header needs ", header);
  IdxArray a;
  std::int64_t total = 1;
  bool overflow = false;  // dims whose product does not fit (a corrupt or hostile header)
  for (int i = 0; i < ndim; ++i) {
    const std::int64_t d = be32(bytes.data() + 4 + 4 * i);
    a.dims.push_back(d);
    overflow = overflow || __builtin_mul_overflow(total, d, &total) || total > (1LL << 62);
  }
  COHORT_CHECK(!overflow, "IDX file '", path, "' is corrupt: its header claims ",
               dims_str(a.dims), " values, more than any file holds (", bytes.size(),
               " bytes here)");
  const std::size_t expected = header + static_cast<std::size_t>(total);
  COHORT_CHECK(bytes.size() >= expected, "IDX file '", path, "' is truncated: expected ", expected,
               " bytes (header ", header, " + ", dims_str(a.dims), "), found ", bytes.size());
  COHORT_CHECK(bytes.size() == expected, "IDX file '", path, "' has ", bytes.size() - expected,
               " unexpected trailing bytes: expected ", expected, " bytes (header ", header, " + ",
               dims_str(a.dims), "), found ", bytes.size());
  a.values.assign(bytes.begin() + static_cast<std::ptrdiff_t>(header), bytes.end());
  return a;
}

IdxDataset::IdxDataset(const std::string& images_path, const std::string& labels_path,
                       std::int64_t num_classes, std::string label)
    : classes_(num_classes) {
  COHORT_CHECK(num_classes >= 1 && num_classes <= 256, "IdxDataset: num_classes ", num_classes,
               " out of range [1, 256]");
  IdxArray images = read_idx(images_path);
  IdxArray labels = read_idx(labels_path);
  COHORT_CHECK(images.dims.size() == 3, "IDX image file '", images_path,
               "' must have 3 dimensions [N, H, W], has ", images.dims.size());
  COHORT_CHECK(labels.dims.size() == 1, "IDX label file '", labels_path,
               "' must have 1 dimension [N], has ", labels.dims.size());
  COHORT_CHECK(images.dims[0] == labels.dims[0], "IDX files disagree on the sample count: '",
               images_path, "' has ", images.dims[0], " images, '", labels_path, "' has ",
               labels.dims[0], " labels");
  for (std::size_t i = 0; i < labels.values.size(); ++i)
    COHORT_CHECK(labels.values[i] < num_classes, "IDX label file '", labels_path, "': label ",
                 int(labels.values[i]), " of sample ", i, " is not below ", num_classes);
  n_ = images.dims[0];
  h_ = images.dims[1];
  w_ = images.dims[2];
  images_ = std::move(images.values);
  labels_ = std::move(labels.values);
  std::ostringstream os;
  os << label << " (" << n_ << " x [1, " << h_ << ", " << w_ << "]) from " << images_path;
  description_ = os.str();
}

std::int64_t IdxDataset::get(std::int64_t index, float* out) const {
  COHORT_CHECK(index >= 0 && index < n_, "IdxDataset: index ", index, " out of range [0, ", n_, ")");
  const std::size_t px = static_cast<std::size_t>(h_ * w_);
  const std::uint8_t* src = images_.data() + static_cast<std::size_t>(index) * px;
  for (std::size_t i = 0; i < px; ++i) out[i] = static_cast<float>(src[i]) * (1.0f / 255.0f);
  return labels_[static_cast<std::size_t>(index)];
}

std::shared_ptr<IdxDataset> load_mnist_dir(const std::string& dir, Split split) {
  struct stat st;
  COHORT_CHECK(::stat(dir.c_str(), &st) == 0 && S_ISDIR(st.st_mode), "data directory '", dir,
               "' does not exist (Fashion-MNIST: apt-get install dataset-fashion-mnist, then ",
               kFashionMnistDir, ")");
  const std::string prefix = split == Split::train ? "train" : "t10k";
  auto find = [&](const std::string& kind) {
    const std::string base = dir + "/" + prefix + "-" + kind + "-ubyte";
    if (file_exists(base + ".gz")) return base + ".gz";
    if (file_exists(base)) return base;
    COHORT_FAIL("data directory '", dir, "' has neither ", base, ".gz nor ", base);
  };
  const std::string label = std::string(split == Split::train ? "train" : "test") + " split";
  const std::string images = find("images-idx3");  // images first: errors name them first
  const std::string labels = find("labels-idx1");
  return std::make_shared<IdxDataset>(images, labels, 10, label);
}

}  // namespace cohort::data
