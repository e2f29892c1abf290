// NumPy's math functions whose rule is more than one operator row: clip's bounds (the rest
// are op-table rows built by make_op).
#include "kiln/engine/math.hpp"

#include <fmt/format.h>

#include <array>
#include <cstring>

#include "expression/expression_tree.hpp"
#include "kiln/codegen/op_table.hpp"
#include "kiln/runtime/error.hpp"

namespace kiln::detail {

using codegen::op_id;

// NumPy's clip (numpy/_core/_methods.py): for an integer array, a Python int bound at or past
// the dtype's range is dropped before the ufunc sees it, so it never raises; a bound left is
// converted as maximum/minimum convert it (and one out of range there raises).
expr make_clip(const operand& a, const operand& lo, const operand& hi) {
  const dtype t = a.node()->type;
  // Whether bound b is a C++ integer at or past the range's end on its side (NumPy drops
  // min <= iinfo.min and max >= iinfo.max).
  auto beyond = [&](const operand& b, bool upper) {
    if (!t.is_integer() || !b.is_scalar) return false;
    const auto k = b.value.value_kind();
    if (k != scalar::kind::signed_integer && k != scalar::kind::unsigned_integer) return false;
    if (!b.value.fits(t)) return b.value.is_negative() != upper;
    std::array<std::byte, 8> v, end;
    b.value.store_as(t, v.data());
    bound_of(t, upper).store_as(t, end.data());
    return std::memcmp(v.data(), end.data(), t.itemsize()) == 0;
  };
  const bool no_lo = beyond(lo, false), no_hi = beyond(hi, true);
  if (no_lo && no_hi) {
    const operand ops[] = {a};
    return make_op(op_id::positive, ops);
  }
  if (no_lo) {
    const operand ops[] = {a, hi};
    return make_op(op_id::minimum, ops);
  }
  const operand ops[] = {a, lo};
  const expr m = make_op(op_id::maximum, ops);
  if (no_hi) return m;
  const operand outer[] = {operand(m), hi};
  return make_op(op_id::minimum, outer);
}

}  // namespace kiln::detail
