#pragma once
// kiln's own elementwise kernels, for creation and conversion routines (astype, copy, fill,
// full, ...). They are ordinary ElementwiseKernels built once per process, so they share the
// whole pipeline: caches, layouts, vectorized contiguous path, broadcasting.
//
//   kiln::builtin::cast_kernel()(src, dst);              // dst = src.astype(dst.dtype()), any pair
//   kiln::builtin::copy_kernel()(src, dst);              // same dtype (broadcasts src to dst)
//   kiln::builtin::fill_kernel(dst.dtype())(3.5, dst);   // every element = 3.5 in dst's dtype
//   // arange/linspace and friends: one process-wide kernel per routine with fixed-dtype
//   // scalar inputs, the output's dtype a placeholder, e.g.
//   //   static const ElementwiseKernel arange("float64 start, float64 step", "T y",
//   //                                         "y = kiln_cast<T>(start + i * step)",
//   "kiln_arange");
//   //   arange(0.0, 0.5, out);   // the output fixes the loop shape and binds T
//
// Scalars passed to a fixed-dtype parameter are converted with NumPy's assignment rules
// (ValueError for an integer that does not fit), so fill_kernel(uint8)(300, dst) throws.
#include "kiln/engine/elementwise_kernel.hpp"
#include "kiln/runtime/dtype.hpp"

namespace kiln::builtin {

/// "T x" -> "U y": y = kiln_cast<U>(x). Pass the output (its dtype is the target).
const ElementwiseKernel& cast_kernel();
/// "T x" -> "T y": y = x.
const ElementwiseKernel& copy_kernel();
/// "<t> value" -> "<t> y": y = value, for an output of dtype t. Call with (value, out).
const ElementwiseKernel& fill_kernel(dtype t);
/// arange: "int64 start, int64 step" -> "T y" (exact for big integers), and the float64 form.
const ElementwiseKernel& arange_int_kernel();
const ElementwiseKernel& arange_float_kernel();
/// linspace: "float64 start, float64 step, float64 stop, int64 last, bool floor_it" -> "T y";
/// element `last` is exactly `stop`; integer outputs take the floor (NumPy 2).
const ElementwiseKernel& linspace_kernel();

}  // namespace kiln::builtin
