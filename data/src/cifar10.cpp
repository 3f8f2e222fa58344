// Cifar10Dataset: the CIFAR-10 binary format (a label byte, then 3x32x32 bytes, per record),
// loaded whole at construction with its sizes checked, scaled to [0, 1] floats on get(); and
// load_cifar10_dir for the standard file names of the train and test splits.
#include "cohort/data/cifar10.hpp"

#include <fstream>
#include <sstream>
#include <sys/stat.h>

#include "cohort/core/error.hpp"

namespace cohort::data {
namespace {
constexpr std::size_t kRecord = 1 + 3 * 32 * 32;
}

Cifar10Dataset::Cifar10Dataset(const std::vector<std::string>& files) {
  COHORT_CHECK(!files.empty(), "Cifar10Dataset: no files given");
  for (const auto& path : files) {
    std::ifstream in(path, std::ios::binary | std::ios::ate);
    COHORT_CHECK(in.good(), "CIFAR-10 file '", path, "' cannot be opened");
    const auto size = static_cast<std::size_t>(in.tellg());
    COHORT_CHECK(size > 0 && size % kRecord == 0, "CIFAR-10 file '", path, "' has ", size,
                 " bytes, not a whole number of ", kRecord, "-byte records (",
                 size / kRecord, " records + ", size % kRecord, " bytes)");
    in.seekg(0);
    const std::size_t old = records_.size();
    records_.resize(old + size);
    in.read(reinterpret_cast<char*>(records_.data() + old), static_cast<std::streamsize>(size));
    COHORT_CHECK(in.good(), "CIFAR-10 file '", path, "': read failed");
    for (std::size_t r = 0; r < size / kRecord; ++r)
      COHORT_CHECK(records_[old + r * kRecord] < 10, "CIFAR-10 file '", path, "': record ", r,
                   " has label ", int(records_[old + r * kRecord]), " (expected 0..9)");
  }
  n_ = static_cast<std::int64_t>(records_.size() / kRecord);
  std::ostringstream os;
  os << "CIFAR-10 (" << n_ << " x [3, 32, 32]) from " << files.front()
     << (files.size() > 1 ? " and " + std::to_string(files.size() - 1) + " more" : "");
  description_ = os.str();
}

std::int64_t Cifar10Dataset::get(std::int64_t index, float* out) const {
  COHORT_CHECK(index >= 0 && index < n_, "Cifar10Dataset: index ", index, " out of range [0, ",
               n_, ")");
  const std::uint8_t* rec = records_.data() + static_cast<std::size_t>(index) * kRecord;
  for (std::size_t i = 0; i < kRecord - 1; ++i) out[i] = static_cast<float>(rec[1 + i]) / 255.0f;
  return rec[0];
}

std::shared_ptr<Cifar10Dataset> load_cifar10_dir(const std::string& dir, Split split) {
  struct stat st;
  COHORT_CHECK(::stat(dir.c_str(), &st) == 0 && S_ISDIR(st.st_mode), "CIFAR-10 directory '", dir,
               "' does not exist");
  std::vector<std::string> files;
  if (split == Split::train) {
    for (int i = 1; i <= 5; ++i) files.push_back(dir + "/data_batch_" + std::to_string(i) + ".bin");
  } else {
    files.push_back(dir + "/test_batch.bin");
  }
  return std::make_shared<Cifar10Dataset>(files);
}

}  // namespace cohort::data
