// The Communicator: collective and point-to-point operations among the ranks of one process
// group, behind one interface whose backend (shm, ucx, nccl, self) is chosen at run time.
//
// Contracts (every backend, every op):
//  - Asynchronous: each call enqueues the op and returns a Work handle at once; collectives issued
//    by one rank complete in issue order, and every rank must issue the same collectives in the
//    same order with the same count and dtype (as in NCCL/MPI). Point-to-point ops complete on
//    their own (a recv waits only for its matching send), so tagged messages may be received in
//    any order.
//  - Buffers belong to the caller and must stay valid and unmodified (send side) / unread (receive
//    side) until the Work completes. In-place is `send == recv` where the op allows it.
//  - Memory: host pointers always work on backends whose capabilities() say host_memory; device
//    pointers only where device_memory is true (nccl; ucx built with CUDA).
//  - Time: every op carries a timeout (the communicator's default unless given). Work::wait()
//    throws cohort::Error when it runs out, naming the op, the timeout and the ranks that did not
//    arrive; a failed op leaves the communicator unusable (like NCCL after an error), and every
//    later call throws.
//  - Counts are elements, not bytes; count == 0 is a valid no-op that still completes.
#pragma once

#include <chrono>
#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "cohort/core/dtype.hpp"

namespace cohort::comm {

enum class ReduceOp { sum, avg, min, max };
const char* reduce_op_name(ReduceOp op);

using Timeout = std::chrono::milliseconds;
// Means "use the communicator's default timeout" (COHORT_COMM_TIMEOUT_MS, else 300 s).
inline constexpr Timeout kDefaultTimeout{-1};

struct Capabilities {
  bool host_memory = true;
  bool device_memory = false;
  // Ops on device memory start only after the work already enqueued on that device's compute
  // stream (the communicator orders its own stream after it with an event, as nccl does), so a
  // caller need not wait on the host before passing memory that compute is still writing.
  bool stream_ordered = false;
  std::vector<DType> dtypes;  // element types the reductions accept (all ops move any dtype)
};

// A handle to one enqueued op.
class Work {
 public:
  virtual ~Work() = default;
  // Non-blocking: true once the op has completed; throws cohort::Error if it failed.
  virtual bool test() = 0;
  // Blocks until the op completes; throws cohort::Error on failure or timeout.
  virtual void wait() = 0;
};
using WorkHandle = std::shared_ptr<Work>;

// Host memory from Communicator::alloc_buffer: page-aligned, on pages no other buffer shares (a
// device may page-lock it, and locks whole pages), zeroed; freed when the handle goes.
class CommBuffer {
 public:
  virtual ~CommBuffer() = default;
  virtual void* data() const = 0;
  virtual std::size_t bytes() const = 0;
};

class Communicator {
 public:
  virtual ~Communicator() = default;

  virtual std::string backend() const = 0;  // "shm", "ucx", "nccl", "self"

  // Tells the communicator that `rank` is gone, learned another way (elastic training: the
  // launcher saw the process exit): ops waiting for it fail within the backend's polling interval
  // with `why`, instead of at its own detection (ucx: a keep-alive of up to a few seconds).
  // Thread-safe; any thread may call it while another waits. Backends that see a local peer's
  // exit as fast themselves (shm) keep the default, which does nothing.
  virtual void declare_dead(int /*rank*/, const std::string& /*why*/) {}
  virtual int rank() const = 0;
  virtual int size() const = 0;
  virtual Capabilities capabilities() const = 0;

  // recv[i] = op over ranks of send[i], on every rank; send == recv is in place.
  // avg is sum divided by size() (integers: truncating division).
  virtual WorkHandle allreduce(const void* send, void* recv, std::size_t count, DType dtype,
                               ReduceOp op, Timeout timeout = kDefaultTimeout) = 0;
  // buf on every rank becomes buf of `root`.
  virtual WorkHandle broadcast(void* buf, std::size_t count, DType dtype, int root,
                               Timeout timeout = kDefaultTimeout) = 0;
  // recv[r * count + i] = send of rank r [i]; recv holds size() * count elements. In place when
  // send == recv + rank() * count.
  virtual WorkHandle allgather(const void* send, void* recv, std::size_t count, DType dtype,
                               Timeout timeout = kDefaultTimeout) = 0;
  // recv[i] = op over ranks r of send_r[rank() * count + i]; send holds size() * count elements.
  virtual WorkHandle reduce_scatter(const void* send, void* recv, std::size_t count, DType dtype,
                                    ReduceOp op, Timeout timeout = kDefaultTimeout) = 0;
  // Completes on every rank once all ranks have entered it.
  virtual WorkHandle barrier(Timeout timeout = kDefaultTimeout) = 0;
  // Point to point; a send matches the recv with the same (source, tag) on `peer`, in order.
  virtual WorkHandle send(const void* buf, std::size_t count, DType dtype, int peer, int tag = 0,
                          Timeout timeout = kDefaultTimeout) = 0;
  virtual WorkHandle recv(void* buf, std::size_t count, DType dtype, int peer, int tag = 0,
                          Timeout timeout = kDefaultTimeout) = 0;

  // `bytes` of zero-filled, 64-byte aligned host memory that this communicator's collectives can
  // use without staging where the backend can (as NCCL's ncclMemAlloc, or PyTorch's symmetric
  // memory). shm maps every rank's buffer into every other rank, so an all-reduce whose buffers
  // lie in such memory reads the peers' data in place instead of copying it through the shared
  // segment (docs/COLLECTIVES.md, "Communicator buffers"); the other backends return plain
  // memory. Collective: every rank calls it, in the same order relative to its other
  // alloc_buffer calls (sizes may differ), within `timeout`. Such buffers and ordinary ones mix
  // freely in every op. Free a buffer (drop its handle) on every rank only after the last op
  // that uses the same allocation on any rank: that op reads the peers' buffers of it too.
  virtual std::unique_ptr<CommBuffer> alloc_buffer(std::size_t bytes,
                                                   Timeout timeout = kDefaultTimeout);
};

// Plain host memory for backends with nothing better (the default alloc_buffer).
std::unique_ptr<CommBuffer> alloc_plain_buffer(std::size_t bytes);

}  // namespace cohort::comm
