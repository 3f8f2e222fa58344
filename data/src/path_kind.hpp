// What a path names, asked with stat(2), which follows symbolic links as Python's os.walk and
// torchvision's ImageFolder do (a linked class folder counts as a folder). Internal to data/src.
#pragma once

#include <sys/stat.h>

#include <string>

namespace cohort::data::detail {

inline bool is_dir(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}
inline bool is_file(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

}  // namespace cohort::data::detail
