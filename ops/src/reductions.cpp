// The built-in reductions: one ReductionKernel each (process-wide), typed by placeholders
// (T the input, U the output), and NumPy's dtype rules on the host.
#include "kiln/ops/reductions.hpp"

#include <memory>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "fused_reduction.hpp"
#include "kiln/cache/memory_cache.hpp"
#include "kiln/ops/reduction_kernel.hpp"
#include "kiln/runtime/error.hpp"

namespace kiln {
namespace {

// Device helpers every built-in shares: the accumulation type (16-bit floats accumulate in
// float), NaN tests for any type, and the reduce types of argmin/argmax, mean of non-NaN
// values, and variance (Welford's updates merged with Chan's formula).
constexpr const char* kPreamble = R"KILN(
template <class kiln_V, bool kiln_low = kiln_traits<kiln_V>::is_low_float> struct kiln_acc_of { typedef kiln_V type; };
template <class kiln_V> struct kiln_acc_of<kiln_V, true> { typedef float type; };
template <class kiln_V> __device__ __forceinline__ bool kiln_rnan(const kiln_V& kiln_v) { return !(kiln_v == kiln_v); }
typedef typename kiln_acc_of<U>::type kiln_R;
typedef typename kiln_acc_of<T>::type kiln_RT;
struct kiln_arg { kiln_RT v; long long i; };
template <bool kiln_max>
__device__ __forceinline__ kiln_arg kiln_arg_pick(const kiln_arg& kiln_a, const kiln_arg& kiln_b) {
  const bool kiln_an = kiln_rnan(kiln_a.v), kiln_bn = kiln_rnan(kiln_b.v);
  if (kiln_an || kiln_bn) {
    if (kiln_an && kiln_bn) return kiln_b.i < kiln_a.i ? kiln_b : kiln_a;
    return kiln_an ? kiln_a : kiln_b;
  }
  const bool kiln_better = kiln_max ? kiln_b.v > kiln_a.v : kiln_b.v < kiln_a.v;
  return (kiln_better || (kiln_b.v == kiln_a.v && kiln_b.i < kiln_a.i)) ? kiln_b : kiln_a;
}
struct kiln_sn { kiln_R s; long long n; };
struct kiln_welford { kiln_R n, mean, m2; };
__device__ __forceinline__ kiln_welford kiln_welford_merge(const kiln_welford& kiln_a, const kiln_welford& kiln_b) {
  if (kiln_a.n == kiln_R(0)) return kiln_b;
  if (kiln_b.n == kiln_R(0)) return kiln_a;
  const kiln_R kiln_n = kiln_a.n + kiln_b.n, kiln_d = kiln_b.mean - kiln_a.mean, kiln_f = kiln_b.n / kiln_n;
  return kiln_welford{kiln_n, kiln_a.mean + kiln_d * kiln_f, kiln_a.m2 + kiln_b.m2 + kiln_d * kiln_d * kiln_a.n * kiln_f};
}
)KILN";

// Rows of code over one element `x` (detail::reduction_row: name, in, map, reduce, post,
// identity, reduce type); the same row runs an ndarray or, fused, an expression.
using Builtin = detail::reduction_row;

constexpr Builtin kSum{"kiln_sum", "T x", "kiln_cast<kiln_R>(x)", "a + b", "y = kiln_cast<U>(a)", "0", "kiln_R"};
constexpr Builtin kProd{"kiln_prod", "T x", "kiln_cast<kiln_R>(x)", "a * b", "y = kiln_cast<U>(a)", "1", "kiln_R"};
constexpr Builtin kMin{"kiln_min", "T x", "kiln_cast<kiln_R>(x)", "(kiln_rnan(a) || a < b) ? a : b", "y = kiln_cast<U>(a)", "", "kiln_R"};
constexpr Builtin kMax{"kiln_max", "T x", "kiln_cast<kiln_R>(x)", "(kiln_rnan(a) || a > b) ? a : b", "y = kiln_cast<U>(a)", "", "kiln_R"};
constexpr Builtin kNanMin{"kiln_nanmin", "T x", "kiln_cast<kiln_R>(x)",
                          "kiln_rnan(a) ? b : (kiln_rnan(b) ? a : (b < a ? b : a))", "y = kiln_cast<U>(a)", "", "kiln_R"};
constexpr Builtin kNanMax{"kiln_nanmax", "T x", "kiln_cast<kiln_R>(x)",
                          "kiln_rnan(a) ? b : (kiln_rnan(b) ? a : (b > a ? b : a))", "y = kiln_cast<U>(a)", "", "kiln_R"};
constexpr Builtin kNanSum{"kiln_nansum", "T x", "kiln_rnan(x) ? kiln_R(0) : kiln_cast<kiln_R>(x)", "a + b",
                          "y = kiln_cast<U>(a)", "0", "kiln_R"};
constexpr Builtin kNanProd{"kiln_nanprod", "T x", "kiln_rnan(x) ? kiln_R(1) : kiln_cast<kiln_R>(x)", "a * b",
                           "y = kiln_cast<U>(a)", "1", "kiln_R"};
constexpr Builtin kMean{"kiln_mean", "T x", "kiln_cast<kiln_R>(x)", "a + b",
                        "y = kiln_cast<U>(a / kiln_R(double(_in_ind.size()) / double(_out_ind.size())))", "0", "kiln_R"};
constexpr Builtin kNanMean{"kiln_nanmean", "T x",
                           "kiln_rnan(x) ? kiln_sn{kiln_R(0), 0} : kiln_sn{kiln_cast<kiln_R>(x), 1}",
                           "kiln_sn{a.s + b.s, a.n + b.n}", "y = kiln_cast<U>(a.s / kiln_R(a.n))", "kiln_sn{kiln_R(0), 0}",
                           "kiln_sn"};
constexpr Builtin kVar{"kiln_var", "T x, raw int64 ddof", "kiln_welford{kiln_R(1), kiln_cast<kiln_R>(x), kiln_R(0)}",
                       "kiln_welford_merge(a, b)", "y = kiln_cast<U>(a.m2 / (a.n - kiln_R(ddof)))",
                       "kiln_welford{kiln_R(0), kiln_R(0), kiln_R(0)}", "kiln_welford"};
constexpr Builtin kStd{"kiln_std", "T x, raw int64 ddof", "kiln_welford{kiln_R(1), kiln_cast<kiln_R>(x), kiln_R(0)}",
                       "kiln_welford_merge(a, b)", "y = kiln_cast<U>(sqrt(double(a.m2 / (a.n - kiln_R(ddof)))))",
                       "kiln_welford{kiln_R(0), kiln_R(0), kiln_R(0)}", "kiln_welford"};
constexpr Builtin kArgMin{"kiln_argmin", "T x", "kiln_arg{kiln_cast<kiln_RT>(x), (long long)_J}",
                          "kiln_arg_pick<false>(a, b)", "y = kiln_cast<U>(a.i)", "", "kiln_arg"};
constexpr Builtin kArgMax{"kiln_argmax", "T x", "kiln_arg{kiln_cast<kiln_RT>(x), (long long)_J}",
                          "kiln_arg_pick<true>(a, b)", "y = kiln_cast<U>(a.i)", "", "kiln_arg"};
constexpr Builtin kAll{"kiln_all", "T x", "kiln_nonzero(x)", "a && b", "y = kiln_cast<U>(a)", "true", "bool"};
constexpr Builtin kAny{"kiln_any", "T x", "kiln_nonzero(x)", "a || b", "y = kiln_cast<U>(a)", "false", "bool"};
constexpr Builtin kCount{"kiln_count_nonzero", "T x", "(long long)kiln_nonzero(x)", "a + b", "y = kiln_cast<U>(a)",
                         "0", "long long"};

const ReductionKernel& kernel(const Builtin& b) {
  // One kernel per built-in, made on first use, keyed by the row's address (the rows are
  // static). Never destroyed: kernels may run during exit.
  static auto* kernels = new cache::MemoryCache<std::unique_ptr<ReductionKernel>>();
  const Builtin* row = &b;
  return *kernels->get_or_create(hash128(&row, sizeof row), [&] {
    return std::make_unique<ReductionKernel>(
        b.in, "U y", b.map, b.reduce, b.post, b.identity, b.name,
        reduction_options{.reduce_type = b.reduce_type, .preamble = kPreamble});
  });
}

dtype sum_dtype(dtype t) {
  if (t == bool_ || t.kind() == 'i') return int64;
  if (t.kind() == 'u') return uint64;
  return t;
}
dtype mean_dtype(dtype t) { return t == bool_ || t.is_integer() ? float64 : t; }

void no_complex(const char* what, dtype t) {
  if (t.is_complex())
    throw TypeError(fmt::format("{}: {} arrays are not supported (complex values have no order)", what, t));
}

// A is ndarray (the row's own kernel) or expr (the row fused with the expression's map).
template <class A>
struct Call {
  const Builtin& b;
  const A& a;
  axes axis;
  bool keepdims;
  const reduce_args& args;
  dtype out_type;
  bool uses_dtype = true;  // accepts args.dtype
  const char* empty_error = nullptr;  // ValueError text for an empty reduction
};

template <class A>
ndarray run(const Call<A>& c) {
  if constexpr (std::is_same_v<A, ndarray>)
    if (!c.a.defined()) throw ValueError(fmt::format("{}: the array is an empty ndarray handle", c.b.name + 5));
  if (c.args.dtype && !c.uses_dtype)
    throw TypeError(fmt::format("{}: takes no dtype", c.b.name + 5));
  const std::uint64_t mask = c.axis.mask(c.a.ndim());
  const Shape shape = reduced_shape(c.a.shape(), mask, c.keepdims);
  if (c.empty_error && c.a.size() == 0 && shape_size(shape) > 0) throw ValueError(c.empty_error);
  if (c.args.out && !(c.args.out->shape() == shape))
    throw ShapeError(fmt::format("{}: out has shape {} but the reduction gives {}", c.b.name + 5,
                                 c.args.out->shape().str(), shape.str()));
  ndarray out = c.args.out ? *c.args.out : empty(shape, c.out_type);
  const reduce_options ro{.axis = c.axis, .keepdims = c.keepdims};
  const bool has_ddof = std::string_view(c.b.in).find("ddof") != std::string_view::npos;
  if constexpr (std::is_same_v<A, ndarray>) {
    if (has_ddof)
      kernel(c.b)(c.a, std::int64_t(c.args.ddof), out, ro);
    else
      kernel(c.b)(c.a, out, ro);
  } else {
    const std::int64_t ddof = c.args.ddof;
    detail::fused_reduce(c.b, kPreamble, c.a, has_ddof ? &ddof : nullptr, out, ro);
  }
  return out;
}

// The dtype accumulation and the result take: args.dtype, else NumPy's default for the input.
dtype chosen(const reduce_args& args, dtype fallback) { return args.dtype ? *args.dtype : fallback; }

template <class A>
ndarray sum_impl(const A& a, axes axis, bool keepdims, const reduce_args& args) {
  return run(Call<A>{kSum, a, axis, keepdims, args, chosen(args, sum_dtype(a.dtype()))});
}
template <class A>
ndarray prod_impl(const A& a, axes axis, bool keepdims, const reduce_args& args) {
  return run(Call<A>{kProd, a, axis, keepdims, args, chosen(args, sum_dtype(a.dtype()))});
}
template <class A>
ndarray nansum_impl(const A& a, axes axis, bool keepdims, const reduce_args& args) {
  return run(Call<A>{kNanSum, a, axis, keepdims, args, chosen(args, sum_dtype(a.dtype()))});
}
template <class A>
ndarray nanprod_impl(const A& a, axes axis, bool keepdims, const reduce_args& args) {
  return run(Call<A>{kNanProd, a, axis, keepdims, args, chosen(args, sum_dtype(a.dtype()))});
}
template <class A>
ndarray min_impl(const A& a, axes axis, bool keepdims, const reduce_args& args) {
  no_complex("min", a.dtype());
  return run(Call<A>{kMin, a, axis, keepdims, args, a.dtype(), false,
              "zero-size array to reduction operation minimum which has no identity"});
}
template <class A>
ndarray max_impl(const A& a, axes axis, bool keepdims, const reduce_args& args) {
  no_complex("max", a.dtype());
  return run(Call<A>{kMax, a, axis, keepdims, args, a.dtype(), false,
              "zero-size array to reduction operation maximum which has no identity"});
}
template <class A>
ndarray nanmin_impl(const A& a, axes axis, bool keepdims, const reduce_args& args) {
  no_complex("nanmin", a.dtype());
  return run(Call<A>{kNanMin, a, axis, keepdims, args, a.dtype(), false,
              "zero-size array to reduction operation fmin which has no identity"});
}
template <class A>
ndarray nanmax_impl(const A& a, axes axis, bool keepdims, const reduce_args& args) {
  no_complex("nanmax", a.dtype());
  return run(Call<A>{kNanMax, a, axis, keepdims, args, a.dtype(), false,
              "zero-size array to reduction operation fmax which has no identity"});
}
template <class A>
ndarray mean_impl(const A& a, axes axis, bool keepdims, const reduce_args& args) {
  return run(Call<A>{kMean, a, axis, keepdims, args, chosen(args, mean_dtype(a.dtype()))});
}
template <class A>
ndarray nanmean_impl(const A& a, axes axis, bool keepdims, const reduce_args& args) {
  return run(Call<A>{kNanMean, a, axis, keepdims, args, chosen(args, mean_dtype(a.dtype()))});
}
template <class A>
ndarray var_impl(const A& a, axes axis, bool keepdims, const reduce_args& args) {
  no_complex("var", a.dtype());
  return run(Call<A>{kVar, a, axis, keepdims, args, chosen(args, mean_dtype(a.dtype()))});
}
template <class A>
ndarray std_impl(const A& a, axes axis, bool keepdims, const reduce_args& args) {
  no_complex("std", a.dtype());
  return run(Call<A>{kStd, a, axis, keepdims, args, chosen(args, mean_dtype(a.dtype()))});
}
template <class A>
ndarray argmin_impl(const A& a, axes axis, bool keepdims, const reduce_args& args) {
  no_complex("argmin", a.dtype());
  if (!axis.is_all() && axis.size() != 1) throw TypeError("argmin: axis must be one axis or every axis");
  return run(Call<A>{kArgMin, a, axis, keepdims, args, int64, false, "attempt to get argmin of an empty sequence"});
}
template <class A>
ndarray argmax_impl(const A& a, axes axis, bool keepdims, const reduce_args& args) {
  no_complex("argmax", a.dtype());
  if (!axis.is_all() && axis.size() != 1) throw TypeError("argmax: axis must be one axis or every axis");
  return run(Call<A>{kArgMax, a, axis, keepdims, args, int64, false, "attempt to get argmax of an empty sequence"});
}
template <class A>
ndarray all_of_impl(const A& a, axes axis, bool keepdims, const reduce_args& args) {
  return run(Call<A>{kAll, a, axis, keepdims, args, bool_, false});
}
template <class A>
ndarray any_impl(const A& a, axes axis, bool keepdims, const reduce_args& args) {
  return run(Call<A>{kAny, a, axis, keepdims, args, bool_, false});
}
template <class A>
ndarray count_nonzero_impl(const A& a, axes axis, bool keepdims, const reduce_args& args) {
  return run(Call<A>{kCount, a, axis, keepdims, args, int64, false});
}

}  // namespace

#define KILN_REDUCTION(NAME)                                                              \
  ndarray NAME(const ndarray& a, axes axis, bool keepdims, const reduce_args& args) {     \
    return NAME##_impl(a, axis, keepdims, args);                                          \
  }                                                                                       \
  ndarray NAME(const expr& a, axes axis, bool keepdims, const reduce_args& args) {        \
    return NAME##_impl(a, axis, keepdims, args);                                          \
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

namespace ops {
std::vector<const ReductionKernel*> builtin_reductions() {
  std::vector<const ReductionKernel*> out;
  for (const Builtin* b : {&kSum, &kProd, &kMin, &kMax, &kNanMin, &kNanMax, &kNanSum, &kNanProd, &kMean, &kNanMean,
                           &kVar, &kStd, &kArgMin, &kArgMax, &kAll, &kAny, &kCount})
    out.push_back(&kernel(*b));
  return out;
}
const ReductionKernel& fused_reduction(const expr& e, std::string_view reduction) {
  if (reduction == "all_of") reduction = "all";
  for (const Builtin* b : {&kSum, &kProd, &kMin, &kMax, &kNanMin, &kNanMax, &kNanSum, &kNanProd, &kMean, &kNanMean,
                           &kVar, &kStd, &kArgMin, &kArgMax, &kAll, &kAny, &kCount})
    if (std::string_view(b->name).substr(5) == reduction) {
      detail::expression_binding bind;
      detail::bind_expression(e, bind);
      return detail::fused_reduction_kernel(*b, kPreamble, bind);
    }
  if (const ReductionKernel* k = detail::fused_norm_kernel(e, reduction)) return *k;
  throw ValueError(fmt::format("fused_reduction: unknown reduction '{}'", reduction));
}
}  // namespace ops

}  // namespace kiln
