// Streams and events as values: RAII owners of a device's opaque stream and event handles
// (Device::create_stream, ...). This is how work on different streams is ordered without
// synchronising a whole device: a communicator records nothing and waits for nothing it does not
// need.
//
//   cohort::Event ready(dev);
//   ready.record();                         // after the compute that wrote a gradient
//   comm_stream.wait(ready);                // the all-reduce on comm_stream starts after it
//   ...                                     // host code goes on at once
//   done.record(comm_stream);
//   cohort::Stream::compute(dev).wait(done);  // the optimizer step waits on the device
//
// On the host device every call here is trivial (work is done when its call returns).
// Not thread-safe: one thread uses one Stream or Event at a time.
#pragma once

#include "cohort/core/device.hpp"

namespace cohort {

class Event;

class Stream {
 public:
  explicit Stream(Device& device);  // a new stream on `device`
  // The device's compute stream, not owned (nothing is destroyed with the returned value).
  static Stream compute(Device& device);
  ~Stream();
  Stream(Stream&& other) noexcept;
  Stream& operator=(Stream&&) = delete;
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;

  // Work enqueued on this stream from now on waits for `event`; the caller does not block.
  void wait(const Event& event);
  void synchronize();  // blocks until this stream's work so far has finished
  Device& device() const { return *device_; }
  void* handle() const { return handle_; }  // nullptr for the compute stream

 private:
  Stream(Device& device, void* handle, bool owned) : device_(&device), handle_(handle), owned_(owned) {}
  Device* device_;
  void* handle_;
  bool owned_;
};

class Event {
 public:
  explicit Event(Device& device);
  ~Event();
  Event(Event&& other) noexcept;
  Event& operator=(Event&&) = delete;
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;

  void record();                       // on the compute stream
  void record(const Stream& stream);
  bool query() const;                  // the recorded work has finished (true before any record)
  void synchronize() const;            // blocks until it has
  Device& device() const { return *device_; }
  void* handle() const { return handle_; }

 private:
  Device* device_;
  void* handle_;
};

}  // namespace cohort
