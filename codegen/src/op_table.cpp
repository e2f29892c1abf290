#include "kiln/codegen/op_table.hpp"

#include <fmt/format.h>

#include <array>

#include "kiln/runtime/error.hpp"
#include "kiln_codegen_device_sources.hpp"

namespace kiln::codegen {
namespace {

// Device helpers: sections of device/expression_ops.cuh, emitted in this order (a helper only
// uses helpers above it).
enum : std::uint32_t {
  H_int = 1u << 0,
  H_nan = 1u << 1,
  H_cmp = 1u << 2,
  H_floordiv = 1u << 3,
  H_mod = 1u << 4,
  H_pow = 1u << 5,
  H_maxmin = 1u << 6,
  H_fmaxmin = 1u << 7,
  H_abs = 1u << 8,
  H_sign = 1u << 9,
  H_recip = 1u << 10,
  H_round = 1u << 11,
  H_shift = 1u << 12,
  H_invert = 1u << 13,
  H_parts = 1u << 14,
  H_cmath = 1u << 15,
  H_divrow = 1u << 16,
};

constexpr std::string_view kHelpers[] = {
    "kiln_xint",    "kiln_isnan",  "kiln_lt",   "kiln_floordiv", "kiln_mod",        "kiln_pow",
    "kiln_maximum", "kiln_fmax",   "kiln_abs",  "kiln_sign",     "kiln_reciprocal", "kiln_floor",
    "kiln_shift",   "kiln_invert", "kiln_real", "kiln_cmath",    "kiln_div_row",
};

using R = result_rule;
constexpr std::string_view all = "biufc", real = "biuf", integral = "biu", noc = "biuf";

// clang-format off
constexpr op_row kRows[] = {
  {op_id::add,           "add",           2, R::common,   all,      false, false, "($0 + $1)", 0},
  {op_id::subtract,      "subtract",      2, R::common,   "iufc",   false, false, "($0 - $1)", 0},
  {op_id::multiply,      "multiply",      2, R::common,   all,      false, false, "($0 * $1)", 0},
  {op_id::divide,        "divide",        2, R::divide,   all,      false, false, "($0 / $1)", 0},
  {op_id::floor_divide,  "floor_divide",  2, R::common,   real,     true,  false, "kiln_floordiv($0, $1)", H_int | H_floordiv},
  {op_id::remainder,     "remainder",     2, R::common,   real,     true,  false, "kiln_mod($0, $1)", H_int | H_mod},
  {op_id::power,         "power",         2, R::common,   all,      true,  false, "kiln_pow($0, $1)", H_int | H_pow},
  {op_id::negative,      "negative",      1, R::common,   "iufc",   false, false, "(-$0)", 0},
  {op_id::positive,      "positive",      1, R::common,   "iufc",   false, false, "(+$0)", 0},
  {op_id::absolute,      "absolute",      1, R::real_part, all,     false, false, "kiln_abs($0)", H_int | H_abs},
  {op_id::equal,         "equal",         2, R::boolean,  all,      false, false, "($0 == $1)", 0},
  {op_id::not_equal,     "not_equal",     2, R::boolean,  all,      false, false, "($0 != $1)", 0},
  {op_id::less,          "less",          2, R::boolean,  all,      false, false, "kiln_lt($0, $1)", H_cmp},
  {op_id::less_equal,    "less_equal",    2, R::boolean,  all,      false, false, "kiln_le($0, $1)", H_cmp},
  {op_id::greater,       "greater",       2, R::boolean,  all,      false, false, "kiln_lt($1, $0)", H_cmp},
  {op_id::greater_equal, "greater_equal", 2, R::boolean,  all,      false, false, "kiln_le($1, $0)", H_cmp},
  {op_id::logical_and,   "logical_and",   2, R::boolean,  all,      false, true,  "($0 && $1)", 0},
  {op_id::logical_or,    "logical_or",    2, R::boolean,  all,      false, true,  "($0 || $1)", 0},
  {op_id::logical_xor,   "logical_xor",   2, R::boolean,  all,      false, true,  "($0 != $1)", 0},
  {op_id::logical_not,   "logical_not",   1, R::boolean,  all,      false, true,  "(!$0)", 0},
  {op_id::bitwise_and,   "bitwise_and",   2, R::common,   integral, false, false, "($0 & $1)", 0},
  {op_id::bitwise_or,    "bitwise_or",    2, R::common,   integral, false, false, "($0 | $1)", 0},
  {op_id::bitwise_xor,   "bitwise_xor",   2, R::common,   integral, false, false, "($0 ^ $1)", 0},
  {op_id::invert,        "invert",        1, R::common,   integral, false, false, "kiln_invert($0)", H_invert},
  {op_id::left_shift,    "left_shift",    2, R::common,   integral, true,  false, "kiln_lshift($0, $1)", H_shift},
  {op_id::right_shift,   "right_shift",   2, R::common,   integral, true,  false, "kiln_rshift($0, $1)", H_shift},
  {op_id::sin,           "sin",           1, R::floating, all,      false, false, "sin($0)", 0},
  {op_id::cos,           "cos",           1, R::floating, all,      false, false, "cos($0)", 0},
  {op_id::tan,           "tan",           1, R::floating, all,      false, false, "tan($0)", 0},
  {op_id::arcsin,        "arcsin",        1, R::floating, all,      false, false, "asin($0)", 0},
  {op_id::arccos,        "arccos",        1, R::floating, all,      false, false, "acos($0)", 0},
  {op_id::arctan,        "arctan",        1, R::floating, all,      false, false, "atan($0)", 0},
  {op_id::arctan2,       "arctan2",       2, R::floating, noc,      false, false, "atan2($0, $1)", 0},
  {op_id::sinh,          "sinh",          1, R::floating, all,      false, false, "sinh($0)", 0},
  {op_id::cosh,          "cosh",          1, R::floating, all,      false, false, "cosh($0)", 0},
  {op_id::tanh,          "tanh",          1, R::floating, all,      false, false, "tanh($0)", 0},
  {op_id::arcsinh,       "arcsinh",       1, R::floating, all,      false, false, "asinh($0)", 0},
  {op_id::arccosh,       "arccosh",       1, R::floating, all,      false, false, "acosh($0)", 0},
  {op_id::arctanh,       "arctanh",       1, R::floating, all,      false, false, "atanh($0)", 0},
  {op_id::exp,           "exp",           1, R::floating, all,      false, false, "exp($0)", 0},
  {op_id::exp2,          "exp2",          1, R::floating, all,      false, false, "kiln_exp2($0)", H_cmath},
  {op_id::expm1,         "expm1",         1, R::floating, all,      false, false, "kiln_expm1($0)", H_cmath},
  {op_id::log,           "log",           1, R::floating, all,      false, false, "log($0)", 0},
  {op_id::log2,          "log2",          1, R::floating, all,      false, false, "kiln_log2($0)", H_cmath},
  {op_id::log10,         "log10",         1, R::floating, all,      false, false, "log10($0)", 0},
  {op_id::log1p,         "log1p",         1, R::floating, all,      false, false, "kiln_log1p($0)", H_cmath},
  {op_id::sqrt,          "sqrt",          1, R::floating, all,      false, false, "sqrt($0)", 0},
  {op_id::cbrt,          "cbrt",          1, R::floating, noc,      false, false, "cbrt($0)", 0},
  {op_id::square,        "square",        1, R::common,   all,      true,  false, "kiln_square($0)", H_int | H_recip},
  {op_id::reciprocal,    "reciprocal",    1, R::common,   all,      true,  false, "kiln_reciprocal($0)", H_int | H_recip},
  {op_id::floor,         "floor",         1, R::common,   real,     false, false, "kiln_floor($0)", H_int | H_round},
  {op_id::ceil,          "ceil",          1, R::common,   real,     false, false, "kiln_ceil($0)", H_int | H_round},
  {op_id::trunc,         "trunc",         1, R::common,   real,     false, false, "kiln_trunc($0)", H_int | H_round},
  {op_id::rint,          "rint",          1, R::floating, all,      false, false, "kiln_rint($0)", H_int | H_round},
  {op_id::sign,          "sign",          1, R::common,   "iufc",   false, false, "kiln_sign($0)", H_int | H_sign},
  {op_id::hypot,         "hypot",         2, R::floating, noc,      false, false, "hypot($0, $1)", 0},
  {op_id::maximum,       "maximum",       2, R::common,   all,      false, false, "kiln_maximum($0, $1)", H_int | H_nan | H_cmp | H_maxmin},
  {op_id::minimum,       "minimum",       2, R::common,   all,      false, false, "kiln_minimum($0, $1)", H_int | H_nan | H_cmp | H_maxmin},
  {op_id::fmax,          "fmax",          2, R::common,   all,      false, false, "kiln_fmax($0, $1)", H_int | H_nan | H_cmp | H_fmaxmin},
  {op_id::fmin,          "fmin",          2, R::common,   all,      false, false, "kiln_fmin($0, $1)", H_int | H_nan | H_cmp | H_fmaxmin},
  {op_id::isnan,         "isnan",         1, R::boolean,  all,      false, false, "kiln_isnan($0)", H_int | H_nan},
  {op_id::isinf,         "isinf",         1, R::boolean,  all,      false, false, "kiln_isinf($0)", H_int | H_nan},
  {op_id::isfinite,      "isfinite",      1, R::boolean,  all,      false, false, "kiln_isfinite($0)", H_int | H_nan},
  {op_id::real,          "real",          1, R::real_part, all,     false, false, "kiln_real($0)", H_parts},
  {op_id::imag,          "imag",          1, R::real_part, all,     false, false, "kiln_imag($0)", H_parts},
  {op_id::conj,          "conj",          1, R::common,   all,      true,  false, "kiln_conj($0)", H_parts},
  {op_id::angle,         "angle",         1, R::angle,    all,      false, false, "kiln_angle($0)", H_parts},
  {op_id::where,         "where",         3, R::common,   all,      false, false, "($0 ? $1 : $2)", 0},
  {op_id::astype,        "astype",        1, R::cast,     all,      false, false, "$0", 0},
};
// clang-format on

constexpr bool rows_in_order() {
  if (std::size(kRows) != std::size_t(kNumOps)) return false;
  for (std::size_t k = 0; k < std::size(kRows); ++k)
    if (kRows[k].id != op_id(k)) return false;
  return true;
}
static_assert(rows_in_order(), "kRows must list every op_id once, in enum order");
static_assert(std::size(kHelpers) <= 32);

// The smallest float that holds every value of t (NumPy's loop choice for sin, sqrt, ...).
dtype floating_of(dtype t) {
  switch (t.kind()) {
    case 'b':
      return float16;
    case 'i':
    case 'u':
      return t.itemsize() == 1 ? float16 : t.itemsize() == 2 ? float32 : float64;
    default:
      return t;
  }
}

dtype real_of(dtype t) { return t == complex64 ? float32 : t == complex128 ? float64 : t; }

// float16 and bfloat16 are computed in float32 and rounded once when stored.
dtype compute_of(dtype t) { return (t == float16 || t == bfloat16) ? float32 : t; }

std::string operand_names(std::span<const operand_type> operands) {
  std::string s;
  for (const auto& o : operands) {
    if (!s.empty()) s += ", ";
    if (!o.weak) {
      s += o.type.name();
    } else {
      s += o.weak_kind == weak_scalar::integer    ? "C++ integer scalar"
           : o.weak_kind == weak_scalar::floating ? "C++ floating scalar"
                                                  : "C++ complex scalar";
    }
  }
  return s;
}

// Whether the strong (array) operands promote to an integer dtype: only then does a comparison
// with an out-of-range Python int have NumPy's exact answer (a bool array promotes with it to
// int64 and converts it, raising past int64).
bool strong_integer(std::span<const operand_type> operands) {
  bool any = false;
  dtype t = bool_;
  for (const auto& o : operands)
    if (!o.weak) {
      t = any ? result_type(t, o.type) : o.type;
      any = true;
    }
  return any && t.is_integer();
}

}  // namespace

const op_row& op_info(op_id id) noexcept { return kRows[std::size_t(id)]; }

std::uint32_t row_division_helpers() noexcept { return H_divrow; }

std::string expression_helpers(std::uint32_t mask) {
  std::string s;
  for (std::size_t k = 0; k < std::size(kHelpers); ++k)
    if (mask & (1u << k)) s += device_source(kHelpers[k]);
  return s;
}

dtype promote_operands(std::span<const operand_type> operands) {
  bool any_strong = false;
  dtype t = bool_;
  for (const auto& o : operands)
    if (!o.weak) {
      t = any_strong ? result_type(t, o.type) : o.type;
      any_strong = true;
    }
  if (!any_strong) {
    // Only weak scalars: the widest kind's default dtype.
    weak_scalar k = weak_scalar::integer;
    for (const auto& o : operands)
      if (int(o.weak_kind) > int(k)) k = o.weak_kind;
    return k == weak_scalar::integer ? int64 : k == weak_scalar::floating ? float64 : complex128;
  }
  for (const auto& o : operands)
    if (o.weak) t = result_type(t, o.weak_kind);
  return t;
}

namespace {

op_types resolve_uncached(op_id id, std::span<const operand_type> operands) {
  const op_row& row = op_info(id);
  dtype common = promote_operands(operands);
  if (row.kinds.find(common.kind()) == std::string_view::npos)
    throw TypeError(fmt::format("{} is not supported for {} (NumPy has no loop for {})", row.name,
                                operand_names(operands), common));
  if (row.bool_as_int8 && common == bool_) common = int8;
  op_types t{common, compute_of(common), common, common};
  switch (row.rule) {
    case result_rule::common:
      if (id == op_id::where) t.fit = scalar_fit::wrap;
      break;
    case result_rule::boolean:
      t.result = bool_;
      if (row.operands_as_bool) {
        t.compute = t.scalar = bool_;
        t.fit = scalar_fit::truth;
      } else if (strong_integer(operands)) {
        t.fit = scalar_fit::compare;
      }
      break;
    case result_rule::floating:
      // NumPy picks the first float loop every operand casts to safely: for integers that is
      // the widest floating_of(operand), not floating_of(their promotion) (hypot(int16,
      // uint16) is float32).
      t.result = floating_of(common);
      if (common.kind() == 'b' || common.is_integer()) {
        t.result = float16;
        for (const auto& o : operands)
          // A weak int takes the common dtype (bool with a weak int is int64).
          t.result = result_type(t.result, floating_of(o.weak ? common : o.type));
      }
      t.compute = compute_of(t.result);
      t.scalar = t.result;  // the float loop (arctan2(int8 array, 1000) converts 1000 to float16)
      break;
    case result_rule::divide:
      if (common.kind() == 'b' || common.is_integer()) t.result = float64;
      t.compute = compute_of(t.result);
      t.scalar = t.result;
      break;
    case result_rule::real_part:
      t.result = real_of(common);
      break;
    case result_rule::angle:
      t.result = real_of(floating_of(result_type(common, weak_scalar::integer)));
      t.compute = compute_of(common.is_complex() ? common : t.result);
      break;
    case result_rule::cast:
      t.compute = common;
      break;
  }
  return t;
}

// Every operator of every expression asks this, with few distinct questions: the answers are
// remembered per thread (no lock) in a small direct-mapped table. A key packs the op and each
// operand's dtype, weakness and weak kind; 0 marks an empty slot.
struct ResolvedTypes {
  std::uint64_t key = 0;
  op_types types;
};

std::uint64_t types_key(op_id id, std::span<const operand_type> operands) {
  std::uint64_t k = (std::uint64_t(id) + 1) << 2 | operands.size();
  for (const auto& o : operands)
    k = k << 8 | std::uint64_t(o.type.id()) << 3 | std::uint64_t(o.weak) << 2 |
        std::uint64_t(o.weak_kind);
  return k;
}

}  // namespace

op_types resolve_op_types(op_id id, std::span<const operand_type> operands) {
  static_assert(kNumDtypes <= 32 && kNumOps < 255);
  if (operands.size() > 3) return resolve_uncached(id, operands);
  constexpr std::size_t kSlots = 256;
  thread_local std::array<ResolvedTypes, kSlots> memo;
  const std::uint64_t key = types_key(id, operands);
  auto& slot = memo[(key * 0x9E3779B97F4A7C15ull) >> 56];
  if (slot.key == key) return slot.types;
  const op_types t = resolve_uncached(id, operands);  // throws for unsupported types: not kept
  slot = {key, t};
  return t;
}

}  // namespace kiln::codegen
