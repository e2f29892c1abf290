#pragma once
// NumPy's math functions on arrays and expressions, building fused expressions (see
// expression.hpp): nothing runs until the result is turned into an ndarray.
//
//   kiln::ndarray z = kiln::sqrt(kiln::square(x) + kiln::square(y));   // one kernel
//   kiln::ndarray c = kiln::clip(x, -1.0, 1.0);
//   kiln::ndarray m = kiln::where(x > 0, x, 0);                         // relu
//
// Types: NumPy 2 (sin of int8 is float16, of int32 float64; float16/bfloat16 computed in
// float32). Each function is one row of ops/src/expression/op_table.cpp.
#include "kiln/engine/expression.hpp"

namespace kiln {

#define KILN_EXPR_FN1(NAME, ID)                                   \
  template <array_like A>                                         \
  expr NAME(const A& a) {                                         \
    const detail::operand ops[] = {detail::operand(a)};           \
    return detail::make_op(codegen::op_id::ID, ops);               \
  }
#define KILN_EXPR_FN2(NAME, ID)                                             \
  template <class A, class B>                                               \
    requires expr_operands<A, B>                                            \
  expr NAME(const A& a, const B& b) {                                       \
    const detail::operand ops[] = {detail::operand(a), detail::operand(b)}; \
    return detail::make_op(codegen::op_id::ID, ops);                         \
  }

KILN_EXPR_FN2(add, add)
KILN_EXPR_FN2(subtract, subtract)
KILN_EXPR_FN2(multiply, multiply)
KILN_EXPR_FN2(divide, divide)
KILN_EXPR_FN2(true_divide, divide)
KILN_EXPR_FN2(floor_divide, floor_divide)
KILN_EXPR_FN2(remainder, remainder)
KILN_EXPR_FN2(mod, remainder)
KILN_EXPR_FN2(power, power)
KILN_EXPR_FN1(negative, negative)
KILN_EXPR_FN1(positive, positive)
KILN_EXPR_FN1(absolute, absolute)
KILN_EXPR_FN1(abs, absolute)
KILN_EXPR_FN2(equal, equal)
KILN_EXPR_FN2(not_equal, not_equal)
KILN_EXPR_FN2(less, less)
KILN_EXPR_FN2(less_equal, less_equal)
KILN_EXPR_FN2(greater, greater)
KILN_EXPR_FN2(greater_equal, greater_equal)
KILN_EXPR_FN2(logical_and, logical_and)
KILN_EXPR_FN2(logical_or, logical_or)
KILN_EXPR_FN2(logical_xor, logical_xor)
KILN_EXPR_FN1(logical_not, logical_not)
KILN_EXPR_FN2(bitwise_and, bitwise_and)
KILN_EXPR_FN2(bitwise_or, bitwise_or)
KILN_EXPR_FN2(bitwise_xor, bitwise_xor)
KILN_EXPR_FN1(invert, invert)
KILN_EXPR_FN1(bitwise_not, invert)
KILN_EXPR_FN2(left_shift, left_shift)
KILN_EXPR_FN2(right_shift, right_shift)
KILN_EXPR_FN1(sin, sin)
KILN_EXPR_FN1(cos, cos)
KILN_EXPR_FN1(tan, tan)
KILN_EXPR_FN1(arcsin, arcsin)
KILN_EXPR_FN1(arccos, arccos)
KILN_EXPR_FN1(arctan, arctan)
KILN_EXPR_FN2(arctan2, arctan2)
KILN_EXPR_FN1(sinh, sinh)
KILN_EXPR_FN1(cosh, cosh)
KILN_EXPR_FN1(tanh, tanh)
KILN_EXPR_FN1(arcsinh, arcsinh)
KILN_EXPR_FN1(arccosh, arccosh)
KILN_EXPR_FN1(arctanh, arctanh)
KILN_EXPR_FN1(exp, exp)
KILN_EXPR_FN1(exp2, exp2)
KILN_EXPR_FN1(expm1, expm1)
KILN_EXPR_FN1(log, log)
KILN_EXPR_FN1(log2, log2)
KILN_EXPR_FN1(log10, log10)
KILN_EXPR_FN1(log1p, log1p)
KILN_EXPR_FN1(sqrt, sqrt)
KILN_EXPR_FN1(cbrt, cbrt)
KILN_EXPR_FN1(square, square)
KILN_EXPR_FN1(reciprocal, reciprocal)
KILN_EXPR_FN1(floor, floor)
KILN_EXPR_FN1(ceil, ceil)
KILN_EXPR_FN1(trunc, trunc)
KILN_EXPR_FN1(rint, rint)
KILN_EXPR_FN1(sign, sign)
KILN_EXPR_FN2(hypot, hypot)
KILN_EXPR_FN2(maximum, maximum)
KILN_EXPR_FN2(minimum, minimum)
KILN_EXPR_FN2(fmax, fmax)
KILN_EXPR_FN2(fmin, fmin)
KILN_EXPR_FN1(isnan, isnan)
KILN_EXPR_FN1(isinf, isinf)
KILN_EXPR_FN1(isfinite, isfinite)
KILN_EXPR_FN1(real, real)
KILN_EXPR_FN1(imag, imag)
KILN_EXPR_FN1(conj, conj)
KILN_EXPR_FN1(conjugate, conj)
KILN_EXPR_FN1(angle, angle)
#undef KILN_EXPR_FN1
#undef KILN_EXPR_FN2

/// NumPy's where(cond, a, b): cond is made bool (nonzero); a and b promote together.
template <array_like C, expr_operand A, expr_operand B>
expr where(const C& cond, const A& a, const B& b) {
  const detail::operand ops[] = {detail::operand(cond), detail::operand(a), detail::operand(b)};
  return detail::make_op(codegen::op_id::where, ops);
}

/// NumPy's clip: minimum(maximum(a, lo), hi) (NaN propagates), in the same kernel. For an
/// integer array, an integer bound beyond its dtype's range is no bound (NumPy 2: clip(x_u8,
/// -1, 300) is x_u8); a bound inside the range converts as in maximum/minimum.
template <array_like A, expr_operand L, expr_operand H>
expr clip(const A& a, const L& lo, const H& hi) {
  return detail::make_clip(detail::operand(a), detail::operand(lo), detail::operand(hi));
}

/// NumPy's astype inside an expression (unsafe casting, as astype's default).
template <array_like A>
expr astype(const A& a, dtype t) {
  return detail::make_cast(detail::operand(a), t);
}

}  // namespace kiln
