// libFuzzer target: the expression type rules (codegen::resolve_op_types, NumPy 2 / NEP 50).
// Bytes pick an op and its operands (dtype, weak scalar or not); resolution either gives dtypes
// or raises kiln::TypeError. NumPy's promotion is symmetric, so swapping the two operands of a
// binary op must give the same common dtype.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "kiln/codegen/op_table.hpp"
#include "kiln/runtime/dtype.hpp"
#include "kiln/runtime/error.hpp"

namespace {
using namespace kiln::codegen;

kiln::dtype pick(std::uint8_t b) { return kiln::kAllDtypes[b % kiln::kNumDtypes]; }

operand_type operand(std::uint8_t type_byte, std::uint8_t kind_byte) {
  operand_type o{.type = pick(type_byte)};
  o.weak = kind_byte & 1;
  if (o.weak) {
    static constexpr kiln::weak_scalar kinds[] = {
        kiln::weak_scalar::integer, kiln::weak_scalar::floating, kiln::weak_scalar::complex};
    o.weak_kind = kinds[(kind_byte >> 1) % 3];
  }
  return o;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 7) return 0;
  const auto id = op_id(data[0] % kNumOps);
  const int arity = op_info(id).arity;
  std::vector<operand_type> ops;
  for (int k = 0; k < arity && k < 3; ++k) ops.push_back(operand(data[1 + 2 * k], data[2 + 2 * k]));
  try {
    const op_types t = resolve_op_types(id, ops);
    (void)t.common.name(), (void)t.compute.name(), (void)t.result.name();
    if (arity == 2) {
      const operand_type swapped[] = {ops[1], ops[0]};
      if (!(resolve_op_types(id, swapped).common == t.common)) __builtin_trap();
    }
  } catch (const kiln::TypeError&) {
  }
  try {
    (void)promote_operands(ops);
  } catch (const kiln::TypeError&) {
  }
  return 0;
}
