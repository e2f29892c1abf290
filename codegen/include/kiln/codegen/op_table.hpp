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
  common,     // the common dtype (add, maximum, floor, ...)
  boolean,    // bool (comparisons, logical, isnan, ...)
  floating,   // the smallest float holding the common dtype (sin: int8 -> float16, int32 -> float64)
  divide,     // true division: bool and integers -> float64, else common
  real_part,  // complex -> its real dtype, else common (absolute, real, imag)
  angle,      // arctan2(0, x): floating of result_type(x, weak int); complex -> real dtype
  cast,       // astype: the node's own dtype
};

struct op_row {
  op_id id;
  std::string_view name;  // NumPy's name, used in messages
  int arity;
  result_rule rule;
  std::string_view kinds;  // dtype kinds the common dtype may have ("biufc")
  bool bool_as_int8;       // a bool common dtype computes as int8 (floor_divide, power, shifts)
  bool operands_as_bool;   // operands become bool before the op (logical_*)
  std::string_view device; // device expression
  std::uint32_t helpers;   // bit k: kHelpers[k] is needed
};

const op_row& op_info(op_id id) noexcept;
/// The device helpers whose bits are set in `mask` (op_row::helpers), in emission order:
/// sections of codegen/device/expression_ops.cuh.
std::string expression_helpers(std::uint32_t mask);

/// Result of type resolution for one node.
struct op_types {
  dtype common;   // operands' loop dtype (weak scalars are converted to it)
  dtype compute;  // what the device expression sees (float16/bfloat16 -> float32)
  dtype result;   // the node's dtype
};

/// One operand's type as the rule sees it: an array dtype, or a weak C++ scalar.
struct operand_type {
  dtype type;
  bool weak = false;
  weak_scalar weak_kind = weak_scalar::integer;
};

/// NumPy 2 type resolution of `id` on `operands` (cond excluded for where). Throws TypeError
/// naming the op and the dtypes.
op_types resolve_op_types(op_id id, std::span<const operand_type> operands);

/// NEP 50 promotion of strong dtypes and weak scalars (all weak: the default int/float/complex).
dtype promote_operands(std::span<const operand_type> operands);

}  // namespace kiln::codegen
