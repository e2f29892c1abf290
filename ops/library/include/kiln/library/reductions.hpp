#pragma once
// NumPy's reductions, each one generated reduction kernel (ReductionKernel): free functions
// here, and the ndarray members of the same names (x.sum(1), x.max(), x.var({0, 2}, true)).
//
//   auto s = kiln::sum(x);                               // every axis: 0-d, int64 for ints
//   auto m = kiln::mean(x, 1, /*keepdims=*/true);        // float64 for ints
//   auto v = kiln::var(x, {0, 2}, false, {.ddof = 1});
//   kiln::sum(x, -1, false, {.dtype = kiln::int8});       // accumulate (and wrap) in int8
//   kiln::max(x, 0, false, {.out = z});                  // into z (any dtype: cast to it)
//
// Result dtypes as NumPy 2: sum/prod of bool and signed ints -> int64, unsigned -> uint64,
// float16/bfloat16 accumulate in float32 and return their own type; mean/var/std of bool and
// ints -> float64; argmin/argmax/count_nonzero -> int64; all/any -> bool. NaN propagates
// through min/max (the nan* forms skip NaN; all-NaN gives NaN); argmin/argmax return the
// first of equal values (and the first NaN). Empty reductions: sum 0, prod 1, mean NaN,
// all true, any false; min/max/nanmin/nanmax/argmin/argmax over a zero-length axis throw
// ValueError as NumPy does, even when the result is empty (shape (0, 3) over axis 0; over
// axis 0 of (3, 0) the result is an empty array). var/std are nan where an element is inf or
// nan, for every axis length (one element too), and divide by max(N - ddof, 0). A 0-d array
// with an int axis 0 or -1 reduces as with every axis (mean, var and std refuse it, as NumPy).
// Complex inputs: sum, prod, mean, nansum, nanprod, count_nonzero, all_of, any (not the
// ordering reductions, nor var/std: TypeError).
//
// Each also takes an expression (expression.hpp) and fuses its map: `sum(x * x)`,
// `max(abs(x - y), 1)` run ONE reduction kernel reading x and y, with no temporary array, and
// the result dtype NumPy gives for the expression's dtype. The kernel is generated once per
// expression structure and reduction; a repeated call hashes the tree and builds no text.
#include <optional>
#include <string_view>
#include <utility>
#include <vector>

#include "kiln/engine/expression.hpp"
#include "kiln/runtime/axes.hpp"
#include "kiln/runtime/ndarray.hpp"

namespace kiln {

class ReductionKernel;

struct numpy_reduce_args {
  /// Accumulate and return in this dtype (sum, prod, mean, var, std, nansum, nanprod, nanmean).
  std::optional<kiln::dtype> dtype;
  /// Write the result here (its shape must be the reduced shape; values are cast to its dtype).
  std::optional<ndarray> out;
  /// var/std: divide by N - ddof.
  int ddof = 0;
};
/// The name before 0.2 (too close to ReductionKernel's per-call reduce_options).
using reduce_args [[deprecated("renamed numpy_reduce_args")]] = numpy_reduce_args;

ndarray sum(const ndarray& a, axes axis = {}, bool keepdims = false,
            const numpy_reduce_args& args = {});
ndarray prod(const ndarray& a, axes axis = {}, bool keepdims = false,
             const numpy_reduce_args& args = {});
ndarray min(const ndarray& a, axes axis = {}, bool keepdims = false,
            const numpy_reduce_args& args = {});
ndarray max(const ndarray& a, axes axis = {}, bool keepdims = false,
            const numpy_reduce_args& args = {});
inline ndarray amin(const ndarray& a, axes axis = {}, bool keepdims = false,
                    const numpy_reduce_args& args = {}) {
  return min(a, axis, keepdims, args);
}
inline ndarray amax(const ndarray& a, axes axis = {}, bool keepdims = false,
                    const numpy_reduce_args& args = {}) {
  return max(a, axis, keepdims, args);
}
ndarray mean(const ndarray& a, axes axis = {}, bool keepdims = false,
             const numpy_reduce_args& args = {});
ndarray var(const ndarray& a, axes axis = {}, bool keepdims = false,
            const numpy_reduce_args& args = {});
ndarray std(const ndarray& a, axes axis = {}, bool keepdims = false,
            const numpy_reduce_args& args = {});
/// axis: every axis (the index into the flattened array) or one axis.
ndarray argmin(const ndarray& a, axes axis = {}, bool keepdims = false,
               const numpy_reduce_args& args = {});
ndarray argmax(const ndarray& a, axes axis = {}, bool keepdims = false,
               const numpy_reduce_args& args = {});
/// NumPy's all (named all_of: kiln::all is the ':' slice); the member is x.all().
ndarray all_of(const ndarray& a, axes axis = {}, bool keepdims = false,
               const numpy_reduce_args& args = {});
ndarray any(const ndarray& a, axes axis = {}, bool keepdims = false,
            const numpy_reduce_args& args = {});
ndarray count_nonzero(const ndarray& a, axes axis = {}, bool keepdims = false,
                      const numpy_reduce_args& args = {});
ndarray nansum(const ndarray& a, axes axis = {}, bool keepdims = false,
               const numpy_reduce_args& args = {});
ndarray nanprod(const ndarray& a, axes axis = {}, bool keepdims = false,
                const numpy_reduce_args& args = {});
ndarray nanmin(const ndarray& a, axes axis = {}, bool keepdims = false,
               const numpy_reduce_args& args = {});
ndarray nanmax(const ndarray& a, axes axis = {}, bool keepdims = false,
               const numpy_reduce_args& args = {});
ndarray nanmean(const ndarray& a, axes axis = {}, bool keepdims = false,
                const numpy_reduce_args& args = {});

// The same over an expression, fused (one kernel; no temporary for the expression).
ndarray sum(const expr& a, axes axis = {}, bool keepdims = false,
            const numpy_reduce_args& args = {});
ndarray prod(const expr& a, axes axis = {}, bool keepdims = false,
             const numpy_reduce_args& args = {});
ndarray min(const expr& a, axes axis = {}, bool keepdims = false,
            const numpy_reduce_args& args = {});
ndarray max(const expr& a, axes axis = {}, bool keepdims = false,
            const numpy_reduce_args& args = {});
inline ndarray amin(const expr& a, axes axis = {}, bool keepdims = false,
                    const numpy_reduce_args& args = {}) {
  return min(a, axis, keepdims, args);
}
inline ndarray amax(const expr& a, axes axis = {}, bool keepdims = false,
                    const numpy_reduce_args& args = {}) {
  return max(a, axis, keepdims, args);
}
ndarray mean(const expr& a, axes axis = {}, bool keepdims = false,
             const numpy_reduce_args& args = {});
ndarray var(const expr& a, axes axis = {}, bool keepdims = false,
            const numpy_reduce_args& args = {});
ndarray std(const expr& a, axes axis = {}, bool keepdims = false,
            const numpy_reduce_args& args = {});
ndarray argmin(const expr& a, axes axis = {}, bool keepdims = false,
               const numpy_reduce_args& args = {});
ndarray argmax(const expr& a, axes axis = {}, bool keepdims = false,
               const numpy_reduce_args& args = {});
ndarray all_of(const expr& a, axes axis = {}, bool keepdims = false,
               const numpy_reduce_args& args = {});
ndarray any(const expr& a, axes axis = {}, bool keepdims = false,
            const numpy_reduce_args& args = {});
ndarray count_nonzero(const expr& a, axes axis = {}, bool keepdims = false,
                      const numpy_reduce_args& args = {});
ndarray nansum(const expr& a, axes axis = {}, bool keepdims = false,
               const numpy_reduce_args& args = {});
ndarray nanprod(const expr& a, axes axis = {}, bool keepdims = false,
                const numpy_reduce_args& args = {});
ndarray nanmin(const expr& a, axes axis = {}, bool keepdims = false,
               const numpy_reduce_args& args = {});
ndarray nanmax(const expr& a, axes axis = {}, bool keepdims = false,
               const numpy_reduce_args& args = {});
ndarray nanmean(const expr& a, axes axis = {}, bool keepdims = false,
                const numpy_reduce_args& args = {});

// ---- mean with variance or standard deviation, in ONE pass over memory (PyTorch's var_mean,
// std_mean; NumPy's var/std arguments: ddof, dtype). Returns {variance or std, mean}:
//
//   auto [v, m] = kiln::var_mean(x, {0, 2, 3}, /*keepdims=*/true);   // batch-norm statistics
//   auto [s, mu] = kiln::std_mean(x - y, -1, false, {.ddof = 1});    // fused with an expression
//
// Dtypes as var and mean (float64 for bool and ints, float16 accumulates in float32); empty:
// NaN; complex: TypeError; .out is refused (two results), TypeError.
std::pair<ndarray, ndarray> var_mean(const ndarray& a, axes axis = {}, bool keepdims = false,
                                     const numpy_reduce_args& args = {});
std::pair<ndarray, ndarray> std_mean(const ndarray& a, axes axis = {}, bool keepdims = false,
                                     const numpy_reduce_args& args = {});
std::pair<ndarray, ndarray> var_mean(const expr& a, axes axis = {}, bool keepdims = false,
                                     const numpy_reduce_args& args = {});
std::pair<ndarray, ndarray> std_mean(const expr& a, axes axis = {}, bool keepdims = false,
                                     const numpy_reduce_args& args = {});

// The same over a lazy expression (kiln::lazy_expr, expression.hpp; what kiln::fuse passes):
// a node of the expression's tree, evaluated with it. With keepdims (or over every axis) it
// fuses with the expression that reads it: softmax, layer norm, standardising run as ONE
// kernel per row when a row fits on chip, and in the fewest passes otherwise:
//
//   auto x = kiln::lazy(a);
//   auto e = kiln::exp(x - kiln::max(x, -1, true));
//   kiln::ndarray softmax = e / kiln::sum(e, -1, true);
//   kiln::ndarray norm = (x - kiln::mean(x, -1, true)) / kiln::sqrt(kiln::var(x, -1, true) + 1e-5f)
//   * g + b;
//
// The checks (axes, dtypes, empty inputs) run here; with {.out = z} the reduction runs now,
// into z, and the node reads z.
lazy_expr sum(const lazy_expr& a, axes axis = {}, bool keepdims = false,
              const numpy_reduce_args& args = {});
lazy_expr prod(const lazy_expr& a, axes axis = {}, bool keepdims = false,
               const numpy_reduce_args& args = {});
lazy_expr min(const lazy_expr& a, axes axis = {}, bool keepdims = false,
              const numpy_reduce_args& args = {});
lazy_expr max(const lazy_expr& a, axes axis = {}, bool keepdims = false,
              const numpy_reduce_args& args = {});
inline lazy_expr amin(const lazy_expr& a, axes axis = {}, bool keepdims = false,
                      const numpy_reduce_args& args = {}) {
  return min(a, axis, keepdims, args);
}
inline lazy_expr amax(const lazy_expr& a, axes axis = {}, bool keepdims = false,
                      const numpy_reduce_args& args = {}) {
  return max(a, axis, keepdims, args);
}
lazy_expr mean(const lazy_expr& a, axes axis = {}, bool keepdims = false,
               const numpy_reduce_args& args = {});
lazy_expr var(const lazy_expr& a, axes axis = {}, bool keepdims = false,
              const numpy_reduce_args& args = {});
lazy_expr std(const lazy_expr& a, axes axis = {}, bool keepdims = false,
              const numpy_reduce_args& args = {});
lazy_expr argmin(const lazy_expr& a, axes axis = {}, bool keepdims = false,
                 const numpy_reduce_args& args = {});
lazy_expr argmax(const lazy_expr& a, axes axis = {}, bool keepdims = false,
                 const numpy_reduce_args& args = {});
lazy_expr all_of(const lazy_expr& a, axes axis = {}, bool keepdims = false,
                 const numpy_reduce_args& args = {});
lazy_expr any(const lazy_expr& a, axes axis = {}, bool keepdims = false,
              const numpy_reduce_args& args = {});
lazy_expr count_nonzero(const lazy_expr& a, axes axis = {}, bool keepdims = false,
                        const numpy_reduce_args& args = {});
lazy_expr nansum(const lazy_expr& a, axes axis = {}, bool keepdims = false,
                 const numpy_reduce_args& args = {});
lazy_expr nanprod(const lazy_expr& a, axes axis = {}, bool keepdims = false,
                  const numpy_reduce_args& args = {});
lazy_expr nanmin(const lazy_expr& a, axes axis = {}, bool keepdims = false,
                 const numpy_reduce_args& args = {});
lazy_expr nanmax(const lazy_expr& a, axes axis = {}, bool keepdims = false,
                 const numpy_reduce_args& args = {});
lazy_expr nanmean(const lazy_expr& a, axes axis = {}, bool keepdims = false,
                  const numpy_reduce_args& args = {});
/// Two lazy nodes over the same input (run in one pass when evaluated together).
std::pair<lazy_expr, lazy_expr> var_mean(const lazy_expr& a, axes axis = {}, bool keepdims = false,
                                         const numpy_reduce_args& args = {});
std::pair<lazy_expr, lazy_expr> std_mean(const lazy_expr& a, axes axis = {}, bool keepdims = false,
                                         const numpy_reduce_args& args = {});

namespace aot {
/// Every built-in reduction kernel (NumPy's and linalg::norm's), for ahead-of-time compiles
/// (each takes dtypes {input, output}).
std::vector<const ReductionKernel*> builtin_reductions();
/// The kernel `reduction(e)` runs, fused (generated once per expression structure): for
/// ahead-of-time compiles and tests. reduction: a function name of this header ("sum",
/// "max", "var", ...) or "norm2", "norm1", "norm_inf", "norm_minus_inf", "norm0" (linalg::norm
/// by ord). Its parameters are e's distinct leaves (aot::expression_leaves), then `raw int64
/// ddof` for var/std, then the output (placeholder U).
const ReductionKernel& fused_reduction(const expr& e, std::string_view reduction);
}  // namespace aot

}  // namespace kiln
