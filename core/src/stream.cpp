// Stream and Event owners, and the Device defaults for streams, events, pinned memory and
// asynchronous uploads that are exact for a synchronous device (work is finished when its call
// returns).
#include "cohort/core/stream.hpp"

#include <cstdlib>
#include <utility>

#include "cohort/core/error.hpp"

namespace cohort {

namespace {
// A synchronous device's stream and event handles only need to be distinct and non-null.
char g_sync_handle;
}  // namespace

void* Device::create_stream() { return &g_sync_handle; }
void Device::destroy_stream(void*) noexcept {}
void* Device::create_event() { return &g_sync_handle; }
void Device::destroy_event(void*) noexcept {}
void Device::record_event(void*, void*) {}
void Device::stream_wait_event(void*, void*) {}
bool Device::query_event(void*) { return true; }
void Device::synchronize_event(void*) {}
void Device::synchronize_stream(void* stream) {
  if (stream == nullptr) synchronize();
}

void* Device::allocate_pinned(std::size_t bytes) {
  if (bytes == 0) return nullptr;
  void* p = std::aligned_alloc(64, (bytes + 63) / 64 * 64);
  COHORT_CHECK(p != nullptr, "out of host memory allocating ", bytes, " staging bytes for ",
               name());
  return p;
}
void Device::deallocate_pinned(void* p, std::size_t) noexcept { std::free(p); }
void Device::copy_from_host_async(void* dst, const void* host_src, std::size_t bytes, void*) {
  copy_from_host(dst, host_src, bytes);
}
void Device::copy_to_host_async(void* host_dst, const void* src, std::size_t bytes, void*) {
  copy_to_host(host_dst, src, bytes);
}
bool Device::register_host_memory(void*, std::size_t) { return true; }
void Device::unregister_host_memory(void*) noexcept {}

Stream::Stream(Device& device) : device_(&device), handle_(device.create_stream()), owned_(true) {}
Stream Stream::compute(Device& device) { return Stream(device, nullptr, false); }
Stream::~Stream() {
  if (owned_) device_->destroy_stream(handle_);
}
Stream::Stream(Stream&& o) noexcept
    : device_(o.device_), handle_(std::exchange(o.handle_, nullptr)),
      owned_(std::exchange(o.owned_, false)) {}
void Stream::wait(const Event& event) { device_->stream_wait_event(handle_, event.handle()); }
void Stream::synchronize() { device_->synchronize_stream(handle_); }

Event::Event(Device& device) : device_(&device), handle_(device.create_event()) {}
Event::~Event() {
  if (handle_) device_->destroy_event(handle_);
}
Event::Event(Event&& o) noexcept : device_(o.device_), handle_(std::exchange(o.handle_, nullptr)) {}
void Event::record() { device_->record_event(handle_, nullptr); }
void Event::record(const Stream& stream) { device_->record_event(handle_, stream.handle()); }
bool Event::query() const { return device_->query_event(handle_); }
void Event::synchronize() const { device_->synchronize_event(handle_); }

}  // namespace cohort
