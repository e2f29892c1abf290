#pragma once
// Array creation that needs a kernel, NumPy's way. Each is one JIT-compiled elementwise kernel
// through the same pipeline (and caches) as user kernels.
//
//   auto a = kiln::ones({2, 3});                          // float64
//   auto b = kiln::full({4}, 7, kiln::int16);             // [7, 7, 7, 7]
//   auto r = kiln::arange(0, 10, 3);                      // int64 [0, 3, 6, 9]
//   auto l = kiln::linspace(0.0, 1.0, 5);                 // [0, .25, .5, .75, 1]
//   auto c = a.T().astype(kiln::float32);                 // any layout, any dtype pair
#include <optional>

#include "kiln/runtime/ndarray.hpp"
#include "kiln/runtime/scalar.hpp"

namespace kiln {

/// Every element `value`; dtype defaults to the value's C++ type (5 -> int32, 5.0 -> float64).
ndarray full(const Shape& shape, const scalar& value, std::optional<dtype> t = std::nullopt);
ndarray ones(const Shape& shape, dtype t = float64);
ndarray full_like(const ndarray& a, const scalar& value, std::optional<dtype> t = std::nullopt);
ndarray ones_like(const ndarray& a, std::optional<dtype> t = std::nullopt);

/// Values in [start, stop) spaced by step. dtype: int64 when start, stop and step are all
/// integers, float64 otherwise, unless given. Length ceil((stop - start) / step), at least 0.
ndarray arange(const scalar& start, const scalar& stop, const scalar& step = 1,
               std::optional<dtype> t = std::nullopt);
/// arange(0, stop).
ndarray arange(const scalar& stop);

/// `num` evenly spaced values from start to stop (included when endpoint). float64 unless
/// given; an integer dtype takes the floor of each value (NumPy 2).
ndarray linspace(double start, double stop, std::int64_t num = 50, bool endpoint = true,
                 std::optional<dtype> t = std::nullopt);

}  // namespace kiln
