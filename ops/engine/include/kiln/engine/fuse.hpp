#pragma once
// kiln::fuse(f): cupy.fuse for C++. Wraps a generic lambda; calling the wrapper with ndarrays
// and scalars calls f with expressions (ndarray arguments become kiln::lazy_expr leaves,
// scalars stay scalars) and runs everything f computed as ONE kernel, reductions included.
//
//   auto f = kiln::fuse([](auto x, auto y) { return kiln::sin(x) * 5 + y * y; });
//   kiln::ndarray z = f(x, y);                                    // one kernel
//   auto g = kiln::fuse([](auto x, auto y) { return std::make_tuple(x + y, x - y); });
//   auto [s, d] = g(x, y);                                        // one kernel, two outputs
//   auto h = kiln::fuse([](auto& x, auto y) { x *= y; x += 1; });  // updates x in place
//   h(x, 2.0);
//   auto softmax = kiln::fuse([](auto x) {                       // one kernel per row
//     auto e = kiln::exp(x - kiln::max(x, -1, true));
//     return e / kiln::sum(e, -1, true);
//   });
//   auto layer_norm = kiln::fuse([](auto x, auto g, auto b) {
//     return (x - kiln::mean(x, -1, true)) / kiln::sqrt(kiln::var(x, -1, true) + 1e-5f) * g + b;
//   });
//   auto stats = kiln::fuse([](auto x) {                          // one pass over x
//     return std::make_tuple(kiln::mean(x, {0, 2, 3}), kiln::var(x, {0, 2, 3}));
//   });
//
// Reductions inside f are lazy (kiln::lazy_expr, expression.hpp): a reduction with keepdims
// consumed by the expression runs in the same kernel when its rows fit on chip, and every
// reduction runs in as few passes over memory as its dependencies allow otherwise.
//
// Arguments taken by reference (`auto&`) and changed in f (`x *= y`, `x = x + 1`) are written
// back to their arrays, in the same kernel as the results (NumPy's same_kind casting into the
// array's dtype). Results: an expression gives an ndarray, a std::tuple of expressions a
// std::tuple of ndarrays, nothing (void) nothing. f runs on every call to build the small
// expression tree (no strings, no compiler): the kernel is generated once per structure
// (ops, dtypes, which arguments are scalars) and cached like every expression's.
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "kiln/engine/expression.hpp"

namespace kiln {

namespace detail {

/// Evaluates exprs[k] into outs[k] for every k in as few kernels as shapes allow (one when
/// every output has the same shape).
void eval_into_many(std::span<const expr> exprs, std::span<ndarray> outs);

template <class A>
auto fuse_arg(A& a) {
  if constexpr (std::is_same_v<std::remove_cvref_t<A>, ndarray>)
    return lazy_expr(a);
  else
    return a;
}

template <class T>
struct is_tuple : std::false_type {};
template <class... T>
struct is_tuple<std::tuple<T...>> : std::true_type {};

}  // namespace detail

template <class F>
class fused {
 public:
  explicit fused(F f) : f_(std::move(f)) {}

  template <class... A>
  auto operator()(A&&... args) const {
    auto traced = std::make_tuple(detail::fuse_arg(args)...);
    using R = decltype(std::apply(f_, traced));
    std::vector<expr> exprs;
    std::vector<ndarray> outs;
    if constexpr (std::is_void_v<R>) {
      std::apply(f_, traced);
      writebacks(std::forward_as_tuple(args...), traced, exprs, outs);
      detail::eval_into_many(exprs, outs);
    } else if constexpr (detail::is_tuple<R>::value) {
      R r = std::apply(f_, traced);
      constexpr std::size_t n = std::tuple_size_v<R>;
      std::apply([&](const auto&... e) { (push_result(expr(e), exprs, outs), ...); }, r);
      writebacks(std::forward_as_tuple(args...), traced, exprs, outs);
      detail::eval_into_many(exprs, outs);
      return tuple_of<n>(outs, std::make_index_sequence<n>{});
    } else {
      expr e = std::apply(f_, traced);
      push_result(e, exprs, outs);
      writebacks(std::forward_as_tuple(args...), traced, exprs, outs);
      detail::eval_into_many(exprs, outs);
      return outs[0];
    }
  }

 private:
  static void push_result(const expr& e, std::vector<expr>& exprs, std::vector<ndarray>& outs) {
    exprs.push_back(e);
    outs.emplace_back(e.shape(), e.dtype());
  }
  template <class Args, class Traced>
  static void writebacks(Args args, Traced& traced, std::vector<expr>& exprs,
                         std::vector<ndarray>& outs) {
    constexpr std::size_t n = std::tuple_size_v<Args>;
    [&]<std::size_t... I>(std::index_sequence<I...>) {
      auto one = [&](auto& arg, auto& t) {
        using T = std::remove_cvref_t<decltype(arg)>;
        if constexpr (std::is_same_v<T, ndarray>) {
          if (!is_leaf_of(t, arg)) {
            exprs.push_back(t);
            outs.push_back(arg);
          }
        }
      };
      (one(std::get<I>(args), std::get<I>(traced)), ...);
    }
    (std::make_index_sequence<n>{});
  }
  static bool is_leaf_of(const expr& t, const ndarray& a) {
    const auto& n = t.node();
    return n.k == detail::expr_node::kind::array && n.array().buffer() == a.buffer() &&
           n.array().offset() == a.offset() && n.array().shape() == a.shape() &&
           n.array().strides() == a.strides() && n.array().dtype() == a.dtype();
  }
  template <std::size_t N, std::size_t... I>
  static auto tuple_of(const std::vector<ndarray>& outs, std::index_sequence<I...>) {
    return std::make_tuple(outs[I]...);
  }
  F f_;
};

/// Wraps f so that calls run one fused kernel (see the top of this file).
template <class F>
fused<std::decay_t<F>> fuse(F&& f) {
  return fused<std::decay_t<F>>(std::forward<F>(f));
}

}  // namespace kiln
