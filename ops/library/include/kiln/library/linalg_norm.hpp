#pragma once
// kiln::linalg::norm: NumPy's vector and Frobenius norms, one reduction kernel each.
//
//   auto n = kiln::linalg::norm(x);                       // 2-norm of all elements
//   auto r = kiln::linalg::norm(x, 1.0, 1);               // 1-norm of each row
//   auto i = kiln::linalg::norm(x, INFINITY, -1, true);   // max |x| along the last axis
//
// ord: none or 2 (sqrt of the sum of |x|^2; over two axes: Frobenius), 1 (sum |x|), inf
// (max |x|), -inf (min |x|), 0 (count of non-zeros). Over two axes (or a 2-D array with every
// axis): none or "fro" (Frobenius), 1 / -1 (largest / smallest column sum of |x|), inf / -inf
// (largest / smallest row sum); the matrix 2-norm (a singular value) raises ValueError.
// Result dtype: float64 for ints and bool, the real type of
// complex inputs, the input's float type otherwise (float16 accumulates in float32).
//
// An expression is fused: `norm(x - y)` is ONE reduction kernel reading x and y (no x - y array).
#include <optional>
#include <string_view>

#include "kiln/engine/expression.hpp"
#include "kiln/runtime/axes.hpp"
#include "kiln/runtime/ndarray.hpp"

namespace kiln::linalg {

ndarray norm(const ndarray& x, std::optional<double> ord = std::nullopt, axes axis = {},
             bool keepdims = false);
/// ord "fro" (Frobenius, as ord none).
ndarray norm(const ndarray& x, std::string_view ord, axes axis = {}, bool keepdims = false);
/// The same over an expression, fused into one reduction kernel.
ndarray norm(const expr& x, std::optional<double> ord = std::nullopt, axes axis = {},
             bool keepdims = false);
ndarray norm(const expr& x, std::string_view ord, axes axis = {}, bool keepdims = false);

}  // namespace kiln::linalg
