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

void save_safetensors(const std::string& path, const std::vector<SafetensorsEntry>& tensors,
                      const std::map<std::string, std::string>& metadata) {
  nlohmann::ordered_json header = nlohmann::ordered_json::object();
  if (!metadata.empty()) header["__metadata__"] = metadata;
  std::set<std::string> names;
  std::size_t offset = 0;
  for (const auto& e : tensors) {
    const std::string& name = e.name;
    COHORT_CHECK(!name.empty() && name != "__metadata__", "save_safetensors('", path,
                 "'): invalid tensor name '", name, "'");
    COHORT_CHECK(names.insert(name).second, "save_safetensors('", path, "'): tensor name '", name,
                 "' appears twice");
    COHORT_CHECK(e.bytes.size() == static_cast<std::size_t>(e.shape.numel()) * dtype_size(e.dtype),
                 "save_safetensors('", path, "'): tensor '", name, "' has ", e.bytes.size(),
                 " bytes for shape ", e.shape.str());
    header[name] = {{"dtype", st_dtype(e.dtype)},
                    {"shape", e.shape.dims()},
                    {"data_offsets", {offset, offset + e.bytes.size()}}};
    offset += e.bytes.size();
  }
  std::string h = header.dump();
  // Pad the header with spaces so the data section starts 8-byte aligned, as the reference
  // implementation does.
  while ((8 + h.size()) % 8 != 0) h += ' ';
  const std::uint64_t hlen = h.size();
  unsigned char lenbytes[8];
  for (int i = 0; i < 8; ++i) lenbytes[i] = static_cast<unsigned char>(hlen >> (8 * i));

  const std::string tmp = path + ".tmp." + std::to_string(::getpid());
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  COHORT_CHECK(fd >= 0, "cannot create '", tmp, "' to save '", path, "': ", std::strerror(errno));
  try {
    write_all(fd, lenbytes, 8, tmp);
    write_all(fd, h.data(), h.size(), tmp);
    for (const auto& e : tensors)
      if (!e.bytes.empty()) write_all(fd, e.bytes.data(), e.bytes.size(), tmp);
    COHORT_CHECK(::fsync(fd) == 0, "fsync of '", tmp, "' failed: ", std::strerror(errno));
  } catch (...) {
    ::close(fd);
    ::unlink(tmp.c_str());
    throw;
  }
  ::close(fd);
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    const std::string why = std::strerror(errno);
    ::unlink(tmp.c_str());
    COHORT_FAIL("cannot move '", tmp, "' over '", path, "': ", why);
  }
  const int dfd = ::open(dir_of(path).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {  // make the rename itself durable
    ::fsync(dfd);
    ::close(dfd);
  }
}

SafetensorsFile load_safetensors(const std::string& path) {
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

  SafetensorsFile out;
  struct Entry {
    std::string name;
    DType dt;
    std::vector<std::int64_t> shape;
    std::uint64_t begin, end;
  };
  std::vector<Entry> entries;
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
    Entry e;
    e.name = it.key();
    COHORT_CHECK(v.is_object() && v.contains("dtype") && v.contains("shape") &&
                     v.contains("data_offsets") && v["dtype"].is_string() &&
                     v["shape"].is_array() && v["data_offsets"].is_array() &&
                     v["data_offsets"].size() == 2,
                 "safetensors file '", path, "': entry '", e.name, "' is malformed: ", v.dump());
    COHORT_CHECK(parse_dtype(v["dtype"].get<std::string>(), &e.dt), "safetensors file '", path,
                 "': tensor '", e.name, "' has unsupported dtype ", v["dtype"].dump());
    std::uint64_t numel = 1;
    for (const auto& d : v["shape"]) {
      COHORT_CHECK(d.is_number_unsigned(), "safetensors file '", path, "': tensor '", e.name,
                   "' has a bad shape ", v["shape"].dump());
      e.shape.push_back(d.get<std::int64_t>());
      numel *= d.get<std::uint64_t>();
    }
    e.begin = v["data_offsets"][0].get<std::uint64_t>();
    e.end = v["data_offsets"][1].get<std::uint64_t>();
    COHORT_CHECK(e.begin <= e.end && e.end <= data_size, "safetensors file '", path,
                 "' is truncated or corrupt: tensor '", e.name, "' spans bytes [", e.begin, ", ",
                 e.end, ") of a ", data_size, "-byte data section");
    COHORT_CHECK(e.end - e.begin == numel * dtype_size(e.dt), "safetensors file '", path,
                 "': tensor '", e.name, "' of shape ", Shape(e.shape).str(), " ",
                 dtype_name(e.dt), " needs ", numel * dtype_size(e.dt), " bytes but spans ",
                 e.end - e.begin);
    entries.push_back(std::move(e));
  }
  std::sort(entries.begin(), entries.end(),
            [](const Entry& a, const Entry& b) { return a.begin < b.begin; });
  for (std::size_t i = 1; i < entries.size(); ++i)
    COHORT_CHECK(entries[i].begin >= entries[i - 1].end, "safetensors file '", path, "': tensors '",
                 entries[i - 1].name, "' and '", entries[i].name, "' overlap");
  for (const auto& e : entries) {
    SafetensorsEntry t;
    t.name = e.name;
    t.dtype = e.dt;
    t.shape = Shape(e.shape);
    t.bytes.resize(e.end - e.begin);
    in.seekg(static_cast<std::streamoff>(8 + hlen + e.begin));
    in.read(reinterpret_cast<char*>(t.bytes.data()), static_cast<std::streamsize>(t.bytes.size()));
    COHORT_CHECK(in.good() || t.bytes.empty(), "reading tensor '", e.name, "' from '", path,
                 "' failed");
    out.tensors.push_back(std::move(t));
  }
  return out;
}

}  // namespace cohort::io
