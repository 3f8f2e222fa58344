// The shared segment (segment.hpp): its layout, the tuning Params from COHORT_SHM_* variables,
// and attach(): local rank 0 creates and sizes it, the others map it by the name exchanged through
// the store, and every rank checks the header's magic and version.
#include "shm/segment.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>
#include <random>
#include <thread>
#include <vector>

#include "cohort/core/error.hpp"
#include "detail/env.hpp"
#include "detail/format.hpp"

namespace cohort::comm::shm {
namespace {

constexpr std::uint64_t kMagic = 0x31687374726f6863ull;  // "chortsh1"
constexpr std::uint32_t kVersion = 4;  // 2: collective fingerprints; 3: communicator buffers;
                                       // 4: a fingerprint per cache line, inline small data
constexpr const char* kName = "shm";

std::uint64_t round_up(std::uint64_t v, std::uint64_t a) { return (v + a - 1) / a * a; }

std::uint64_t env_bytes(const char* name, std::uint64_t fallback, std::uint64_t lo,
                        std::uint64_t hi) {
  return comm::detail::bytes_from_env(name, fallback, lo, hi, kName);
}

// Job ids come from launchers; keep what is safe in a file name.
std::string sanitize(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (out.size() >= 48) break;
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '_' || c == '.' || c == '-';
    out += ok ? c : '_';
  }
  return out.empty() ? "nojob" : out;
}

std::uint64_t pid_namespace() {
  struct stat st;
  return ::stat("/proc/self/ns/pid", &st) == 0 ? static_cast<std::uint64_t>(st.st_ino) : 0;
}

void compute_layout(Header& h, const Params& p) {
  h.params = p;
  h.ctl_offset = round_up(sizeof(Header), 4096);
  h.slots_offset = round_up(h.ctl_offset + sizeof(RankCtl) * p.world, 4096);
  h.rings_offset = h.slots_offset + static_cast<std::uint64_t>(p.world) * p.nslots * p.slot_bytes;
  h.ring_bytes = round_up(sizeof(RingCtl) + p.ring_slots * p.ring_slot_bytes, 4096);
  h.total_bytes = h.rings_offset + static_cast<std::uint64_t>(p.world) * p.world * h.ring_bytes;
}

}  // namespace

std::uint64_t Segment::bytes_for(const Params& params) {
  Header h;
  compute_layout(h, params);
  return h.total_bytes;
}

Params Params::from_env(int world) {
  Params p;
  p.world = static_cast<std::uint32_t>(world);
  p.slot_bytes = env_bytes("COHORT_SHM_SLOT_BYTES", p.slot_bytes, 4096, 64u << 20);
  p.slot_bytes = round_up(p.slot_bytes, 4096);
  p.nslots = static_cast<std::uint32_t>(env_bytes("COHORT_SHM_SLOTS", p.nslots, 2, 64));
  p.direct_bytes = env_bytes("COHORT_SHM_DIRECT_BYTES", p.direct_bytes, 0, p.slot_bytes);
  // COHORT_SHM_STREAM_BYTES is the old spelling, still accepted when the new name is unset.
  const char* nontemporal = std::getenv("COHORT_SHM_NONTEMPORAL_BYTES");
  p.nontemporal_bytes = env_bytes(nontemporal && *nontemporal ? "COHORT_SHM_NONTEMPORAL_BYTES"
                                                              : "COHORT_SHM_STREAM_BYTES",
                                  p.nontemporal_bytes, 0, ~0ull >> 1);
  p.peer_read_bytes =
      env_bytes("COHORT_SHM_PEER_READ_BYTES", p.peer_read_bytes, 0, ~0ull >> 1);
  return p;
}

std::unique_ptr<Segment> Segment::attach(const ProcessGroupInfo& info, Store& store,
                                         std::chrono::milliseconds timeout) {
  // Ranks index the control blocks; local rank 0 creates (they differ only under launchers that
  // number the ranks of one host in some other order).
  const int world = info.world_size;
  const int rank = info.rank;
  std::unique_ptr<Segment> seg(new Segment());
  // Every rank of every shm communicator created over this store counts itself in, so all ranks
  // agree on a generation number without any process-global state.
  const std::int64_t joined = store.add("cohort/shm/joined", 1);
  const std::string key = "cohort/shm/" + std::to_string((joined - 1) / world) + "/segment";
  int fd = -1;
  if (info.local_rank == 0) {
    Header proto;
    compute_layout(proto, Params::from_env(world));
    std::random_device rd;
    for (int attempt = 0; fd < 0; ++attempt) {
      char nonce[17];
      std::snprintf(nonce, sizeof(nonce), "%08x%08x", rd(), rd());
      seg->name_ = "/cohort-" + sanitize(info.job_id) + "-" + nonce;
      fd = ::shm_open(seg->name_.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
      COHORT_CHECK_IN(kName, fd >= 0 || (errno == EEXIST && attempt < 8), "cannot create segment ",
                      seg->name_, ": ", std::strerror(errno));
    }
    if (::ftruncate(fd, static_cast<off_t>(proto.total_bytes)) != 0) {
      const int err = errno;
      ::close(fd);
      ::shm_unlink(seg->name_.c_str());
      COHORT_FAIL("shm: cannot size segment ", seg->name_, " to ", proto.total_bytes, " bytes: ",
                  std::strerror(err), " (is /dev/shm large enough?)");
    }
    seg->bytes_ = proto.total_bytes;
    void* p = ::mmap(nullptr, seg->bytes_, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, 0);
    ::close(fd);
    if (p == MAP_FAILED) {
      const int err = errno;
      ::shm_unlink(seg->name_.c_str());
      COHORT_FAIL("shm: cannot map segment ", seg->name_, ": ", std::strerror(err));
    }
    seg->base_ = static_cast<char*>(p);
    // The file is zero-filled; construct the atomics properly before anyone else can see them.
    Header* h = new (seg->base_) Header();
    h->version = kVersion;
    h->params = proto.params;
    h->total_bytes = proto.total_bytes;
    h->ctl_offset = proto.ctl_offset;
    h->slots_offset = proto.slots_offset;
    h->rings_offset = proto.rings_offset;
    h->ring_bytes = proto.ring_bytes;
    for (int r = 0; r < world; ++r) new (&seg->ctl(r)) RankCtl();
    for (int a = 0; a < world; ++a)
      for (int b = 0; b < world; ++b) new (&seg->ring(a, b)) RingCtl();
    seg->ctl(rank).pid_ns.store(pid_namespace(), std::memory_order_relaxed);
    seg->ctl(rank).pid.store(::getpid(), std::memory_order_relaxed);
    h->magic.store(kMagic, std::memory_order_release);
    store.set_string(key, seg->name_);

    // Wait until every rank has mapped the segment, then remove its name.
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    for (;;) {
      std::vector<int> missing;
      for (int r = 0; r < world; ++r)
        if (r != rank && seg->ctl(r).pid.load(std::memory_order_acquire) == 0) missing.push_back(r);
      if (missing.empty()) break;
      if (std::chrono::steady_clock::now() >= deadline) {
        ::shm_unlink(seg->name_.c_str());
        COHORT_FAIL("shm: ", detail::format_ranks(missing), " did not attach to segment ",
                    seg->name_, " within ", timeout.count(), " ms");
      }
      std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
    ::shm_unlink(seg->name_.c_str());
  } else {
    seg->name_ = store.get_string(key, timeout);
    fd = ::shm_open(seg->name_.c_str(), O_RDWR | O_CLOEXEC, 0600);
    COHORT_CHECK_IN(kName, fd >= 0, "cannot open segment ", seg->name_,
                    " created by local rank 0: ", std::strerror(errno),
                    errno == ENOENT ? " (are all ranks on one host? LOCAL_WORLD_SIZE says they are)"
                                    : "");
    struct stat st;
    if (::fstat(fd, &st) != 0 || st.st_size < static_cast<off_t>(sizeof(Header))) {
      ::close(fd);
      COHORT_FAIL("shm: segment ", seg->name_, " is too small to be a cohort segment");
    }
    seg->bytes_ = static_cast<std::size_t>(st.st_size);
    void* p = ::mmap(nullptr, seg->bytes_, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, 0);
    ::close(fd);
    COHORT_CHECK_IN(kName, p != MAP_FAILED, "cannot map segment ", seg->name_, ": ",
                    std::strerror(errno));
    seg->base_ = static_cast<char*>(p);
    const Header& h = seg->header();
    COHORT_CHECK_IN(kName, h.magic.load(std::memory_order_acquire) == kMagic && h.version == kVersion,
                    "segment ", seg->name_, " is not a cohort v", kVersion, " segment");
    COHORT_CHECK_IN(kName, h.params.world == static_cast<std::uint32_t>(world) &&
                               h.total_bytes == seg->bytes_,
                    "segment ", seg->name_, " was made for ", h.params.world,
                    " ranks but this rank's group has ", world);
    seg->ctl(rank).pid_ns.store(pid_namespace(), std::memory_order_relaxed);
    seg->ctl(rank).pid.store(::getpid(), std::memory_order_release);
  }
  return seg;
}

Segment::~Segment() {
  if (base_) ::munmap(base_, bytes_);
}

}  // namespace cohort::comm::shm
