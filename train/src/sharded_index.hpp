// A sharded checkpoint's files (internal to train/; the layout is in sharded_checkpoint.hpp): the
// index read and checked, each shard file's header checked against it, element ranges read
// from whichever files hold them, and the small file-system steps of a crash-safe save.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "cohort/core/tensor.hpp"
#include "cohort/train/safetensors.hpp"

namespace cohort::train::sharded {

constexpr const char* kFormat = "cohort-sharded-checkpoint";

inline std::string shard_name(int rank, int n) {
  return "shard-" + std::to_string(rank) + "-of-" + std::to_string(n) + ".safetensors";
}

bool file_exists(const std::string& p);
// tmp file, fsync, rename.
void write_text_atomically(const std::string& path, const std::string& text);
void sync_dir(const std::string& dir);
std::string parent_of(const std::string& dir);

struct Piece {
  int file;
  std::int64_t begin, end;
};
struct TensorIndex {
  DType dtype = DType::f32;
  Shape shape;
  std::vector<Piece> pieces;
};
struct Index {
  std::string dir;
  int world_size = 0;
  int zero_stage = 0;
  double save_id = 0;
  std::vector<std::string> files;
  std::vector<std::pair<std::string, TensorIndex>> tensors;  // in the index's order
  std::map<std::string, std::string> metadata;
  const TensorIndex* find(const std::string& name) const {
    for (const auto& [k, t] : tensors)
      if (k == name) return &t;
    return nullptr;
  }
};

// DIR/index.json, parsed and checked: every tensor's pieces inside the file list, disjoint, and
// covering it exactly. Errors name the file and the tensor.
Index read_index(const std::string& dir);
// Every file's header, checked against the index: the save id, its rank, and each piece it must
// hold (name, dtype, elements).
std::vector<io::SafetensorsHeader> read_headers(const Index& x);
// Elements [begin, end) of tensor `name` into dst (end - begin elements), from whichever files
// hold them. Returns the bytes read.
std::uint64_t read_range(const Index& x, const std::vector<io::SafetensorsHeader>& headers,
                         const std::string& name, std::int64_t begin, std::int64_t end, void* dst);

}  // namespace cohort::train::sharded
