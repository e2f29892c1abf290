#pragma once
// Sorting along an axis, NumPy's way, with CUB's radix sorts (compiled with nvcc for sm_90 and
// PTX for newer GPUs; ops/cuda/sort_cub.cu). Results are new C-contiguous arrays.
//
//   auto x = kiln::asarray<float>({3, NAN, -1, 2, 2, 0}, kiln::Shape{2, 3});
//   kiln::sort(x);             // [[-1, 3, nan], [0, 2, 2]]   (NaNs last, along the last axis)
//   kiln::argsort(x, 0);       // int64 [[1, 1, 0], [0, 0, 1]] (down each column; NaN last)
//
// dtypes: bool, int8-int64, uint8-uint64, float16, bfloat16, float32, float64. Complex arrays
// raise TypeError (NumPy's lexicographic complex order is not implemented). Floats: every NaN
// sorts after +inf (sort returns them as one canonical quiet NaN); argsort treats -0.0 and
// +0.0 as equal, so ties between them keep their input order as in NumPy's stable argsort.
// Any axis and any layout: the axis is moved last with a copy when needed. One row uses
// cub::DeviceRadixSort, several rows cub::DeviceSegmentedSort (both stable). Runs on the
// current stream with scratch from the memory pool. Errors (TypeError, ValueError for the
// axis or a 0-d array) are raised before the device is touched.
#include <cstdint>

#include "kiln/runtime/ndarray.hpp"

namespace kiln {

/// A sorted copy of `a` along `axis` (default: the last).
ndarray sort(const ndarray& a, std::int64_t axis = -1);
/// int64 indices that sort `a` along `axis`, stable (NumPy's kind="stable").
ndarray argsort(const ndarray& a, std::int64_t axis = -1);

namespace detail {
/// The checks sort/argsort make before any device work (CPU-testable): returns the axis in
/// [0, ndim). Throws TypeError for complex dtypes, ValueError for 0-d arrays or a bad axis.
int check_sort_args(const char* op, dtype t, int ndim, std::int64_t axis);
}  // namespace detail

}  // namespace kiln
