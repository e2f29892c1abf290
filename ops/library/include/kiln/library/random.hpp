#pragma once
// Random numbers on the GPU with NumPy's Generator interface, backed by cuRAND's host API
// (Philox4x32-10, legacy ordering). The same seed gives the same numbers on every run and every
// GPU: each call sets the generator's seed and offset explicitly and then advances the offset
// past what it used, so successive calls continue one stream and never overlap.
//
//   auto rng = kiln::random::default_rng(42);
//   auto u = rng.random({1000, 3});                        // float64, uniform in [0, 1)
//   auto z = rng.standard_normal({1 << 20}, kiln::float32);
//   auto n = rng.normal(10.0, 2.0, {500});                 // mean 10, standard deviation 2
//   auto f = rng.uniform(-1.0, 1.0, {8});                  // uniform in [low, high)
//   auto k = rng.integers(0, 6, {100});                    // int64 in [0, 6)
//
// Work runs on the current stream of the current device. A Generator is a handle: copies share
// the state (as a Python object would). Not for concurrent use from several host threads.
// Argument errors (TypeError for the dtype, ValueError for ranges) come before device work.
// Not during a CUDA graph capture (kiln::capture): cuRAND resets its generator for each call's
// seed and offset and waits for the device doing it, so a call in a capture raises
// CaptureError; draw the numbers before the capture into an array the captured work reads.
#include <cstdint>
#include <memory>

#include "kiln/runtime/ndarray.hpp"

namespace kiln::random {

class Generator {
 public:
  explicit Generator(std::uint64_t seed);

  /// Uniform in [0, 1); dtype float32 or float64.
  ndarray random(const Shape& shape, dtype t = float64);
  /// Standard normal (mean 0, standard deviation 1); float32 or float64.
  ndarray standard_normal(const Shape& shape, dtype t = float64);
  /// Normal with mean `loc` and standard deviation `scale` (>= 0, else ValueError).
  ndarray normal(double loc, double scale, const Shape& shape, dtype t = float64);
  /// Uniform in [low, high) (finite bounds, else ValueError).
  ndarray uniform(double low, double high, const Shape& shape, dtype t = float64);
  /// Integers in [low, high) for any integer dtype (int8-int64, uint8-uint64). ValueError when
  /// high <= low or the range does not fit the dtype. Bias below (high - low) / 2^64.
  ndarray integers(std::int64_t low, std::int64_t high, const Shape& shape, dtype t = int64);

  std::uint64_t seed() const noexcept;
  /// Philox counter offset the next call starts at (grows with every call).
  std::uint64_t offset() const noexcept;

  struct State;

 private:
  std::shared_ptr<State> state_;
};

/// NumPy's numpy.random.default_rng(seed).
Generator default_rng(std::uint64_t seed);

}  // namespace kiln::random
