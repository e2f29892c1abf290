#include "kiln/ops/linalg_norm.hpp"
#include "kiln/ops/copying.hpp"
#include "kiln/ops/reductions.hpp"

#include <cmath>
#include <memory>
#include <mutex>
#include <type_traits>

#include <fmt/format.h>

#include "fused_reduction.hpp"
#include "kiln/ops/reduction_kernel.hpp"
#include "kiln/runtime/error.hpp"

namespace kiln::linalg {
namespace {

// |x| and |x|^2 for every type; 16-bit floats go through float.
constexpr const char* kPreamble = R"KILN(
template <class kiln_V, bool kiln_low = kiln_traits<kiln_V>::is_low_float> struct kiln_real_of { typedef kiln_V type; };
template <class kiln_V> struct kiln_real_of<kiln_V, true> { typedef float type; };
typedef typename kiln_real_of<U>::type kiln_R;
template <class kiln_V> __device__ __forceinline__ kiln_R kiln_nabs(const kiln_V& kiln_v) {
  if constexpr (kiln_traits<kiln_V>::is_complex) return kiln_R(abs(kiln_v));
  else { const kiln_R kiln_r = kiln_cast<kiln_R>(kiln_v); return kiln_r < kiln_R(0) ? -kiln_r : kiln_r; }
}
template <class kiln_V> __device__ __forceinline__ kiln_R kiln_nabs2(const kiln_V& kiln_v) {
  if constexpr (kiln_traits<kiln_V>::is_complex) return kiln_R(norm(kiln_v));
  else { const kiln_R kiln_r = kiln_cast<kiln_R>(kiln_v); return kiln_r * kiln_r; }
}
)KILN";

enum Kind { two, one, inf, minus_inf, zero, kKinds };

// One row per ord (detail::reduction_row: name, in, map, reduce, post, identity, reduce type);
// the same row runs an ndarray or, fused, an expression.
constexpr detail::reduction_row kRows[kKinds] = {
    {"kiln_norm2", "T x", "kiln_nabs2(x)", "a + b", "y = kiln_cast<U>(sqrt(a))", "0", "kiln_R"},
    {"kiln_norm1", "T x", "kiln_nabs(x)", "a + b", "y = kiln_cast<U>(a)", "0", "kiln_R"},
    {"kiln_norm_inf", "T x", "kiln_nabs(x)", "(a != a || a > b) ? a : b", "y = kiln_cast<U>(a)", "0", "kiln_R"},
    {"kiln_norm_minus_inf", "T x", "kiln_nabs(x)", "(a != a || a < b) ? a : b", "y = kiln_cast<U>(a)", "", "kiln_R"},
    {"kiln_norm0", "T x", "kiln_R(kiln_nonzero(x) ? 1 : 0)", "a + b", "y = kiln_cast<U>(a)", "0", "kiln_R"},
};

const ReductionKernel& kernel(Kind k) {
  static std::once_flag once[kKinds];
  static std::unique_ptr<ReductionKernel> made[kKinds];
  std::call_once(once[k], [&] {
    const auto& r = kRows[k];
    made[k] = std::make_unique<ReductionKernel>(r.in, "U y", r.map, r.reduce, r.post, r.identity, r.name,
                                                reduction_options{.reduce_type = r.reduce_type, .preamble = kPreamble});
  });
  return *made[k];
}

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
  Kind k = two;
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
    if (matrix && o != 2) throw ValueError(fmt::format("norm: matrix norm ord={} is not supported (none, \"fro\", 1, -1, inf, -inf)", o));
    if (matrix && o == 2) throw ValueError("norm: the matrix 2-norm (largest singular value) is not supported; use ord none or \"fro\"");
    if (o == 2) k = two;
    else if (o == 1) k = one;
    else if (o == INFINITY) k = inf;
    else if (o == -INFINITY) k = minus_inf;
    else if (o == 0) k = zero;
    else throw ValueError(fmt::format("norm: ord={} is not supported (none, 0, 1, 2, inf, -inf)", o));
  }
  const Shape shape = reduced_shape(x.shape(), mask, keepdims);
  if (k == minus_inf && x.size() == 0 && shape_size(shape) > 0)
    throw ValueError("zero-size array to reduction operation minimum which has no identity");
  ndarray out = empty(shape, norm_dtype(x.dtype()));
  const reduce_options ro{.axis = axis, .keepdims = keepdims};
  if constexpr (std::is_same_v<A, ndarray>)
    kernel(k)(x, out, ro);
  else
    detail::fused_reduce(kRows[k], kPreamble, x, nullptr, out, ro);
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

namespace kiln::detail {
const ReductionKernel* fused_norm_kernel(const expr& e, std::string_view name) {
  using namespace kiln::linalg;
  for (int k = 0; k < kKinds; ++k)
    if (std::string_view(kRows[k].name).substr(5) == name) {
      expression_binding b;
      bind_expression(e, b);
      return &fused_reduction_kernel(kRows[k], kPreamble, b);
    }
  return nullptr;
}

}  // namespace kiln::detail
