// Bucket buffers (bucket_buffer.hpp): a flat tensor on the gradients' device that holds the
// bucket's gradients back to back (every reducer), where gradients that are views into it need no
// copy; and HostStage, the asynchronous host copy of such a bucket for a communicator that cannot
// take device memory.
#include "reducers/bucket_buffer.hpp"

#include <utility>

#include "reducer.hpp"

namespace cohort::parallel::detail {

namespace {
// Whether g already is flat's elements [off, off + numel).
bool is_view(const Tensor& g, const Tensor& flat, std::int64_t off) {
  return g.raw() == static_cast<char*>(flat.raw()) + off * static_cast<std::int64_t>(sizeof(float));
}

// The collective of a HostStage, started once the download it reads has landed.
class DeferredWork final : public comm::Work {
 public:
  DeferredWork(const Event& downloaded, bool& issued, std::function<comm::WorkHandle()> start)
      : downloaded_(downloaded), issued_(issued), start_(std::move(start)) {}

  bool test() override {
    if (!inner_) {
      if (!downloaded_.query()) return false;
      start();
    }
    return inner_->test();
  }
  void wait() override {
    if (!inner_) {
      downloaded_.synchronize();
      start();
    }
    inner_->wait();
  }

 private:
  void start() {
    inner_ = start_();
    issued_ = true;
  }
  // The HostStage's event and flag; it outlives the Work (DDP waits for every Work before the
  // reducers go).
  const Event& downloaded_;
  bool& issued_;
  std::function<comm::WorkHandle()> start_;
  comm::WorkHandle inner_;
};
}  // namespace

void pack_into_bucket(const std::vector<Tensor>& grads, Tensor& flat) {
  std::int64_t off = 0;
  for (const Tensor& g : grads) {
    if (!is_view(g, flat, off)) flat.slice(off, off + g.numel()).copy_from(g.reshape({-1}));
    off += bucket_slot(g.numel());
  }
}

void unpack_from_bucket(const Tensor& flat, const std::vector<Tensor>& grads) {
  std::int64_t off = 0;
  for (const Tensor& g : grads) {
    if (!is_view(g, flat, off)) {
      Tensor dst = g;  // shares storage
      dst.copy_from(flat.slice(off, off + g.numel()));
    }
    off += bucket_slot(g.numel());
  }
}

HostStage::HostStage(comm::Communicator& comm, Device& dev, std::size_t bytes)
    : dev_(dev), host_(comm.alloc_buffer(bytes)), stream_(dev), downloaded_(dev), uploaded_(dev) {
  pinned_ = dev.register_host_memory(host_->data(), host_->bytes());
}

HostStage::~HostStage() {
  try {
    downloaded_.synchronize();
    uploaded_.synchronize();
  } catch (const std::exception&) {
    // A failed device: nothing more can land in the host memory; destructors do not throw.
  }
  if (pinned_) dev_.unregister_host_memory(host_->data());
}

void HostStage::download(const void* device_src) {
  issued_ = false;
  order_after_compute(dev_, stream_);
  dev_.copy_to_host_async(host_->data(), device_src, host_->bytes(), stream_.handle());
  downloaded_.record(stream_);
}

// Never starts the collective here, even when the download has landed already: DDP may launch
// bucket k+1 while bucket k's deferred collective still waits for its first test(), and starting
// k+1 inline would issue it first on this rank only (the other ranks' order differs: a collective
// mismatch, review finding G1). The Work starts it in test() or wait(), which DDP calls in bucket
// order (DistributedDataParallel::poll, finish_gradients_now).
comm::WorkHandle HostStage::then(std::function<comm::WorkHandle()> start) {
  return std::make_shared<DeferredWork>(downloaded_, issued_, std::move(start));
}

void HostStage::upload(void* device_dst) {
  dev_.copy_from_host_async(device_dst, host_->data(), host_->bytes(), nullptr);
  uploaded_.record();
}

}  // namespace cohort::parallel::detail
