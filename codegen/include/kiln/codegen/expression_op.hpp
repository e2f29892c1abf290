#pragma once
// The operators and functions an expression node can apply. Each id is one row of the table in
// codegen/src/op_table.cpp (its name, arity, NumPy type rule and device expression):
// adding a function is a row there, an enumerator here, a one-line wrapper in kiln/engine/math.hpp
// and a test.
#include <cstdint>

namespace kiln::codegen {

enum class op_id : std::uint8_t {
  // arithmetic
  add,
  subtract,
  multiply,
  divide,
  floor_divide,
  remainder,
  power,
  negative,
  positive,
  absolute,
  // comparisons (bool results)
  equal,
  not_equal,
  less,
  less_equal,
  greater,
  greater_equal,
  // logical (bool results)
  logical_and,
  logical_or,
  logical_xor,
  logical_not,
  // bitwise (integers and bool)
  bitwise_and,
  bitwise_or,
  bitwise_xor,
  invert,
  left_shift,
  right_shift,
  // math
  sin,
  cos,
  tan,
  arcsin,
  arccos,
  arctan,
  arctan2,
  sinh,
  cosh,
  tanh,
  arcsinh,
  arccosh,
  arctanh,
  exp,
  exp2,
  expm1,
  log,
  log2,
  log10,
  log1p,
  sqrt,
  cbrt,
  square,
  reciprocal,
  floor,
  ceil,
  trunc,
  rint,
  sign,
  hypot,
  maximum,
  minimum,
  fmax,
  fmin,
  isnan,
  isinf,
  isfinite,
  real,
  imag,
  conj,
  angle,
  where,   // where(cond, a, b)
  astype,  // a cast to the node's dtype
  count_
};
inline constexpr int kNumOps = int(op_id::count_);

}  // namespace kiln::codegen
