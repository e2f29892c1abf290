#pragma once
// Copies and conversions of arrays that need a kernel (any layout), NumPy's way. The ndarray
// members of the same names (x.copy(), x.astype(t), x.fill(v), x.reshape(s), x.ravel(),
// x.to_device(d)) forward here.
//
//   auto c = kiln::copy(x.T());                 // C-contiguous copy of a view
//   auto f = kiln::astype(x, kiln::float32);    // NumPy's casting of values
//   kiln::fill(y, 2.5);                         // every element, any layout
//   auto r = kiln::reshape(x.T(), {6});         // a view when strides allow, else a copy
#include "kiln/runtime/ndarray.hpp"

namespace kiln {

/// A C-contiguous copy (any layout, any source).
ndarray copy(const ndarray& a);
/// A converted copy, with NumPy's casting of values (float->int truncates, complex->real
/// drops the imaginary part, x->bool is x != 0).
ndarray astype(const ndarray& a, dtype t);
/// Sets every element of `a` (any layout) to `value` with NumPy's assignment rules
/// (ValueError for an integer that does not fit).
void fill(ndarray& a, const scalar& value);
/// NumPy's reshape: a view when strides allow, else a C-order copy. One dimension may be -1.
ndarray reshape(const ndarray& a, const Shape& shape);
/// A view when C-contiguous, else a C-order copy.
ndarray ravel(const ndarray& a);
/// A contiguous copy on another device (peer copy when possible, else staged).
ndarray to_device(const ndarray& a, int device);

}  // namespace kiln
