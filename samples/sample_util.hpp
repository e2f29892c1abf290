#pragma once
// Shared by the samples: the no-GPU exit and a wall-clock timer.
#include <chrono>
#include <cstdio>
#include <kiln/kiln.hpp>

namespace sample {

/// Exit status of a sample that could not do its work here (ctest reports it SKIPPED).
inline constexpr int kSkipped = 77;

/// True (after saying so) when there is no GPU: the sample then exits kSkipped without GPU
/// work, never 0, so nothing reports it as having run.
inline bool no_gpu(const char* name) {
  if (kiln::device_count() > 0) return false;
  std::printf("SKIPPED: %s: no GPU here (%s); this sample needs one.\n", name,
              kiln::no_device_reason().c_str());
  return true;
}

/// Milliseconds of wall time spent in fn().
template <class F>
double wall_ms(F&& fn) {
  auto t0 = std::chrono::steady_clock::now();
  fn();
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace sample
