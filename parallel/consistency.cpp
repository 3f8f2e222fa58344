// check_same_parameters (see consistency.hpp): every rank describes its parameters as
// "name:[shape];...", hashes the description, and compares hashes; only on a mismatch do the
// full descriptions travel, so the error can say exactly what differs.
#include "consistency.hpp"

#include <algorithm>
#include <cstring>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "cohort/collectives/host_collectives.hpp"
#include "cohort/core/error.hpp"
#include "cohort/core/hash.hpp"

namespace cohort::parallel::detail {
namespace {

std::string describe_parameters(const nn::Module& m) {
  std::string d;
  for (const auto& p : m.named_parameters()) d += p.name + ":" + p.param->value.shape().str() + ";";
  return d;
}

std::vector<std::pair<std::string, std::string>> parse_description(const std::string& d) {
  std::vector<std::pair<std::string, std::string>> out;
  std::size_t pos = 0;
  while (pos < d.size()) {
    const std::size_t end = d.find(';', pos);
    const std::string entry =
        d.substr(pos, end == std::string::npos ? std::string::npos : end - pos);
    const std::size_t colon = entry.find(':');
    out.emplace_back(entry.substr(0, colon),
                     colon == std::string::npos ? std::string() : entry.substr(colon + 1));
    if (end == std::string::npos) break;
    pos = end + 1;
  }
  return out;
}

}  // namespace

void check_same_parameters(const nn::Module& model, comm::Communicator& comm) {
  const int n = comm.size();
  if (n == 1) return;
  const std::string mine = describe_parameters(model);
  const auto h = static_cast<std::int64_t>(fnv1a(mine.data(), mine.size()));
  Device* dev = model.device();  // where a device-only communicator (nccl) stages these bytes
  std::vector<std::int64_t> hashes(static_cast<std::size_t>(n));
  comm::allgather_host(comm, dev, &h, hashes.data(), 1, DType::i64);
  if (std::all_of(hashes.begin(), hashes.end(), [&](std::int64_t x) { return x == hashes[0]; }))
    return;
  const auto len = static_cast<std::int64_t>(mine.size());
  std::vector<std::int64_t> lens(static_cast<std::size_t>(n));
  comm::allgather_host(comm, dev, &len, lens.data(), 1, DType::i64);
  const std::int64_t maxlen = *std::max_element(lens.begin(), lens.end());
  std::vector<char> padded(static_cast<std::size_t>(maxlen), '\0');
  std::memcpy(padded.data(), mine.data(), mine.size());
  std::vector<char> all(static_cast<std::size_t>(maxlen * n));
  comm::allgather_host(comm, dev, padded.data(), all.data(), static_cast<std::size_t>(maxlen),
                       DType::u8);
  auto desc_of = [&](int r) {
    return std::string(all.data() + static_cast<std::size_t>(r * maxlen),
                       static_cast<std::size_t>(lens[static_cast<std::size_t>(r)]));
  };
  int r = 1;
  while (hashes[static_cast<std::size_t>(r)] == hashes[0]) ++r;
  const auto a = parse_description(desc_of(0)), b = parse_description(desc_of(r));
  std::size_t i = 0;
  while (i < a.size() && i < b.size() && a[i] == b[i]) ++i;
  std::ostringstream why;
  why << "DistributedDataParallel: model parameters differ between rank 0 and rank " << r
      << ": first difference at parameter #" << i << ": ";
  if (i < a.size() && i < b.size())
    why << "'" << a[i].first << "' " << a[i].second << " on rank 0, '" << b[i].first << "' "
        << b[i].second << " on rank " << r;
  else if (i < a.size())
    why << "'" << a[i].first << "' " << a[i].second << " on rank 0, missing on rank " << r;
  else
    why << "missing on rank 0, '" << b[i].first << "' " << b[i].second << " on rank " << r;
  COHORT_FAIL(why.str());
}

}  // namespace cohort::parallel::detail
