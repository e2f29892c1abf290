#pragma once
// Shared by the samples: the no-GPU exit and a wall-clock timer.
#include <chrono>
#include <cstdio>

#include <kiln/kiln.hpp>

namespace sample {

/// True (after saying so) when there is no GPU: the sample then exits 0 without GPU work.
inline bool no_gpu(const char* name) {
  if (kiln::device_count() > 0) return false;
  std::printf("%s: no GPU here (%s); this sample needs one, so it stops.\n", name,
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
