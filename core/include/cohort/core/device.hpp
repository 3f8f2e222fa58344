// The device abstraction: one object per compute device (the host, each GPU) that owns memory,
// orders work on streams, and runs the op table the layers call. Layers and the Tensor front end
// talk only to this interface; Kokkos, CUDA, cuDNN and cuBLAS types stay inside each backend.
//
// Why the op table is two virtuals and not one per op: the ops are listed once
// (cohort/backend/op_list.hpp) and travel as an `OpCall` (a variant of their argument structs). A
// backend answers supports() for the actual case and run()s it, usually by handing the call to the
// shared op families (backends/common/ops/) with its own executor; it names an op only
// where it calls a vendor library instead. The op front ends check tensors, build the call, and
// run it on the host device instead when the tensors' device does not support the case
// (cohort/backend/dispatch.hpp), so a backend can grow op by op.
//
// Streams and events. Every device has one compute stream, on which run(), copy() and the
// stream-ordered frees are enqueued in call order. Further streams (a communicator's) and events
// are opaque handles (void*) created here and wrapped by cohort::Stream / cohort::Event
// (cohort/core/stream.hpp). A `nullptr` stream means the compute stream. On a synchronous device
// (the host) every op has finished when its call returns, so the defaults below (events always
// complete, waits do nothing) are exact; asynchronous devices override them.
//
// Memory. allocate()/deallocate() are stream-ordered on the compute stream. The CUDA device serves
// them from a caching allocator (backends/common/caching_allocator.hpp), so after a training
// loop's first step no allocation reaches cudaMalloc or cudaFree; memory_stats() counts what did.
// Pinned (page-locked) host memory and copy_from_host_async() let the data loader upload a batch
// on its own stream while the previous step computes (data/src/dataloader.cpp).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "cohort/core/dtype.hpp"

namespace cohort {

// One op call, defined with the op list in the backend set (cohort/backend/op_list.hpp). Users
// never name it: the op front ends (cohort/core/ops.hpp, layer_ops.hpp, optim_ops.hpp) build it.
struct OpCall;

enum class DeviceType { host, cuda };

// A device's memory statistics (Device::memory_stats), counted since the device was created.
// "Raw" means the device's driver: cudaMalloc / cudaFree on CUDA (cudaFree synchronises the whole
// device, which is why the CUDA device caches blocks), the C heap on the host. Byte counts are of
// blocks as allocated (after the allocator's rounding).
struct MemoryStats {
  std::uint64_t allocs = 0;         // allocate() calls that returned memory
  std::uint64_t frees = 0;          // deallocate() calls that released memory
  std::uint64_t raw_allocs = 0;     // blocks taken from the driver
  std::uint64_t raw_frees = 0;      // blocks given back to the driver
  std::uint64_t cache_hits = 0;     // allocate() calls served from freed blocks (no driver call)
  std::uint64_t cache_flushes = 0;  // times every cached block went back (out of memory, empty_cache)
  std::size_t bytes_in_use = 0;     // in live allocations
  std::size_t bytes_reserved = 0;   // taken from the driver: in use plus cached
  std::size_t peak_in_use = 0;
  std::size_t peak_reserved = 0;
  // The bytes asked for by live allocations, before the allocator's rounding (PyTorch's
  // requested_bytes): what a formula of tensor sizes predicts. bytes_in_use is their blocks'.
  std::size_t bytes_requested = 0;
  std::size_t peak_requested = 0;
  // Times the host blocked until the compute stream finished its queued work: synchronize(),
  // synchronize_stream(nullptr), and the blocking copies (copy_to_host, copy_from_host). Event
  // waits (synchronize_event) are not counted. Always 0 on a synchronous device.
  std::uint64_t host_waits = 0;
  std::uint64_t pinned_allocs = 0, pinned_frees = 0;  // allocate_pinned / deallocate_pinned calls
  std::size_t pinned_bytes = 0;                        // pinned host memory held now
};

class Device {
 public:
  virtual ~Device() = default;
  Device() = default;
  Device(const Device&) = delete;
  Device& operator=(const Device&) = delete;

  // --- identity ---
  virtual std::string name() const = 0;  // "host", "cuda:0"
  virtual DeviceType type() const = 0;
  virtual int index() const { return 0; }
  // True when the host may dereference this device's pointers directly.
  virtual bool host_accessible() const = 0;

  // --- memory ---
  // Returns memory aligned to at least 64 bytes, or throws cohort::Error naming the device, the
  // size and (where known) the bytes free. allocate(0) returns nullptr.
  virtual void* allocate(std::size_t bytes) = 0;
  // Stream-ordered: the memory is reused only after the work already enqueued on the compute
  // stream has finished; it does not wait. Memory last used on another stream must be ordered
  // back onto the compute stream first (Stream::compute(dev).wait(event)). nullptr is a no-op.
  virtual void deallocate(void* p, std::size_t bytes) noexcept = 0;
  // Copies block the calling thread until the bytes are in place (d2h waits for queued ops).
  virtual void copy_from_host(void* dst, const void* host_src, std::size_t bytes) = 0;
  virtual void copy_to_host(void* host_dst, const void* src, std::size_t bytes) = 0;
  // Device-to-device within this device; enqueued on the compute stream.
  virtual void copy(void* dst, const void* src, std::size_t bytes) = 0;
  // Waits for every op enqueued on the compute stream so far.
  virtual void synchronize() = 0;
  // Makes this device the calling thread's current one (CUDA: cudaSetDevice), as a thread other
  // than the one that made the device must do before it uses the device (PyTorch's pin-memory
  // thread does the same). The CUDA device also selects itself in each entry point; the test
  // device of tests/common/lazy_stream_device.hpp holds every thread to this rule. The default
  // (the host) does nothing.
  virtual void make_current() {}

  // Counts and bytes of this device's allocations (see MemoryStats). The default, for a device
  // that keeps none, is all zeros.
  virtual MemoryStats memory_stats() const { return {}; }
  // Returns memory cached by the device's allocator to the driver, after waiting for the compute
  // stream (so it synchronises). Memory in use is untouched. The default does nothing.
  virtual void empty_cache() {}
  // Sets peak_in_use and peak_reserved to the bytes in use and reserved now, so that the next
  // memory_stats() tells the peak since this call (torch.cuda.reset_peak_memory_stats).
  virtual void reset_peak_memory_stats() {}

  // Page-locked host memory for staging uploads: the host may read and write it, and
  // copy_from_host_async() from it does not block the calling thread. Aligned to at least 64
  // bytes; allocate_pinned(0) returns nullptr; throws cohort::Error when none is left. Freeing may
  // synchronise the device (cudaFreeHost does): keep such buffers for a long time. The defaults
  // are ordinary heap memory (what a synchronous device needs).
  virtual void* allocate_pinned(std::size_t bytes);
  virtual void deallocate_pinned(void* p, std::size_t bytes) noexcept;
  // Enqueues a copy of `bytes` from host memory to this device's `dst` on `stream` (nullptr: the
  // compute stream) and returns, possibly before the copy ran: `host_src` must stay valid and
  // unchanged until it has (record an event on `stream` after this call and wait for it before
  // reusing the buffer). Asynchronous only from allocate_pinned() memory; from other host memory
  // it may block. Work on other streams that reads `dst` must wait for an event recorded after it.
  // The default is copy_from_host(), which completes before it returns (exact for a synchronous
  // device).
  virtual void copy_from_host_async(void* dst, const void* host_src, std::size_t bytes,
                                    void* stream);
  // The other direction: enqueues a copy of `bytes` from this device's `src` into host memory
  // on `stream` (nullptr: the compute stream) and returns, possibly before it ran. The host must
  // not read or write `host_dst` until an event recorded on `stream` after this call has
  // completed; `src` must not be written before then either. Asynchronous only into
  // allocate_pinned() or register_host_memory() memory. The default is copy_to_host().
  virtual void copy_to_host_async(void* host_dst, const void* src, std::size_t bytes,
                                  void* stream);
  // Page-locks `bytes` of existing host memory at `p` (memory from elsewhere, e.g. a
  // communicator's shared buffer) so that asynchronous copies to and from it do not block;
  // undone by unregister_host_memory(p) before the memory goes. Returns false when the memory
  // could not be locked: copies stay correct, they just may block. The default (a synchronous
  // device) locks nothing and returns true.
  virtual bool register_host_memory(void* p, std::size_t bytes);
  virtual void unregister_host_memory(void* p) noexcept;

  // --- streams and events (opaque handles; see cohort/core/stream.hpp for the RAII wrappers) ---
  virtual void* create_stream();
  virtual void destroy_stream(void* stream) noexcept;
  virtual void* create_event();
  virtual void destroy_event(void* event) noexcept;
  // Marks the point reached by `stream`'s work enqueued so far.
  virtual void record_event(void* event, void* stream);
  // Work enqueued on `stream` after this call starts only once `event`'s point is reached. The
  // calling thread does not wait.
  virtual void stream_wait_event(void* stream, void* event);
  // True when the work before the event's last record has finished (also before any record).
  virtual bool query_event(void* event);
  // Blocks the calling thread until query_event would return true.
  virtual void synchronize_event(void* event);
  virtual void synchronize_stream(void* stream);

  // --- op table ---
  // Whether run(call) is implemented for this very case (op, dtype, extents, options). The op
  // front ends ask before every run and fall back to the host device when the answer is no.
  virtual bool supports(const OpCall& call) const = 0;
  // Enqueues the op on the compute stream. Pointers are this device's memory. Throws
  // cohort::Error naming the device and the op for a case supports() denies.
  virtual void run(const OpCall& call) = 0;
};

// How a backend offers its devices to the registry (see backends/registry.cpp). The registry file
// lists one factory per backend, by hand, behind its build flag.
struct DeviceFactory {
  std::string name;  // "cuda", "host"
  int score = 0;     // higher wins when the user asks for the best available device
  // Number of devices of this kind usable now (0 when none); `why_not` explains a 0.
  std::function<int(std::string* why_not)> count;
  // The device with this index (0 <= index < count()); the factory owns it for the program's life.
  std::function<Device&(int index)> get;
};

// Picks a device from `factories` by spec: "" means the environment variable COHORT_DEVICE if set,
// else the best available (highest score with count() > 0). "NAME" means NAME:i with
// i = local_rank % count() when local_rank >= 0 (one GPU per rank on a host), else NAME:0;
// "NAME:i" the i-th. Unknown names, bad indices and unavailable devices throw cohort::Error listing
// what is known and, for an unavailable one, why.
Device& select_device(const std::vector<DeviceFactory>& factories, const std::string& spec,
                      int local_rank = -1);

// This process's rank on its host as a launcher set it (LaunchInfo::from_env(): torchrun/cohortrun,
// else Open MPI, else Slurm), or -1 when no launcher's variables are set. Contradictory or
// non-numeric launcher variables throw cohort::Error naming them.
int launcher_local_rank();

}  // namespace cohort
