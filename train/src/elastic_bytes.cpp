// elastic_bytes.hpp: files as bytes, and their broadcast.
#include "elastic_bytes.hpp"

#include <chrono>
#include <fstream>
#include <iterator>

#include "cohort/core/error.hpp"

namespace cohort::train::detail {

std::vector<std::uint8_t> read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  COHORT_CHECK(in.good(), "elastic: cannot read ", path);
  return std::vector<std::uint8_t>(std::istreambuf_iterator<char>(in), {});
}

void write_bytes(const std::string& path, const std::uint8_t* p, std::size_t n) {
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(p), static_cast<std::streamsize>(n));
  COHORT_CHECK(out.good(), "elastic: cannot write ", path);
}

std::vector<std::uint8_t> broadcast_blob(comm::Communicator& c, std::vector<std::uint8_t> blob,
                                         int root, double* moved_s) {
  std::uint64_t n = blob.size();
  c.broadcast(&n, sizeof n, DType::u8, root)->wait();
  blob.resize(n);
  const auto t0 = std::chrono::steady_clock::now();
  c.broadcast(blob.data(), n, DType::u8, root)->wait();
  if (moved_s)
    *moved_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return blob;
}

}  // namespace cohort::train::detail
