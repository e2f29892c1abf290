// NumPy's reductions on the host side: argument checks and result dtypes, then the built-in's
// row (builtin_reductions.hpp) run over the array, or fused with an expression.
#include "kiln/library/reductions.hpp"

#include <fmt/format.h>

#include <memory>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "builtin_reductions.hpp"
#include "kiln/engine/fused_reduction.hpp"
#include "kiln/engine/math.hpp"
#include "kiln/runtime/error.hpp"

namespace kiln {
namespace {

dtype sum_dtype(dtype t) {
  if (t == bool_ || t.kind() == 'i') return int64;
  if (t.kind() == 'u') return uint64;
  return t;
}
dtype mean_dtype(dtype t) { return t == bool_ || t.is_integer() ? float64 : t; }

void no_complex(const char* what, dtype t) {
  if (t.is_complex())
    throw TypeError(
        fmt::format("{}: {} arrays are not supported (complex values have no order)", what, t));
}

// A is ndarray (the row's own kernel) or expr (the row fused with the expression's map).
template <class A>
struct Call {
  detail::builtin id;
  const char* name;  // the function's name, for messages
  const A& a;
  axes axis;
  bool keepdims;
  const numpy_reduce_args& args;
  dtype out_type;
  bool uses_dtype = true;             // accepts args.dtype
  const char* empty_error = nullptr;  // ValueError text for an empty reduction
  // NumPy's ufunc reductions take an int axis 0 or -1 on a 0-d array as axis=None; mean,
  // var and std (Python code normalizing the axis first) refuse it.
  bool zero_d_axis = true;
};

// x where `e` is exp(x - max(x)), the max over `mask` with keepdims of the very same x, all in
// float32 or float64 (the dtype the sum accumulates in, so one pass computes what the tree
// does); nullptr otherwise. Softmax's and log-softmax's denominator: its sum then runs in the
// max's pass (sum_exp_max) where the reductions run as passes.
std::shared_ptr<const detail::expr_node> shifted_exp_input(const lazy_expr& e, std::uint64_t mask,
                                                           dtype out) {
  using detail::expr_node;
  const expr_node* n = e.node_ptr().get();
  if (out != float32 && out != float64) return nullptr;
  auto is_op = [&](const expr_node* m, codegen::op_id op) {
    return m && m->k == expr_node::kind::op && m->op == op && m->type == out && m->compute == out;
  };
  if (!is_op(n, codegen::op_id::exp) || !is_op(n->child[0].get(), codegen::op_id::subtract))
    return nullptr;
  const expr_node* d = n->child[0].get();
  const expr_node* m = d->child[1].get();
  if (!m || m->k != expr_node::kind::reduce ||
      m->code != &detail::builtin_code(detail::builtin::max) || m->axes != mask || !m->keepdims ||
      m->child[0] != d->child[0] || d->child[0]->type != out)
    return nullptr;
  return d->child[0];
}

// What a reduction of A gives: a lazy_expr of a lazy_expr (a node of its tree), an array of
// the others.
template <class A>
using reduced_t = std::conditional_t<std::is_same_v<A, lazy_expr>, lazy_expr, ndarray>;

template <class A>
reduced_t<A> run(Call<A> c) {
  if constexpr (std::is_same_v<A, ndarray>)
    if (!c.a.defined())
      throw ValueError(fmt::format("{}: the array is an empty ndarray handle", c.name));
  if (c.args.dtype && !c.uses_dtype) throw TypeError(fmt::format("{}: takes no dtype", c.name));
  if (c.zero_d_axis && c.a.ndim() == 0 && c.axis.is_single_int() &&
      (c.axis[0] == 0 || c.axis[0] == -1))
    c.axis = axes();
  const std::uint64_t mask = c.axis.mask(c.a.ndim());
  const Shape shape = reduced_shape(c.a.shape(), mask, c.keepdims);
  // No identity: reducing over a zero-length axis is an error, whatever the result's size
  // (NumPy: max over axis 0 of shape (0, 3) raises; over axis 0 of (3, 0) gives shape (0,)).
  if (c.empty_error)
    for (int d = 0; d < c.a.ndim(); ++d)
      if ((mask >> d & 1) && c.a.shape()[d] == 0) throw ValueError(c.empty_error);
  if (c.args.out && !(c.args.out->shape() == shape))
    throw ShapeError(fmt::format("{}: out has shape {} but the reduction gives {}", c.name,
                                 c.args.out->shape().str(), shape.str()));
  const reduction_code& code = detail::builtin_code(c.id);
  const bool has_ddof = c.id == detail::builtin::var || c.id == detail::builtin::std;
  if constexpr (std::is_same_v<A, lazy_expr>) {
    if (!c.args.out) {  // a node of the tree (into `out`, it runs now)
      const std::int64_t ddof = c.args.ddof;
      if (has_ddof && !c.args.dtype && !c.a.dtype().is_complex() && c.a.dtype() != float16 &&
          c.a.dtype() != bfloat16) {
        // In a row kernel the row is in registers: NumPy's own two passes (mean, then the sum
        // of squared deviations) cost two cheap sums instead of one costly merge.
        std::int64_t n = 1;
        for (int d = 0; d < c.a.ndim(); ++d)
          if (mask >> d & 1) n *= c.a.shape()[d];
        const lazy_expr dev = c.a - mean(c.a, c.axis, true);
        lazy_expr q =
            sum(dev * dev, c.axis, c.keepdims) / double(std::max<std::int64_t>(n - ddof, 0));
        if (c.id == detail::builtin::std) q = kiln::sqrt(q);
        if (q.dtype() == c.out_type)
          return reduce_lazily(code, c.a, mask, c.keepdims, c.out_type, &ddof, &q);
      }
      if (c.id == detail::builtin::sum && !c.args.dtype)
        if (const auto x = shifted_exp_input(c.a, mask, c.out_type)) {
          // Its row form is the sum itself: a row kernel sums the max's phase from registers.
          const lazy_expr in_rows = reduce_lazily(code, c.a, mask, c.keepdims, c.out_type);
          return reduce_lazily(detail::builtin_code(detail::builtin::sum_exp_max), lazy_expr(x),
                               mask, c.keepdims, c.out_type, nullptr, &in_rows);
        }
      return reduce_lazily(code, c.a, mask, c.keepdims, c.out_type, has_ddof ? &ddof : nullptr);
    }
  }
  ndarray out = c.args.out ? *c.args.out : empty(shape, c.out_type);
  const reduce_options ro{.axis = c.axis, .keepdims = c.keepdims};
  if constexpr (std::is_same_v<A, ndarray>) {
    if (has_ddof)
      reduction_kernel(code)(c.a, std::int64_t(c.args.ddof), out, ro);
    else
      reduction_kernel(code)(c.a, out, ro);
  } else {
    const std::int64_t ddof = c.args.ddof;
    reduce_expression(code, c.a, has_ddof ? &ddof : nullptr, out, ro);
  }
  return reduced_t<A>(out);
}

// The dtype accumulation and the result take: args.dtype, else NumPy's default for the input.
dtype chosen(const numpy_reduce_args& args, dtype fallback) {
  return args.dtype ? *args.dtype : fallback;
}

template <class A>
auto sum_impl(const A& a, axes axis, bool keepdims, const numpy_reduce_args& args) {
  return run(Call<A>{detail::builtin::sum, "sum", a, axis, keepdims, args,
                     chosen(args, sum_dtype(a.dtype()))});
}
template <class A>
auto prod_impl(const A& a, axes axis, bool keepdims, const numpy_reduce_args& args) {
  return run(Call<A>{detail::builtin::prod, "prod", a, axis, keepdims, args,
                     chosen(args, sum_dtype(a.dtype()))});
}
template <class A>
auto nansum_impl(const A& a, axes axis, bool keepdims, const numpy_reduce_args& args) {
  return run(Call<A>{detail::builtin::nansum, "nansum", a, axis, keepdims, args,
                     chosen(args, sum_dtype(a.dtype()))});
}
template <class A>
auto nanprod_impl(const A& a, axes axis, bool keepdims, const numpy_reduce_args& args) {
  return run(Call<A>{detail::builtin::nanprod, "nanprod", a, axis, keepdims, args,
                     chosen(args, sum_dtype(a.dtype()))});
}
template <class A>
auto min_impl(const A& a, axes axis, bool keepdims, const numpy_reduce_args& args) {
  no_complex("min", a.dtype());
  return run(Call<A>{detail::builtin::min, "min", a, axis, keepdims, args, a.dtype(), false,
                     "zero-size array to reduction operation minimum which has no identity"});
}
template <class A>
auto max_impl(const A& a, axes axis, bool keepdims, const numpy_reduce_args& args) {
  no_complex("max", a.dtype());
  return run(Call<A>{detail::builtin::max, "max", a, axis, keepdims, args, a.dtype(), false,
                     "zero-size array to reduction operation maximum which has no identity"});
}
template <class A>
auto nanmin_impl(const A& a, axes axis, bool keepdims, const numpy_reduce_args& args) {
  no_complex("nanmin", a.dtype());
  return run(Call<A>{detail::builtin::nanmin, "nanmin", a, axis, keepdims, args, a.dtype(), false,
                     "zero-size array to reduction operation fmin which has no identity"});
}
template <class A>
auto nanmax_impl(const A& a, axes axis, bool keepdims, const numpy_reduce_args& args) {
  no_complex("nanmax", a.dtype());
  return run(Call<A>{detail::builtin::nanmax, "nanmax", a, axis, keepdims, args, a.dtype(), false,
                     "zero-size array to reduction operation fmax which has no identity"});
}
template <class A>
auto mean_impl(const A& a, axes axis, bool keepdims, const numpy_reduce_args& args) {
  return run(Call<A>{detail::builtin::mean, "mean", a, axis, keepdims, args,
                     chosen(args, mean_dtype(a.dtype())), true, nullptr, false});
}
template <class A>
auto nanmean_impl(const A& a, axes axis, bool keepdims, const numpy_reduce_args& args) {
  return run(Call<A>{detail::builtin::nanmean, "nanmean", a, axis, keepdims, args,
                     chosen(args, mean_dtype(a.dtype()))});
}
template <class A>
auto var_impl(const A& a, axes axis, bool keepdims, const numpy_reduce_args& args) {
  no_complex("var", a.dtype());
  return run(Call<A>{detail::builtin::var, "var", a, axis, keepdims, args,
                     chosen(args, mean_dtype(a.dtype())), true, nullptr, false});
}
template <class A>
auto std_impl(const A& a, axes axis, bool keepdims, const numpy_reduce_args& args) {
  no_complex("std", a.dtype());
  return run(Call<A>{detail::builtin::std, "std", a, axis, keepdims, args,
                     chosen(args, mean_dtype(a.dtype())), true, nullptr, false});
}
template <class A>
auto argmin_impl(const A& a, axes axis, bool keepdims, const numpy_reduce_args& args) {
  no_complex("argmin", a.dtype());
  if (!axis.is_all() && axis.size() != 1)
    throw TypeError("argmin: axis must be one axis or every axis");
  return run(Call<A>{detail::builtin::argmin, "argmin", a, axis, keepdims, args, int64, false,
                     "attempt to get argmin of an empty sequence"});
}
template <class A>
auto argmax_impl(const A& a, axes axis, bool keepdims, const numpy_reduce_args& args) {
  no_complex("argmax", a.dtype());
  if (!axis.is_all() && axis.size() != 1)
    throw TypeError("argmax: axis must be one axis or every axis");
  return run(Call<A>{detail::builtin::argmax, "argmax", a, axis, keepdims, args, int64, false,
                     "attempt to get argmax of an empty sequence"});
}
template <class A>
auto all_of_impl(const A& a, axes axis, bool keepdims, const numpy_reduce_args& args) {
  return run(Call<A>{detail::builtin::all_of, "all_of", a, axis, keepdims, args, bool_, false});
}
template <class A>
auto any_impl(const A& a, axes axis, bool keepdims, const numpy_reduce_args& args) {
  return run(Call<A>{detail::builtin::any, "any", a, axis, keepdims, args, bool_, false});
}
template <class A>
auto count_nonzero_impl(const A& a, axes axis, bool keepdims, const numpy_reduce_args& args) {
  return run(Call<A>{detail::builtin::count_nonzero, "count_nonzero", a, axis, keepdims, args,
                     int64, false});
}

// var_mean / std_mean: one row with two outputs, so one pass gives both. Lazy: two nodes
// over the same input, which the planner runs together (one pass too).
template <class A>
std::pair<ndarray, ndarray> moments_impl(detail::builtin id, const char* name, const A& a,
                                         axes axis, bool keepdims, const numpy_reduce_args& args) {
  if constexpr (std::is_same_v<A, ndarray>)
    if (!a.defined())
      throw ValueError(fmt::format("{}: the array is an empty ndarray handle", name));
  no_complex(name, a.dtype());
  if (args.out) throw TypeError(fmt::format("{}: takes no out (it returns two new arrays)", name));
  const std::uint64_t mask = axis.mask(a.ndim());
  const Shape shape = reduced_shape(a.shape(), mask, keepdims);
  const dtype t = chosen(args, mean_dtype(a.dtype()));
  const ndarray outs[] = {empty(shape, t), empty(shape, t)};
  const reduce_options ro{.axis = axis, .keepdims = keepdims};
  const reduction_code& code = detail::builtin_code(id);
  const std::int64_t ddof = args.ddof;
  if constexpr (std::is_same_v<A, ndarray>)
    reduction_kernel(code)(a, ddof, outs[0], outs[1], ro);
  else
    reduce_expression(code, a, &ddof, outs, ro);
  return {outs[0], outs[1]};
}

}  // namespace

#define KILN_REDUCTION(NAME)                                                                    \
  ndarray NAME(const ndarray& a, axes axis, bool keepdims, const numpy_reduce_args& args) {     \
    return NAME##_impl(a, axis, keepdims, args);                                                \
  }                                                                                             \
  ndarray NAME(const expr& a, axes axis, bool keepdims, const numpy_reduce_args& args) {        \
    return NAME##_impl(a, axis, keepdims, args);                                                \
  }                                                                                             \
  lazy_expr NAME(const lazy_expr& a, axes axis, bool keepdims, const numpy_reduce_args& args) { \
    return NAME##_impl(a, axis, keepdims, args);                                                \
  }
KILN_REDUCTION(sum)
KILN_REDUCTION(prod)
KILN_REDUCTION(nansum)
KILN_REDUCTION(nanprod)
KILN_REDUCTION(min)
KILN_REDUCTION(max)
KILN_REDUCTION(nanmin)
KILN_REDUCTION(nanmax)
KILN_REDUCTION(mean)
KILN_REDUCTION(nanmean)
KILN_REDUCTION(var)
KILN_REDUCTION(std)
KILN_REDUCTION(argmin)
KILN_REDUCTION(argmax)
KILN_REDUCTION(all_of)
KILN_REDUCTION(any)
KILN_REDUCTION(count_nonzero)
#undef KILN_REDUCTION

std::pair<ndarray, ndarray> var_mean(const ndarray& a, axes axis, bool keepdims,
                                     const numpy_reduce_args& args) {
  return moments_impl(detail::builtin::var_mean, "var_mean", a, axis, keepdims, args);
}
std::pair<ndarray, ndarray> var_mean(const expr& a, axes axis, bool keepdims,
                                     const numpy_reduce_args& args) {
  return moments_impl(detail::builtin::var_mean, "var_mean", a, axis, keepdims, args);
}
std::pair<ndarray, ndarray> std_mean(const ndarray& a, axes axis, bool keepdims,
                                     const numpy_reduce_args& args) {
  return moments_impl(detail::builtin::std_mean, "std_mean", a, axis, keepdims, args);
}
std::pair<ndarray, ndarray> std_mean(const expr& a, axes axis, bool keepdims,
                                     const numpy_reduce_args& args) {
  return moments_impl(detail::builtin::std_mean, "std_mean", a, axis, keepdims, args);
}
std::pair<lazy_expr, lazy_expr> var_mean(const lazy_expr& a, axes axis, bool keepdims,
                                         const numpy_reduce_args& args) {
  if (args.out) throw TypeError("var_mean: takes no out (it returns two new arrays)");
  const numpy_reduce_args plain{.dtype = args.dtype, .out = std::nullopt, .ddof = args.ddof};
  return {var(a, axis, keepdims, plain),
          mean(a, axis, keepdims, {.dtype = args.dtype, .out = std::nullopt, .ddof = 0})};
}
std::pair<lazy_expr, lazy_expr> std_mean(const lazy_expr& a, axes axis, bool keepdims,
                                         const numpy_reduce_args& args) {
  if (args.out) throw TypeError("std_mean: takes no out (it returns two new arrays)");
  const numpy_reduce_args plain{.dtype = args.dtype, .out = std::nullopt, .ddof = args.ddof};
  return {std(a, axis, keepdims, plain),
          mean(a, axis, keepdims, {.dtype = args.dtype, .out = std::nullopt, .ddof = 0})};
}

namespace aot {
std::vector<const ReductionKernel*> builtin_reductions() {
  std::vector<const ReductionKernel*> out;
  for (int k = 0; k < int(detail::builtin::count_); ++k)
    out.push_back(&reduction_kernel(detail::builtin_code(detail::builtin(k))));
  return out;
}
const ReductionKernel& fused_reduction(const expr& e, std::string_view reduction) {
  const reduction_code* code = detail::builtin_code(reduction);
  if (!code) throw ValueError(fmt::format("fused_reduction: unknown reduction '{}'", reduction));
  return fused_reduction_kernel(*code, e);
}
}  // namespace aot

}  // namespace kiln
