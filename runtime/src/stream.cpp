#include "kiln/runtime/stream.hpp"

#include <array>

#include "kiln/runtime/capture.hpp"
#include "kiln/runtime/detail/cuda_check.hpp"
#include "kiln/runtime/device.hpp"
#include "kiln/runtime/error.hpp"

namespace kiln {
namespace {

constexpr int kMaxDevices = 64;

// This thread's current stream per device; a null handle is the legacy null stream. The owner
// keeps a kiln-created stream alive while it is current.
struct Slot {
  cudaStream_t handle = nullptr;
  std::shared_ptr<void> owner;
};
struct ThreadStreams {
  std::array<Slot, kMaxDevices> current;
};
ThreadStreams& thread_streams() {
  thread_local ThreadStreams t;
  return t;
}

int checked_device_index(int device) {
  if (device >= kMaxDevices) throw ValueError("kiln supports at most 64 devices per process");
  return device;
}

}  // namespace

Stream::Stream(bool non_blocking) : device_(current_device()) {
  cudaStream_t s = nullptr;
  KILN_CUDA(
      cudaStreamCreateWithFlags(&s, non_blocking ? cudaStreamNonBlocking : cudaStreamDefault));
  handle_ = s;
  int dev = device_;
  owner_ = std::shared_ptr<void>(s, [dev](void* h) {
    int prev = -1;
    cudaGetDevice(&prev);
    if (prev != dev) cudaSetDevice(dev);
    cudaStreamDestroy(static_cast<cudaStream_t>(h));
    if (prev != dev && prev >= 0) cudaSetDevice(prev);
  });
}

Stream Stream::null() { return Stream(nullptr, current_device(), nullptr); }

Stream Stream::borrow(cudaStream_t handle, int device) { return Stream(handle, device, nullptr); }

void Stream::synchronize() const {
  detail::refuse_during_capture("Stream::synchronize()", "it waits for the device");
  require_device();
  KILN_CUDA(cudaStreamSynchronize(handle_));
}

bool Stream::query() const {
  detail::refuse_during_capture("Stream::query()", "it asks the device whether work finished");
  require_device();
  cudaError_t e = cudaStreamQuery(handle_);
  if (e == cudaErrorNotReady) {
    cudaGetLastError();
    return false;
  }
  KILN_CUDA(e);
  return true;
}

capture_status Stream::capture_state() const {
  require_device();
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  const cudaError_t e = cudaStreamIsCapturing(handle_, &status);
  if (e == cudaErrorStreamCaptureImplicit) {
    cudaGetLastError();
    return capture_status::active;
  }
  KILN_CUDA(e);
  switch (status) {
    case cudaStreamCaptureStatusActive:
      return capture_status::active;
    case cudaStreamCaptureStatusInvalidated:
      return capture_status::invalidated;
    default:
      return capture_status::none;
  }
}

Stream current_stream() {
  int dev = current_device();
  const Slot& s = thread_streams().current[checked_device_index(dev)];
  return Stream(s.handle, dev, s.owner);
}

cudaStream_t current_stream_handle() { return current_stream_handle(current_device()); }

cudaStream_t current_stream_handle(int device) {
  return thread_streams().current[checked_device_index(device)].handle;
}

StreamGuard::StreamGuard(const Stream& s)
    : previous_device_(current_device()), device_(checked_device_index(s.device())) {
  Slot& slot = thread_streams().current[device_];
  previous_stream_ = slot.handle;
  previous_owner_ = slot.owner;
  if (device_ != previous_device_) set_current_device(device_);
  slot = Slot{s.handle(), s.owner_};
}

StreamGuard::~StreamGuard() {
  thread_streams().current[device_] = Slot{previous_stream_, std::move(previous_owner_)};
  if (device_ != previous_device_) cudaSetDevice(previous_device_);
}

Event::Event(bool timing) {
  require_device();
  cudaEvent_t e = nullptr;
  KILN_CUDA(cudaEventCreateWithFlags(&e, timing ? cudaEventDefault : cudaEventDisableTiming));
  handle_ = std::shared_ptr<CUevent_st>(e, [](cudaEvent_t h) { cudaEventDestroy(h); });
}

void Event::record(const Stream& s) { KILN_CUDA(cudaEventRecord(handle_.get(), s.handle())); }

void Event::synchronize() const {
  detail::refuse_during_capture("Event::synchronize()", "it waits for the device");
  KILN_CUDA(cudaEventSynchronize(handle_.get()));
}

bool Event::query() const {
  detail::refuse_during_capture("Event::query()", "it asks the device whether work finished");
  cudaError_t e = cudaEventQuery(handle_.get());
  if (e == cudaErrorNotReady) {
    cudaGetLastError();
    return false;
  }
  KILN_CUDA(e);
  return true;
}

float Event::elapsed_ms(const Event& start, const Event& end) {
  float ms = 0;
  KILN_CUDA(cudaEventElapsedTime(&ms, start.handle_.get(), end.handle_.get()));
  return ms;
}

}  // namespace kiln
