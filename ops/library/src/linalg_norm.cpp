#include "kiln/library/linalg_norm.hpp"

#include <fmt/format.h>

#include <cmath>
#include <type_traits>

#include "builtin_reductions.hpp"
#include "kiln/library/copying.hpp"
#include "kiln/library/reductions.hpp"
#include "kiln/runtime/error.hpp"

namespace kiln::linalg {
namespace {

using detail::builtin;

dtype norm_dtype(dtype t) {
  if (t == bool_ || t.is_integer()) return float64;
  if (t == complex64) return float32;
  if (t == complex128) return float64;
  return t;
}

template <class A>
ndarray run(const A& x, std::optional<double> ord, bool fro, axes axis, bool keepdims) {
  if constexpr (std::is_same_v<A, ndarray>)
    if (!x.defined()) throw ValueError("norm: the array is an empty ndarray handle");
  const std::uint64_t mask = axis.mask(x.ndim());
  const int naxes = __builtin_popcountll(mask);
  const bool matrix = axis.is_all() ? x.ndim() == 2 : naxes == 2;
  if (!axis.is_all() && naxes > 2) throw ValueError("norm: improper number of dimensions to norm");
  if (fro && !matrix) throw ValueError("norm: invalid norm order 'fro' for vectors");
  builtin k = builtin::norm2;
  if (ord) {
    const double o = *ord;
    if (matrix && (o == 1 || o == -1 || o == INFINITY || o == -INFINITY)) {
      // NumPy's induced matrix norms: the largest (or smallest) column sum of |x| for ord +-1,
      // row sum for ord +-inf. Two reductions: the sums keep their axis, then max or min.
      int rc[2] = {0, 1}, n = 0;
      for (int d = 0; d < x.ndim() && n < 2; ++d)
        if (mask >> d & 1) rc[n++] = d;
      const bool columns = o == 1 || o == -1;
      const int summed = columns ? rc[0] : rc[1], across = columns ? rc[1] : rc[0];
      const ndarray sums = run(x, 1.0, false, axes{summed}, true);
      const ndarray m = o > 0 ? max(sums, axes{across}, true) : min(sums, axes{across}, true);
      return keepdims ? m : reshape(m, reduced_shape(x.shape(), mask, false));
    }
    if (matrix && o != 2)
      throw ValueError(fmt::format(
          "norm: matrix norm ord={} is not supported (none, \"fro\", 1, -1, inf, -inf)", o));
    if (matrix && o == 2)
      throw ValueError(
          "norm: the matrix 2-norm (largest singular value) is not supported; use ord none or "
          "\"fro\"");
    if (o == 2)
      k = builtin::norm2;
    else if (o == 1)
      k = builtin::norm1;
    else if (o == INFINITY)
      k = builtin::norm_inf;
    else if (o == -INFINITY)
      k = builtin::norm_minus_inf;
    else if (o == 0)
      k = builtin::norm0;
    else
      throw ValueError(fmt::format("norm: ord={} is not supported (none, 0, 1, 2, inf, -inf)", o));
  }
  const Shape shape = reduced_shape(x.shape(), mask, keepdims);
  if (k == builtin::norm_minus_inf && x.size() == 0 && shape_size(shape) > 0)
    throw ValueError("zero-size array to reduction operation minimum which has no identity");
  ndarray out = empty(shape, norm_dtype(x.dtype()));
  const reduce_options ro{.axis = axis, .keepdims = keepdims};
  const reduction_code& code = detail::builtin_code(k);
  if constexpr (std::is_same_v<A, ndarray>)
    reduction_kernel(code)(x, out, ro);
  else
    reduce_expression(code, x, nullptr, out, ro);
  return out;
}

template <class A>
ndarray norm_fro(const A& x, std::string_view ord, axes axis, bool keepdims) {
  if (ord != "fro") throw ValueError(fmt::format("norm: invalid norm order '{}'", ord));
  const bool matrix = axis.is_all() ? x.ndim() == 2 : axis.size() == 2;
  if (!matrix) throw ValueError("norm: invalid norm order 'fro' for vectors");
  return run(x, std::nullopt, true, axis, keepdims);
}

}  // namespace

ndarray norm(const ndarray& x, std::optional<double> ord, axes axis, bool keepdims) {
  return run(x, ord, false, axis, keepdims);
}
ndarray norm(const ndarray& x, std::string_view ord, axes axis, bool keepdims) {
  return norm_fro(x, ord, axis, keepdims);
}
ndarray norm(const expr& x, std::optional<double> ord, axes axis, bool keepdims) {
  return run(x, ord, false, axis, keepdims);
}
ndarray norm(const expr& x, std::string_view ord, axes axis, bool keepdims) {
  return norm_fro(x, ord, axis, keepdims);
}

}  // namespace kiln::linalg
