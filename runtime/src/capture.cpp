#include "kiln/runtime/capture.hpp"

#include <fmt/format.h>

#include "kiln/runtime/error.hpp"

namespace kiln {

bool capturing() noexcept { return detail::t_thread_capture != nullptr; }

namespace detail {

void throw_capture_refusal(std::string_view call, std::string_view why) {
  throw CaptureError(fmt::format(
      "{} cannot be captured into a CUDA graph: {}. This thread is capturing (kiln::capture); "
      "call it before the capture or after it (after replay() for results of the graph). The "
      "capture is still going on and the stream is usable",
      call, why));
}

RelaxedCaptureMode::RelaxedCaptureMode() noexcept {
  cudaStreamCaptureMode mode = cudaStreamCaptureModeRelaxed;
  if (cudaThreadExchangeStreamCaptureMode(&mode) == cudaSuccess) {
    previous_ = mode;
    set_ = true;
  } else {
    cudaGetLastError();  // no driver: nothing to relax, and the caller's call will say so
  }
}

RelaxedCaptureMode::~RelaxedCaptureMode() {
  if (!set_) return;
  cudaStreamCaptureMode mode = previous_;
  if (cudaThreadExchangeStreamCaptureMode(&mode) != cudaSuccess) cudaGetLastError();
}

}  // namespace detail
}  // namespace kiln
