// safetensors reading and writing (see safetensors.hpp). Writes go to a temporary file that is
// fsynced and renamed; reads check the header (its length, dtypes, shapes and offsets) against the
// file's size, so a truncated or corrupt file is an error naming the file, not a crash.
#include "cohort/train/safetensors.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>

#include "cohort/core/error.hpp"

namespace cohort::io {
namespace {

const char* st_dtype(DType dt) {
  switch (dt) {
    case DType::f32: return "F32";
    case DType::f64: return "F64";
    case DType::bf16: return "BF16";
    case DType::f16: return "F16";
    case DType::i32: return "I32";
    case DType::i64: return "I64";
    case DType::u8: return "U8";
  }
  return "?";
}

bool parse_dtype(const std::string& s, DType* dt) {
  for (DType d :
       {DType::f32, DType::f64, DType::bf16, DType::f16, DType::i32, DType::i64, DType::u8})
    if (s == st_dtype(d)) {
      *dt = d;
      return true;
    }
  return false;
}

void write_all(int fd, const void* data, std::size_t n, const std::string& path) {
  const char* p = static_cast<const char*>(data);
  while (n > 0) {
    const ssize_t w = ::write(fd, p, n);
    if (w < 0 && errno == EINTR) continue;
    COHORT_CHECK(w > 0, "writing '", path, "' failed: ", std::strerror(errno));
    p += w;
    n -= static_cast<std::size_t>(w);
  }
}

std::string dir_of(const std::string& path) {
  const auto slash = path.rfind('/');
  return slash == std::string::npos ? "." : (slash == 0 ? "/" : path.substr(0, slash));
}

}  // namespace

const SafetensorsEntry* SafetensorsFile::find(const std::string& name) const {
  for (const auto& e : tensors)
    if (e.name == name) return &e;
  return nullptr;
}

Tensor SafetensorsEntry::to(Device& device) const {
  Tensor t = Tensor::empty(shape, dtype, device);
  detail::copy_host_to_tensor(t, bytes.data(), bytes.size());
  return t;
}

SafetensorsEntry SafetensorsEntry::of(const std::string& name, const Tensor& t) {
  SafetensorsEntry e;
  e.assign(name, t);
  return e;
}

void SafetensorsEntry::assign(const std::string& tensor_name, const Tensor& t) {
  COHORT_CHECK(t.defined(), "safetensors: tensor '", tensor_name, "' is undefined");
  name = tensor_name;
  dtype = t.dtype();
  shape = t.shape();
  bytes.resize(t.nbytes());
  if (!bytes.empty()) detail::copy_tensor_to_host(t, bytes.data(), bytes.size());
}

void save_safetensors(const std::string& path, const NamedTensors& tensors,
                      const std::map<std::string, std::string>& metadata) {
  std::vector<SafetensorsEntry> entries;
  entries.reserve(tensors.size());
  for (const auto& [name, t] : tensors) {
    COHORT_CHECK(t.defined(), "save_safetensors('", path, "'): tensor '", name, "' is undefined",
                 t.shape().rank() > 0 ? " (its " + t.shape().str() +
                                            " value lives elsewhere: a ZeRO "
                                            "stage 3 parameter between uses?)"
                                      : std::string());
    entries.push_back(SafetensorsEntry::of(name, t));
  }
  save_safetensors(path, entries, metadata);
}

struct SafetensorsStreamWriter::File {
  std::string path, tmp;
  int fd = -1;
  std::vector<std::uint64_t> sizes;  // bytes of each tensor, in order
  std::size_t next = 0;              // the tensor being written
  std::uint64_t written = 0;         // of it
  void fail_cleanup() {
    if (fd >= 0) ::close(fd);
    fd = -1;
    ::unlink(tmp.c_str());
  }
};

SafetensorsStreamWriter::SafetensorsStreamWriter(const std::string& path,
                                                 const std::vector<Spec>& tensors,
                                                 const std::map<std::string, std::string>& metadata)
    : f_(std::make_unique<File>()) {
  nlohmann::ordered_json header = nlohmann::ordered_json::object();
  if (!metadata.empty()) header["__metadata__"] = metadata;
  std::set<std::string> names;
  std::uint64_t offset = 0;
  for (const auto& e : tensors) {
    const std::string& name = e.name;
    COHORT_CHECK(!name.empty() && name != "__metadata__", "save_safetensors('", path,
                 "'): invalid tensor name '", name, "'");
    COHORT_CHECK(names.insert(name).second, "save_safetensors('", path, "'): tensor name '", name,
                 "' appears twice");
    const std::uint64_t n = static_cast<std::uint64_t>(e.shape.numel()) * dtype_size(e.dtype);
    header[name] = {{"dtype", st_dtype(e.dtype)},
                    {"shape", e.shape.dims()},
                    {"data_offsets", {offset, offset + n}}};
    offset += n;
    f_->sizes.push_back(n);
  }
  std::string h = header.dump();
  // Pad the header with spaces so the data section starts 8-byte aligned, as the reference
  // implementation does.
  while ((8 + h.size()) % 8 != 0) h += ' ';
  const std::uint64_t hlen = h.size();
  unsigned char lenbytes[8];
  for (int i = 0; i < 8; ++i) lenbytes[i] = static_cast<unsigned char>(hlen >> (8 * i));

  f_->path = path;
  f_->tmp = path + ".tmp." + std::to_string(::getpid());
  f_->fd = ::open(f_->tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  COHORT_CHECK(f_->fd >= 0, "cannot create '", f_->tmp, "' to save '", path,
               "': ", std::strerror(errno));
  try {
    write_all(f_->fd, lenbytes, 8, f_->tmp);
    write_all(f_->fd, h.data(), h.size(), f_->tmp);
  } catch (...) {
    f_->fail_cleanup();
    throw;
  }
  while (f_->next < f_->sizes.size() && f_->sizes[f_->next] == 0) ++f_->next;
}

SafetensorsStreamWriter::~SafetensorsStreamWriter() {
  if (f_ && f_->fd >= 0) f_->fail_cleanup();
}

void SafetensorsStreamWriter::write(const void* bytes, std::size_t n) {
  COHORT_CHECK(f_->fd >= 0, "SafetensorsStreamWriter('", f_->path,
               "'): written after commit or "
               "a failed write");
  COHORT_CHECK(f_->next < f_->sizes.size() && n <= f_->sizes[f_->next] - f_->written,
               "SafetensorsStreamWriter('", f_->path, "'): ", n, " bytes more than the header's ",
               "tensors hold");
  try {
    write_all(f_->fd, bytes, n, f_->tmp);
  } catch (...) {
    f_->fail_cleanup();
    throw;
  }
  f_->written += n;
  if (f_->written == f_->sizes[f_->next]) {
    f_->written = 0;
    ++f_->next;
    while (f_->next < f_->sizes.size() && f_->sizes[f_->next] == 0) ++f_->next;
  }
}

void SafetensorsStreamWriter::commit() {
  COHORT_CHECK(f_->fd >= 0, "SafetensorsStreamWriter('", f_->path, "'): committed twice");
  if (f_->next != f_->sizes.size()) {
    f_->fail_cleanup();
    COHORT_FAIL("SafetensorsStreamWriter('", f_->path, "'): committed with tensor ", f_->next,
                " of ", f_->sizes.size(), " not written whole");
  }
  if (::fsync(f_->fd) != 0) {
    const std::string why = std::strerror(errno);
    f_->fail_cleanup();
    COHORT_FAIL("fsync of '", f_->tmp, "' failed: ", why);
  }
  ::close(f_->fd);
  f_->fd = -1;
  if (::rename(f_->tmp.c_str(), f_->path.c_str()) != 0) {
    const std::string why = std::strerror(errno);
    ::unlink(f_->tmp.c_str());
    COHORT_FAIL("cannot move '", f_->tmp, "' over '", f_->path, "': ", why);
  }
  const int dfd = ::open(dir_of(f_->path).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {  // make the rename itself durable
    ::fsync(dfd);
    ::close(dfd);
  }
}

void save_safetensors(const std::string& path, const std::vector<SafetensorsEntry>& tensors,
                      const std::map<std::string, std::string>& metadata) {
  std::vector<SafetensorsStreamWriter::Spec> specs;
  for (const auto& e : tensors) {
    COHORT_CHECK(e.bytes.size() == static_cast<std::size_t>(e.shape.numel()) * dtype_size(e.dtype),
                 "save_safetensors('", path, "'): tensor '", e.name, "' has ", e.bytes.size(),
                 " bytes for shape ", e.shape.str());
    specs.push_back({e.name, e.dtype, e.shape});
  }
  SafetensorsStreamWriter w(path, specs, metadata);
  for (const auto& e : tensors)
    if (!e.bytes.empty()) w.write(e.bytes.data(), e.bytes.size());
  w.commit();
}

const SafetensorsHeader::Info* SafetensorsHeader::find(const std::string& name) const {
  for (const auto& e : tensors)
    if (e.name == name) return &e;
  return nullptr;
}

void read_file_bytes(const std::string& path, std::uint64_t offset, std::size_t bytes, void* dst) {
  if (bytes == 0) return;
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  COHORT_CHECK(fd >= 0, "cannot open '", path, "': ", std::strerror(errno));
  char* p = static_cast<char*>(dst);
  std::size_t left = bytes;
  while (left > 0) {
    const ssize_t r = ::pread(fd, p, left, static_cast<off_t>(offset + (bytes - left)));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) {
      const std::string why = r == 0 ? "the file ends first" : std::strerror(errno);
      ::close(fd);
      COHORT_FAIL("reading ", bytes, " bytes at offset ", offset, " of '", path, "' failed: ", why,
                  " (truncated?)");
    }
    p += r;
    left -= static_cast<std::size_t>(r);
  }
  ::close(fd);
}

SafetensorsHeader read_safetensors_header(const std::string& path) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  COHORT_CHECK(in.good(), "cannot open safetensors file '", path, "'");
  const auto size = static_cast<std::uint64_t>(in.tellg());
  in.seekg(0);
  COHORT_CHECK(size >= 8, "safetensors file '", path, "' is truncated: ", size,
               " bytes, not even the 8-byte header length");
  unsigned char lenbytes[8];
  in.read(reinterpret_cast<char*>(lenbytes), 8);
  std::uint64_t hlen = 0;
  for (int i = 0; i < 8; ++i) hlen |= static_cast<std::uint64_t>(lenbytes[i]) << (8 * i);
  COHORT_CHECK(hlen <= size - 8, "safetensors file '", path, "' is truncated or corrupt: header ",
               "length ", hlen, " but only ", size - 8, " bytes follow");
  std::string h(hlen, '\0');
  in.read(h.data(), static_cast<std::streamsize>(hlen));
  COHORT_CHECK(in.good(), "reading safetensors file '", path, "' failed");
  nlohmann::json header;
  try {
    header = nlohmann::json::parse(h);
  } catch (const std::exception& e) {
    COHORT_FAIL("safetensors file '", path, "' has a corrupt JSON header: ", e.what());
  }
  COHORT_CHECK(header.is_object(), "safetensors file '", path, "': header is not a JSON object");
  const std::uint64_t data_size = size - 8 - hlen;

  SafetensorsHeader out;
  out.path = path;
  for (auto it = header.begin(); it != header.end(); ++it) {
    if (it.key() == "__metadata__") {
      COHORT_CHECK(it->is_object(), "safetensors file '", path, "': __metadata__ is not an object");
      for (auto m = it->begin(); m != it->end(); ++m) {
        COHORT_CHECK(m->is_string(), "safetensors file '", path, "': metadata '", m.key(),
                     "' is not a string");
        out.metadata[m.key()] = m->get<std::string>();
      }
      continue;
    }
    const auto& v = *it;
    SafetensorsHeader::Info e;
    e.name = it.key();
    COHORT_CHECK(v.is_object() && v.contains("dtype") && v.contains("shape") &&
                     v.contains("data_offsets") && v["dtype"].is_string() &&
                     v["shape"].is_array() && v["data_offsets"].is_array() &&
                     v["data_offsets"].size() == 2,
                 "safetensors file '", path, "': entry '", e.name, "' is malformed: ", v.dump());
    COHORT_CHECK(parse_dtype(v["dtype"].get<std::string>(), &e.dtype), "safetensors file '", path,
                 "': tensor '", e.name, "' has unsupported dtype ", v["dtype"].dump());
    std::uint64_t numel = 1;
    std::vector<std::int64_t> dims;
    for (const auto& d : v["shape"]) {
      COHORT_CHECK(d.is_number_unsigned(), "safetensors file '", path, "': tensor '", e.name,
                   "' has a bad shape ", v["shape"].dump());
      dims.push_back(d.get<std::int64_t>());
      numel *= d.get<std::uint64_t>();
    }
    e.shape = Shape(dims);
    const auto begin = v["data_offsets"][0].get<std::uint64_t>();
    const auto end = v["data_offsets"][1].get<std::uint64_t>();
    COHORT_CHECK(begin <= end && end <= data_size, "safetensors file '", path,
                 "' is truncated or corrupt: tensor '", e.name, "' spans bytes [", begin, ", ", end,
                 ") of a ", data_size, "-byte data section");
    COHORT_CHECK(end - begin == numel * dtype_size(e.dtype), "safetensors file '", path,
                 "': tensor '", e.name, "' of shape ", e.shape.str(), " ", dtype_name(e.dtype),
                 " needs ", numel * dtype_size(e.dtype), " bytes but spans ", end - begin);
    e.offset = 8 + hlen + begin;
    e.bytes = end - begin;
    out.tensors.push_back(std::move(e));
  }
  std::sort(out.tensors.begin(), out.tensors.end(),
            [](const auto& a, const auto& b) { return a.offset < b.offset; });
  for (std::size_t i = 1; i < out.tensors.size(); ++i)
    COHORT_CHECK(out.tensors[i].offset >= out.tensors[i - 1].offset + out.tensors[i - 1].bytes,
                 "safetensors file '", path, "': tensors '", out.tensors[i - 1].name, "' and '",
                 out.tensors[i].name, "' overlap");
  return out;
}

SafetensorsFile load_safetensors(const std::string& path) {
  const SafetensorsHeader h = read_safetensors_header(path);
  SafetensorsFile out;
  out.metadata = h.metadata;
  for (const auto& e : h.tensors) {
    SafetensorsEntry t;
    t.name = e.name;
    t.dtype = e.dtype;
    t.shape = e.shape;
    t.bytes.resize(e.bytes);
    read_file_bytes(path, e.offset, e.bytes, t.bytes.data());
    out.tensors.push_back(std::move(t));
  }
  return out;
}

}  // namespace cohort::io
