// What a collective algorithm sees of the transport: non-blocking tagged send/recv between the
// ranks of one communicator, scoped to one collective op. coll_channel.hpp implements it over UCP
// tagged messages; the algorithms (allreduce_ring.cpp, ...) are written against this interface
// only and never see a UCX type. Everything here runs on the communicator's progress thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "cohort/core/error.hpp"

// The shared helpers of collectives/detail/, declared so that the alias below resolves.
namespace cohort::comm::detail {}  // namespace cohort::comm::detail

namespace cohort::comm::ucx::detail {

// The helpers every backend shares (collectives/detail/: reductions, argument checks, waiting).
namespace common = ::cohort::comm::detail;

class Channel {
 public:
  using Handle = std::size_t;
  // Steps (message numbers within one op) must be below this: the tag has 23 bits for them.
  static constexpr std::uint32_t kStepLimit = 1u << 23;

  virtual ~Channel() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;

  // Starts sending `bytes` bytes at `buf` to `peer`; it matches the irecv() that `peer` posts
  // with this rank as source and the same `step` in the same op. `buf` must stay unchanged until
  // the handle completes. bytes may be 0.
  virtual Handle isend(int peer, const void* buf, std::size_t bytes, std::uint32_t step) = 0;
  // Starts receiving exactly `bytes` bytes from `peer` into `buf`; a message of another length
  // fails the op (the ranks disagree on count or dtype).
  virtual Handle irecv(int peer, void* buf, std::size_t bytes, std::uint32_t step) = 0;
  // Progresses the transport until the handle completes. Throws when the op's deadline passes,
  // when another rank reports that its communicator failed, or when the transport fails; the
  // engine then reports which ranks did not arrive and which peers' messages are missing.
  virtual void wait(Handle h) = 0;
  // Waits for every handle this op started.
  virtual void wait_all() = 0;
  // Engine-owned temporary memory, kept between ops (grows, never shrinks). Slots are
  // independent buffers; the pointer is valid until the next scratch() call for the same slot.
  virtual void* scratch(int slot, std::size_t bytes) = 0;
};

// Algorithm choices and sizes; defaults measured on the 2-core reference machine (docs/UCX.md),
// overridable from the environment (ucx_communicator.cpp reads COHORT_UCX_*).
struct Tuning {
  // automatic: recursive doubling below ring_min_bytes, ring from there; the others forced
  // (rabenseifner is never chosen automatically: its crossover has not been measured).
  enum class Allreduce { automatic, ring, recursive_doubling, rabenseifner };
  Allreduce allreduce = Allreduce::automatic;
  // allreduce: recursive doubling below this many bytes, ring at and above it.
  std::size_t ring_min_bytes = 0;
  // Pipelining unit of the ring and chain algorithms.
  std::size_t chunk_bytes = 0;
  // broadcast: binomial tree below this many bytes, pipelined chain at and above it.
  std::size_t chain_min_bytes = 0;
};
Tuning default_tuning();

// A cohort::Error attributed to backend "ucx" and this communicator's rank (not the
// process-global error rank: several ranks may live in one process, as in the tests).
[[noreturn]] void throw_ucx_error(const char* file, int line, int rank, const std::string& why);

}  // namespace cohort::comm::ucx::detail

#define COHORT_UCX_FAIL(rank, ...)                                         \
  ::cohort::comm::ucx::detail::throw_ucx_error(__FILE__, __LINE__, (rank), \
                                               ::cohort::detail::concat(__VA_ARGS__))
