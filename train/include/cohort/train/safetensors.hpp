// safetensors files (the format of Hugging Face's safetensors library, read by
// `safetensors.torch.load_file`): an 8-byte little-endian header length N, N bytes of JSON
// {"name": {"dtype": "F32", "shape": [..], "data_offsets": [begin, end]}, ...,
//  "__metadata__": {"key": "value"}}, then the raw little-endian tensor bytes.
//
// Writes are atomic: a temporary file in the same directory, fsync, rename over the target, fsync
// of the directory. A failed or interrupted save leaves the old file untouched.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "cohort/core/device.hpp"
#include "cohort/core/tensor.hpp"

namespace cohort::io {

using NamedTensors = std::vector<std::pair<std::string, Tensor>>;

// Tensors may live on any device (they are copied to the host to be written). Names must be
// unique and non-empty; "__metadata__" is reserved.
void save_safetensors(const std::string& path, const NamedTensors& tensors,
                      const std::map<std::string, std::string>& metadata = {});

// One stored tensor, as bytes in host memory; to(device) makes a Tensor of it anywhere.
struct SafetensorsEntry {
  std::string name;
  DType dtype = DType::f32;
  Shape shape;
  std::vector<std::uint8_t> bytes;
  Tensor to(Device& device) const;
  // A copy of `t` in host memory (a blocking device-to-host copy for device tensors).
  static SafetensorsEntry of(const std::string& name, const Tensor& t);
  // The same into this entry, reusing its buffer when it has the size already (a checkpoint taken
  // every N steps copies into the previous snapshot's memory: no allocation, no page faults).
  void assign(const std::string& name, const Tensor& t);
};

// The same from tensors already copied to host memory (what a background checkpoint writes).
void save_safetensors(const std::string& path, const std::vector<SafetensorsEntry>& tensors,
                      const std::map<std::string, std::string>& metadata = {});

struct SafetensorsFile {
  std::vector<SafetensorsEntry> tensors;  // in file order (sorted by data offset)
  std::map<std::string, std::string> metadata;
  const SafetensorsEntry* find(const std::string& name) const;
};

// Validates everything before returning: header length against the file size, JSON syntax,
// known dtypes, shapes matching byte ranges, ranges inside the data section and not overlapping.
// Errors name the file and what is wrong with it.
SafetensorsFile load_safetensors(const std::string& path);

}  // namespace cohort::io
