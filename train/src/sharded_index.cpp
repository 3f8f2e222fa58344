// A sharded checkpoint's files (see sharded_index.hpp).
#include "sharded_index.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "cohort/core/error.hpp"
#include "metadata_text.hpp"

namespace cohort::train::sharded {

namespace fs = std::filesystem;
using Json = nlohmann::ordered_json;

bool file_exists(const std::string& p) { return ::access(p.c_str(), F_OK) == 0; }

void write_text_atomically(const std::string& path, const std::string& text) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    COHORT_CHECK(out.good(), "cannot create '", tmp, "'");
    out << text;
    out.flush();
    COHORT_CHECK(out.good(), "writing '", tmp, "' failed");
  }
  const int fd = ::open(tmp.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd >= 0) {
    ::fsync(fd);
    ::close(fd);
  }
  COHORT_CHECK(::rename(tmp.c_str(), path.c_str()) == 0, "cannot rename '", tmp, "' to '", path,
               "': ", std::strerror(errno));
}

void sync_dir(const std::string& dir) {
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd >= 0) {
    ::fsync(fd);
    ::close(fd);
  }
}

std::string parent_of(const std::string& dir) {
  const fs::path p = fs::absolute(fs::path(dir)).parent_path();
  return p.empty() ? "." : p.string();
}

namespace {

DType dtype_of(const std::string& path, const std::string& name, const std::string& s) {
  for (DType d :
       {DType::f32, DType::f64, DType::bf16, DType::f16, DType::i32, DType::i64, DType::u8})
    if (s == dtype_name(d)) return d;
  COHORT_FAIL("sharded checkpoint '", path, "': tensor '", name, "' has unknown dtype '", s, "'");
}

}  // namespace

Index read_index(const std::string& dir) {
  const std::string path = dir + "/index.json";
  std::ifstream in(path);
  COHORT_CHECK(in.good(), "sharded checkpoint '", dir, "': cannot open '", path, "'");
  Json j;
  try {
    j = Json::parse(in);
  } catch (const std::exception& e) {
    COHORT_FAIL("sharded checkpoint '", path, "' is not valid JSON: ", e.what());
  }
  Index x;
  x.dir = dir;
  try {
    COHORT_CHECK(j.value("format", "") == kFormat, "'", path, "' is not a ", kFormat,
                 " index (format '", j.value("format", ""), "')");
    x.world_size = j.at("world_size").get<int>();
    x.zero_stage = j.at("zero_stage").get<int>();
    x.save_id = j.at("save_id").get<double>();
    x.files = j.at("files").get<std::vector<std::string>>();
    for (const auto& [k, v] : j.at("metadata").items()) x.metadata[k] = v.get<std::string>();
    for (const auto& [name, t] : j.at("tensors").items()) {
      TensorIndex ti;
      ti.dtype = dtype_of(path, name, t.at("dtype").get<std::string>());
      ti.shape = Shape(t.at("shape").get<std::vector<std::int64_t>>());
      for (const auto& p : t.at("pieces"))
        ti.pieces.push_back(
            {p.at(0).get<int>(), p.at(1).get<std::int64_t>(), p.at(2).get<std::int64_t>()});
      x.tensors.emplace_back(name, std::move(ti));
    }
  } catch (const Error&) {
    throw;
  } catch (const std::exception& e) {
    COHORT_FAIL("sharded checkpoint index '", path, "' is malformed: ", e.what());
  }
  COHORT_CHECK(x.world_size >= 1 && static_cast<int>(x.files.size()) == x.world_size, "'", path,
               "': world_size ", x.world_size, " but ", x.files.size(), " files");
  // Every tensor's pieces: inside the file list, sorted, disjoint, covering it exactly.
  for (auto& [name, t] : x.tensors) {
    std::sort(t.pieces.begin(), t.pieces.end(),
              [](const Piece& a, const Piece& b) { return a.begin < b.begin; });
    std::int64_t at = 0;
    for (const Piece& p : t.pieces) {
      COHORT_CHECK(p.file >= 0 && p.file < x.world_size && p.begin == at && p.end > p.begin, "'",
                   path, "': the pieces of '", name, "' do not tile it (a piece [", p.begin, ", ",
                   p.end, ") in file ", p.file, " where element ", at, " comes next)");
      at = p.end;
    }
    COHORT_CHECK(at == t.shape.numel(), "'", path, "': the pieces of '", name, "' cover ", at,
                 " of its ", t.shape.numel(), " elements");
  }
  return x;
}

std::vector<io::SafetensorsHeader> read_headers(const Index& x) {
  std::vector<io::SafetensorsHeader> h;
  for (int r = 0; r < x.world_size; ++r) {
    const std::string path = x.dir + "/" + x.files[static_cast<std::size_t>(r)];
    COHORT_CHECK(file_exists(path), "sharded checkpoint '", x.dir, "': file '", path, "' (rank ", r,
                 "'s shard) is missing");
    h.push_back(io::read_safetensors_header(path));
    const auto& md = h.back().metadata;
    const auto id = md.find("cohort.save_id");
    const auto rk = md.find("cohort.rank");
    COHORT_CHECK(id != md.end() && rk != md.end() && rk->second == std::to_string(r) &&
                     std::stod(id->second) == x.save_id,
                 "sharded checkpoint '", x.dir, "': '", path, "' is not rank ", r,
                 "'s shard of this save (its save id ",
                 id == md.end() ? std::string("absent") : id->second, ", the index's ",
                 detail::exact_text(x.save_id), "): shards of different saves mixed");
  }
  for (const auto& [name, t] : x.tensors)
    for (const Piece& p : t.pieces) {
      const auto& hd = h[static_cast<std::size_t>(p.file)];
      const auto* e = hd.find(name);
      COHORT_CHECK(e != nullptr, "sharded checkpoint '", x.dir, "': '", hd.path, "' lacks '", name,
                   "' (elements [", p.begin, ", ", p.end, ") per the index)");
      COHORT_CHECK(e->dtype == t.dtype && e->shape.numel() == p.end - p.begin,
                   "sharded checkpoint '", x.dir, "': '", hd.path, "' holds '", name, "' as ",
                   e->shape.str(), " ", dtype_name(e->dtype), ", the index says ", p.end - p.begin,
                   " elements of ", dtype_name(t.dtype));
    }
  return h;
}

std::uint64_t read_range(const Index& x, const std::vector<io::SafetensorsHeader>& headers,
                         const std::string& name, std::int64_t begin, std::int64_t end, void* dst) {
  const TensorIndex& t = *x.find(name);
  const std::size_t es = dtype_size(t.dtype);
  std::uint64_t read = 0;
  for (const Piece& p : t.pieces) {
    const std::int64_t lo = std::max(begin, p.begin), hi = std::min(end, p.end);
    if (lo >= hi) continue;
    const auto& hd = headers[static_cast<std::size_t>(p.file)];
    const auto* e = hd.find(name);
    const std::size_t n = static_cast<std::size_t>(hi - lo) * es;
    io::read_file_bytes(hd.path, e->offset + static_cast<std::uint64_t>(lo - p.begin) * es, n,
                        static_cast<char*>(dst) + static_cast<std::size_t>(lo - begin) * es);
    read += n;
  }
  return read;
}

}  // namespace cohort::train::sharded
