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
#include <memory>
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

// A safetensors file written one tensor at a time, memory bounded by what the caller hands over
// (a consolidated sharded checkpoint streams one tensor at a time): the header (names, dtypes,
// shapes) is written first, then each tensor's bytes in the header's order, in pieces of any
// size. Atomic as save_safetensors: commit() fsyncs and renames into place; a writer destroyed
// before commit(), or one that failed, removes its temporary file.
class SafetensorsStreamWriter {
 public:
  struct Spec {
    std::string name;
    DType dtype = DType::f32;
    Shape shape;
  };
  SafetensorsStreamWriter(const std::string& path, const std::vector<Spec>& tensors,
                          const std::map<std::string, std::string>& metadata = {});
  ~SafetensorsStreamWriter();
  SafetensorsStreamWriter(const SafetensorsStreamWriter&) = delete;
  SafetensorsStreamWriter& operator=(const SafetensorsStreamWriter&) = delete;
  void write(const void* bytes, std::size_t n);  // the next bytes, in tensor order
  void commit();                                 // every tensor written whole

 private:
  struct File;
  std::unique_ptr<File> f_;
};

// A safetensors file's header alone: each tensor's dtype, shape and where its bytes lie, for
// reading parts of tensors (a sharded checkpoint's load reads only the ranges a rank needs).
// Validated as load_safetensors validates.
struct SafetensorsHeader {
  struct Info {
    std::string name;
    DType dtype = DType::f32;
    Shape shape;
    std::uint64_t offset = 0;  // in the file
    std::uint64_t bytes = 0;
  };
  std::string path;
  std::vector<Info> tensors;  // in file order
  std::map<std::string, std::string> metadata;
  const Info* find(const std::string& name) const;
};
SafetensorsHeader read_safetensors_header(const std::string& path);
// `bytes` bytes at file offset `offset` of `path` into `dst`; a short file is an error naming it.
void read_file_bytes(const std::string& path, std::uint64_t offset, std::size_t bytes, void* dst);

// Validates everything before returning: header length against the file size, JSON syntax,
// known dtypes, shapes matching byte ranges, ranges inside the data section and not overlapping.
// Errors name the file and what is wrong with it.
SafetensorsFile load_safetensors(const std::string& path);

}  // namespace cohort::io
