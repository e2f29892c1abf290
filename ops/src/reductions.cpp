// The built-in reductions: one ReductionKernel each (process-wide), typed by placeholders
// (T the input, U the output), and NumPy's dtype rules on the host.
#include "kiln/ops/reductions.hpp"

#include <memory>
#include <mutex>
#include <string_view>
#include <utility>
#include <vector>

#include <fmt/format.h>

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
template <class kiln_V> __device__ __forceinline__ bool kiln_isnan(const kiln_V& kiln_v) { return !(kiln_v == kiln_v); }
typedef typename kiln_acc_of<U>::type kiln_R;
typedef typename kiln_acc_of<T>::type kiln_RT;
struct kiln_arg { kiln_RT v; long long i; };
template <bool kiln_max>
__device__ __forceinline__ kiln_arg kiln_arg_pick(const kiln_arg& kiln_a, const kiln_arg& kiln_b) {
  const bool kiln_an = kiln_isnan(kiln_a.v), kiln_bn = kiln_isnan(kiln_b.v);
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

struct Builtin {
  const char* name;
  const char* in;
  const char* map;
  const char* reduce;
  const char* post;
  const char* identity;
  const char* reduce_type;
};

constexpr Builtin kSum{"kiln_sum", "T x", "kiln_cast<kiln_R>(x)", "a + b", "y = kiln_cast<U>(a)", "0", "kiln_R"};
constexpr Builtin kProd{"kiln_prod", "T x", "kiln_cast<kiln_R>(x)", "a * b", "y = kiln_cast<U>(a)", "1", "kiln_R"};
constexpr Builtin kMin{"kiln_min", "T x", "kiln_cast<kiln_R>(x)", "(kiln_isnan(a) || a < b) ? a : b", "y = kiln_cast<U>(a)", "", "kiln_R"};
constexpr Builtin kMax{"kiln_max", "T x", "kiln_cast<kiln_R>(x)", "(kiln_isnan(a) || a > b) ? a : b", "y = kiln_cast<U>(a)", "", "kiln_R"};
constexpr Builtin kNanMin{"kiln_nanmin", "T x", "kiln_cast<kiln_R>(x)",
                          "kiln_isnan(a) ? b : (kiln_isnan(b) ? a : (b < a ? b : a))", "y = kiln_cast<U>(a)", "", "kiln_R"};
constexpr Builtin kNanMax{"kiln_nanmax", "T x", "kiln_cast<kiln_R>(x)",
                          "kiln_isnan(a) ? b : (kiln_isnan(b) ? a : (b > a ? b : a))", "y = kiln_cast<U>(a)", "", "kiln_R"};
constexpr Builtin kNanSum{"kiln_nansum", "T x", "kiln_isnan(x) ? kiln_R(0) : kiln_cast<kiln_R>(x)", "a + b",
                          "y = kiln_cast<U>(a)", "0", "kiln_R"};
constexpr Builtin kNanProd{"kiln_nanprod", "T x", "kiln_isnan(x) ? kiln_R(1) : kiln_cast<kiln_R>(x)", "a * b",
                           "y = kiln_cast<U>(a)", "1", "kiln_R"};
constexpr Builtin kMean{"kiln_mean", "T x", "kiln_cast<kiln_R>(x)", "a + b",
                        "y = kiln_cast<U>(a / kiln_R(double(_in_ind.size()) / double(_out_ind.size())))", "0", "kiln_R"};
constexpr Builtin kNanMean{"kiln_nanmean", "T x",
                           "kiln_isnan(x) ? kiln_sn{kiln_R(0), 0} : kiln_sn{kiln_cast<kiln_R>(x), 1}",
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
  // One kernel per built-in, made on first use (static locals of a template would need one
  // function per row; a small map keyed by the row's address does the same).
  static std::mutex mu;
  static std::vector<std::pair<const Builtin*, std::unique_ptr<ReductionKernel>>> made;
  std::lock_guard lock(mu);
  for (auto& [p, k] : made)
    if (p == &b) return *k;
  made.emplace_back(&b, std::make_unique<ReductionKernel>(b.in, "U y", b.map, b.reduce, b.post, b.identity, b.name,
                                                          reduction_options{.reduce_type = b.reduce_type,
                                                                            .preamble = kPreamble}));
  return *made.back().second;
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

struct Call {
  const Builtin& b;
  const ndarray& a;
  axes axis;
  bool keepdims;
  const reduce_args& args;
  dtype out_type;
  bool uses_dtype = true;  // accepts args.dtype
  const char* empty_error = nullptr;  // ValueError text for an empty reduction
};

ndarray run(const Call& c) {
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
  if (std::string_view(c.b.in).find("ddof") != std::string_view::npos)
    kernel(c.b)(c.a, std::int64_t(c.args.ddof), out, ro);
  else
    kernel(c.b)(c.a, out, ro);
  return out;
}

// The dtype accumulation and the result take: args.dtype, else NumPy's default for the input.
dtype chosen(const reduce_args& args, dtype fallback) { return args.dtype ? *args.dtype : fallback; }

}  // namespace

ndarray sum(const ndarray& a, axes axis, bool keepdims, const reduce_args& args) {
  return run({kSum, a, axis, keepdims, args, chosen(args, sum_dtype(a.dtype()))});
}
ndarray prod(const ndarray& a, axes axis, bool keepdims, const reduce_args& args) {
  return run({kProd, a, axis, keepdims, args, chosen(args, sum_dtype(a.dtype()))});
}
ndarray nansum(const ndarray& a, axes axis, bool keepdims, const reduce_args& args) {
  return run({kNanSum, a, axis, keepdims, args, chosen(args, sum_dtype(a.dtype()))});
}
ndarray nanprod(const ndarray& a, axes axis, bool keepdims, const reduce_args& args) {
  return run({kNanProd, a, axis, keepdims, args, chosen(args, sum_dtype(a.dtype()))});
}
ndarray min(const ndarray& a, axes axis, bool keepdims, const reduce_args& args) {
  no_complex("min", a.dtype());
  return run({kMin, a, axis, keepdims, args, a.dtype(), false,
              "zero-size array to reduction operation minimum which has no identity"});
}
ndarray max(const ndarray& a, axes axis, bool keepdims, const reduce_args& args) {
  no_complex("max", a.dtype());
  return run({kMax, a, axis, keepdims, args, a.dtype(), false,
              "zero-size array to reduction operation maximum which has no identity"});
}
ndarray nanmin(const ndarray& a, axes axis, bool keepdims, const reduce_args& args) {
  no_complex("nanmin", a.dtype());
  return run({kNanMin, a, axis, keepdims, args, a.dtype(), false,
              "zero-size array to reduction operation fmin which has no identity"});
}
ndarray nanmax(const ndarray& a, axes axis, bool keepdims, const reduce_args& args) {
  no_complex("nanmax", a.dtype());
  return run({kNanMax, a, axis, keepdims, args, a.dtype(), false,
              "zero-size array to reduction operation fmax which has no identity"});
}
ndarray mean(const ndarray& a, axes axis, bool keepdims, const reduce_args& args) {
  return run({kMean, a, axis, keepdims, args, chosen(args, mean_dtype(a.dtype()))});
}
ndarray nanmean(const ndarray& a, axes axis, bool keepdims, const reduce_args& args) {
  return run({kNanMean, a, axis, keepdims, args, chosen(args, mean_dtype(a.dtype()))});
}
ndarray var(const ndarray& a, axes axis, bool keepdims, const reduce_args& args) {
  no_complex("var", a.dtype());
  return run({kVar, a, axis, keepdims, args, chosen(args, mean_dtype(a.dtype()))});
}
ndarray std(const ndarray& a, axes axis, bool keepdims, const reduce_args& args) {
  no_complex("std", a.dtype());
  return run({kStd, a, axis, keepdims, args, chosen(args, mean_dtype(a.dtype()))});
}
ndarray argmin(const ndarray& a, axes axis, bool keepdims, const reduce_args& args) {
  no_complex("argmin", a.dtype());
  if (!axis.is_all() && axis.size() != 1) throw TypeError("argmin: axis must be one axis or every axis");
  return run({kArgMin, a, axis, keepdims, args, int64, false, "attempt to get argmin of an empty sequence"});
}
ndarray argmax(const ndarray& a, axes axis, bool keepdims, const reduce_args& args) {
  no_complex("argmax", a.dtype());
  if (!axis.is_all() && axis.size() != 1) throw TypeError("argmax: axis must be one axis or every axis");
  return run({kArgMax, a, axis, keepdims, args, int64, false, "attempt to get argmax of an empty sequence"});
}
ndarray all_of(const ndarray& a, axes axis, bool keepdims, const reduce_args& args) {
  return run({kAll, a, axis, keepdims, args, bool_, false});
}
ndarray any(const ndarray& a, axes axis, bool keepdims, const reduce_args& args) {
  return run({kAny, a, axis, keepdims, args, bool_, false});
}
ndarray count_nonzero(const ndarray& a, axes axis, bool keepdims, const reduce_args& args) {
  return run({kCount, a, axis, keepdims, args, int64, false});
}

namespace ops {
std::vector<const ReductionKernel*> builtin_reductions() {
  std::vector<const ReductionKernel*> out;
  for (const Builtin* b : {&kSum, &kProd, &kMin, &kMax, &kNanMin, &kNanMax, &kNanSum, &kNanProd, &kMean, &kNanMean,
                           &kVar, &kStd, &kArgMin, &kArgMax, &kAll, &kAny, &kCount})
    out.push_back(&kernel(*b));
  return out;
}
}  // namespace ops

}  // namespace kiln
