#pragma once
// Streams and events. Each host thread has a current stream per device (default: the legacy
// null stream, as in CuPy); kernels and copies run on it. StreamGuard is `with stream:`.
//
//   kiln::Stream s;                       // a new stream on the current device
//   { kiln::StreamGuard use(s); k(x, y); } // k runs on s
//   kiln::Event start, stop;
//   start.record(s); k(x, y); stop.record(s); stop.synchronize();
//   float ms = kiln::Event::elapsed_ms(start, stop);
#include <cuda_runtime_api.h>

#include <memory>

namespace kiln {

/// Whether a stream's work is being recorded into a CUDA graph instead of running.
enum class capture_status { none, active, invalidated };

class Stream {
 public:
  /// Creates a stream on the current device. non_blocking: does not sync with the null stream.
  explicit Stream(bool non_blocking = false);
  /// The legacy default (null) stream of the current device.
  static Stream null();
  /// Wraps a stream someone else owns (not destroyed by kiln).
  static Stream borrow(cudaStream_t handle, int device);

  cudaStream_t handle() const noexcept { return handle_; }
  int device() const noexcept { return device_; }
  bool is_null() const noexcept { return handle_ == nullptr; }
  void synchronize() const;
  /// True when all work queued so far has finished.
  bool query() const;
  /// Whether work queued on this stream is being captured into a CUDA graph, by kiln or anyone
  /// (cudaStreamIsCapturing). The legacy null stream reports `active` while a blocking stream
  /// of its device captures: work queued on it would join that capture and break it.
  kiln::capture_status capture_state() const;
  bool is_capturing() const { return capture_state() != kiln::capture_status::none; }
  friend bool operator==(const Stream& a, const Stream& b) noexcept {
    return a.handle_ == b.handle_ && a.device_ == b.device_;
  }

 private:
  friend Stream current_stream();
  friend class StreamGuard;
  friend class MemoryPool;  // keeps the streams of cached blocks alive
  Stream(cudaStream_t h, int device, std::shared_ptr<void> owner)
      : handle_(h), device_(device), owner_(std::move(owner)) {}
  cudaStream_t handle_ = nullptr;
  int device_ = 0;
  std::shared_ptr<void> owner_;  // destroys the stream with the last copy
};

/// The current stream of this thread on the current device.
Stream current_stream();
/// Just the handle; the cheap form used on launch paths.
cudaStream_t current_stream_handle();
/// The handle of this thread's current stream on `device` (which the caller knows is valid).
cudaStream_t current_stream_handle(int device);

/// Makes `s` the current stream of its device on this thread for a scope (and makes its device
/// current), restoring both afterwards.
class StreamGuard {
 public:
  explicit StreamGuard(const Stream& s);
  ~StreamGuard();
  StreamGuard(const StreamGuard&) = delete;
  StreamGuard& operator=(const StreamGuard&) = delete;

 private:
  int previous_device_, device_;
  cudaStream_t previous_stream_;
  std::shared_ptr<void> previous_owner_;
};

class Event {
 public:
  explicit Event(bool timing = true);
  void record(const Stream& s = current_stream());
  void synchronize() const;
  bool query() const;
  cudaEvent_t handle() const noexcept { return handle_.get(); }
  /// Milliseconds between two recorded timing events.
  static float elapsed_ms(const Event& start, const Event& end);

 private:
  std::shared_ptr<CUevent_st> handle_;
};

}  // namespace kiln
