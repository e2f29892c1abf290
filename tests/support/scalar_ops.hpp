#pragma once
// Every binary operator and function kiln builds with a C++ integer scalar on either side, by
// NumPy's name, and the `int:<value>` operands of the golden tables (op_types.txt,
// scalar_values.txt): the value as the C++ scalar that holds it (int64, or uint64 past it).
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <variant>

#include "kiln/kiln.hpp"

namespace kiln::test {

using int_arg = std::variant<std::int64_t, std::uint64_t>;

/// "int:-1" -> int64 -1, "int:18446744073709551615" -> uint64.
inline int_arg parse_int_arg(const std::string& word) {
  const std::string v = word.substr(4);
  if (v[0] == '-') return std::int64_t(std::stoll(v));
  const unsigned long long u = std::stoull(v);
  if (u <= std::uint64_t(INT64_MAX)) return std::int64_t(u);
  return std::uint64_t(u);
}

struct scalar_op {
  std::function<expr(const ndarray&, int_arg)> right;  // op(array, int)
  std::function<expr(int_arg, const ndarray&)> left;   // op(int, array)
};

template <class F>
scalar_op both_sides(F f) {
  return {[f](const ndarray& a, int_arg v) {
            return std::visit([&](auto s) { return expr(f(a, s)); }, v);
          },
          [f](int_arg v, const ndarray& a) {
            return std::visit([&](auto s) { return expr(f(s, a)); }, v);
          }};
}

#define KILN_SCALAR_OP(NAME, BODY)                                      \
  {                                                                     \
    NAME, both_sides([](const auto& x, const auto& y) { return BODY; }) \
  }

/// NumPy's binary operators and functions (not where or clip: they take more operands).
inline const std::map<std::string, scalar_op>& scalar_ops() {
  static const std::map<std::string, scalar_op> m = {
      KILN_SCALAR_OP("add", x + y),
      KILN_SCALAR_OP("subtract", x - y),
      KILN_SCALAR_OP("multiply", x * y),
      KILN_SCALAR_OP("divide", x / y),
      KILN_SCALAR_OP("floor_divide", kiln::floor_divide(x, y)),
      KILN_SCALAR_OP("remainder", x % y),
      KILN_SCALAR_OP("power", kiln::power(x, y)),
      KILN_SCALAR_OP("equal", x == y),
      KILN_SCALAR_OP("not_equal", x != y),
      KILN_SCALAR_OP("less", x < y),
      KILN_SCALAR_OP("less_equal", x <= y),
      KILN_SCALAR_OP("greater", x > y),
      KILN_SCALAR_OP("greater_equal", x >= y),
      KILN_SCALAR_OP("logical_and", kiln::logical_and(x, y)),
      KILN_SCALAR_OP("logical_or", kiln::logical_or(x, y)),
      KILN_SCALAR_OP("logical_xor", kiln::logical_xor(x, y)),
      KILN_SCALAR_OP("bitwise_and", x & y),
      KILN_SCALAR_OP("bitwise_or", x | y),
      KILN_SCALAR_OP("bitwise_xor", x ^ y),
      KILN_SCALAR_OP("left_shift", x << y),
      KILN_SCALAR_OP("right_shift", x >> y),
      KILN_SCALAR_OP("arctan2", kiln::arctan2(x, y)),
      KILN_SCALAR_OP("hypot", kiln::hypot(x, y)),
      KILN_SCALAR_OP("maximum", kiln::maximum(x, y)),
      KILN_SCALAR_OP("minimum", kiln::minimum(x, y)),
      KILN_SCALAR_OP("fmax", kiln::fmax(x, y)),
      KILN_SCALAR_OP("fmin", kiln::fmin(x, y)),
  };
  return m;
}
#undef KILN_SCALAR_OP

/// where(cond, a, v) / where(cond, v, a) with cond given.
inline expr where_right(const ndarray& cond, const ndarray& a, int_arg v) {
  return std::visit([&](auto s) { return kiln::where(cond, a, s); }, v);
}
inline expr where_left(const ndarray& cond, int_arg v, const ndarray& a) {
  return std::visit([&](auto s) { return kiln::where(cond, s, a); }, v);
}
inline expr clip_ints(const ndarray& a, int_arg lo, int_arg hi) {
  return std::visit([&](auto l, auto h) { return kiln::clip(a, l, h); }, lo, hi);
}

}  // namespace kiln::test
