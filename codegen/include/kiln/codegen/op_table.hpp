#pragma once
// THE table of expression operators and functions: one row each, holding the NumPy type rule
// and the device expression (host logic and CUDA text of one op in one row). Rows are in op_id
// order (checked at compile time in codegen/src/op_table.cpp).
//
// Device expressions: $0 $1 $2 are the operands, already converted to the compute dtype
// (float16/bfloat16 are computed in float32); the result is converted to the node's dtype
// with kiln_cast. Each operand appears once, so an operand expression is never duplicated.
// Helpers (device functions a row needs) are emitted only when a kernel uses that row.
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "kiln/codegen/expression_op.hpp"
#include "kiln/runtime/dtype.hpp"

namespace kiln::codegen {

/// What the result dtype is, given the operands' promoted (common) dtype.
enum class result_rule : std::uint8_t {
  common,    // the common dtype (add, maximum, floor, ...)
  boolean,   // bool (comparisons, logical, isnan, ...)
  floating,  // the smallest float holding the common dtype (sin: int8 -> float16, int32 -> float64)
  divide,    // true division: bool and integers -> float64, else common
  real_part,  // complex -> its real dtype, else common (absolute, real, imag)
  angle,      // arctan2(0, x): floating of result_type(x, weak int); complex -> real dtype
  cast,       // astype: the node's own dtype
};

struct op_row {
  op_id id;
  std::string_view name;  // NumPy's name, used in messages
  int arity;
  result_rule rule;
  std::string_view kinds;   // dtype kinds the common dtype may have ("biufc")
  bool bool_as_int8;        // a bool common dtype computes as int8 (floor_divide, power, shifts)
  bool operands_as_bool;    // operands become bool before the op (logical_*)
  std::string_view device;  // device expression
  std::uint32_t helpers;    // bit k: kHelpers[k] is needed
};

const op_row& op_info(op_id id) noexcept;
/// The helpers of a float32 division by one value a row (kiln_row_divisor, kiln_div_row:
/// expression_texts' RowOutputs).
std::uint32_t row_division_helpers() noexcept;
/// The device helpers whose bits are set in `mask` (op_row::helpers), in emission order:
/// sections of codegen/device/expression_ops.cuh.
std::string expression_helpers(std::uint32_t mask);

/// What an operator does with a C++ integer scalar that does not fit op_types::scalar
/// (NumPy 2 with a Python int, NEP 50 as shipped).
enum class scalar_fit : std::uint8_t {
  raise,    // an error (NumPy: OverflowError "Python integer -1 out of bounds for uint8")
  compare,  // comparisons with an integer array: answered exactly (uint8 < -1 is all false)
  truth,    // logical_*: made bool; only an int beyond int64 raises (NumPy goes through C long)
  wrap,     // where: converted as a C cast (NumPy's where casts its values unsafely)
};

/// Result of type resolution for one node.
struct op_types {
  dtype common;   // operands' promoted dtype
  dtype compute;  // what the device expression sees (float16/bfloat16 -> float32)
  dtype result;   // the node's dtype
  // The dtype of the loop NumPy resolves to, which weak scalars are converted to: the common
  // dtype, but float64 for true division of integers, the float loop of arctan2/hypot
  // (float16 for int8), bool for logical_*.
  dtype scalar;
  scalar_fit fit = scalar_fit::raise;  // for a C++ integer that does not fit `scalar`
};

/// One operand's type as the rule sees it: an array dtype, or a weak C++ scalar.
struct operand_type {
  dtype type;
  bool weak = false;
  weak_scalar weak_kind = weak_scalar::integer;
};

/// NumPy 2 type resolution of `id` on `operands` (cond excluded for where), and the loop dtype
/// weak scalars take (NEP 50: a Python int is converted to the dtype of the loop the operator
/// resolves to). Throws TypeError naming the op and the dtypes: a missing loop is reported
/// before any scalar's range is checked, as NumPy does.
op_types resolve_op_types(op_id id, std::span<const operand_type> operands);

/// NEP 50 promotion of strong dtypes and weak scalars (all weak: the default int/float/complex).
dtype promote_operands(std::span<const operand_type> operands);

}  // namespace kiln::codegen
