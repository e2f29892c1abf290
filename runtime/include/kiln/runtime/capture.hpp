#pragma once
// Stream capture as the runtime sees it. kiln captures CUDA graphs per host thread
// (kiln::capture in <kiln/engine/graph.hpp> sets the state below for its duration, with CUDA's
// thread-local capture mode), and every runtime call that a capture cannot record checks it
// first, so the call raises CaptureError naming itself before any CUDA call could invalidate
// the capture:
//
//   kiln::graph g = kiln::capture(s, [&] {
//     y = x * 2;           // recorded
//     y.get<float>();      // CaptureError: "ndarray::get() cannot be captured ..."
//   });
//
//   if (kiln::capturing()) ...   // this thread is inside a kiln capture
#include <cuda_runtime_api.h>

#include <string_view>

namespace kiln {

/// True while this thread is inside a kiln graph capture (kiln::capture, kiln::graph_capture).
bool capturing() noexcept;

namespace detail {

/// What this thread is capturing. Set by the engine's capture scope; read on launch paths,
/// so it is one thread-local pointer.
struct ThreadCapture {
  cudaStream_t stream = nullptr;  // the capturing stream
  int device = 0;
  unsigned long long id = 0;  // CUDA's id of the capture sequence
  void* recorder = nullptr;   // the engine's record of the kernels captured so far
};

inline thread_local ThreadCapture* t_thread_capture = nullptr;

/// This thread's capture, or nullptr (the common case: one thread-local load).
inline ThreadCapture* thread_capture() noexcept { return t_thread_capture; }

/// Makes `c` this thread's capture for a scope, restoring the previous state after.
class ThreadCaptureScope {
 public:
  explicit ThreadCaptureScope(ThreadCapture& c) noexcept : previous_(t_thread_capture) {
    t_thread_capture = &c;
  }
  ~ThreadCaptureScope() { t_thread_capture = previous_; }
  ThreadCaptureScope(const ThreadCaptureScope&) = delete;
  ThreadCaptureScope& operator=(const ThreadCaptureScope&) = delete;

 private:
  ThreadCapture* previous_;
};

/// Throws CaptureError: "`call` cannot be captured into a CUDA graph: `why`; ...".
[[noreturn]] void throw_capture_refusal(std::string_view call, std::string_view why);

/// Refuses `call` while this thread captures. Call it before the first CUDA call of work that
/// synchronizes or reads device memory on the host.
inline void refuse_during_capture(std::string_view call, std::string_view why) {
  if (t_thread_capture) [[unlikely]]
    throw_capture_refusal(call, why);
}

/// For a scope, this thread may make CUDA calls a thread-local capture would refuse although
/// they do not touch the capturing stream (module loading, library handle creation, an
/// allocation kiln waits for on a side stream). cudaThreadExchangeStreamCaptureMode in
/// push-pop fashion; costs two runtime calls, so it is only for miss paths.
class RelaxedCaptureMode {
 public:
  RelaxedCaptureMode() noexcept;
  ~RelaxedCaptureMode();
  RelaxedCaptureMode(const RelaxedCaptureMode&) = delete;
  RelaxedCaptureMode& operator=(const RelaxedCaptureMode&) = delete;

 private:
  cudaStreamCaptureMode previous_ = cudaStreamCaptureModeRelaxed;
  bool set_ = false;
};

}  // namespace detail
}  // namespace kiln
