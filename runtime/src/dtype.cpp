#include "kiln/runtime/dtype.hpp"

#include <algorithm>
#include <array>

#include "kiln/runtime/error.hpp"

namespace kiln {
namespace {

struct alias {
  std::string_view text;
  dtype_id id;
};
// NumPy spellings (names, C names and array-protocol codes).
constexpr alias kAliases[] = {
    {"bool", dtype_id::bool_},
    {"bool_", dtype_id::bool_},
    {"?", dtype_id::bool_},
    {"b1", dtype_id::bool_},
    {"int8", dtype_id::int8},
    {"i1", dtype_id::int8},
    {"byte", dtype_id::int8},
    {"b", dtype_id::int8},
    {"int16", dtype_id::int16},
    {"i2", dtype_id::int16},
    {"short", dtype_id::int16},
    {"h", dtype_id::int16},
    {"int32", dtype_id::int32},
    {"i4", dtype_id::int32},
    {"intc", dtype_id::int32},
    {"i", dtype_id::int32},
    {"int64", dtype_id::int64},
    {"i8", dtype_id::int64},
    {"int", dtype_id::int64},
    {"int_", dtype_id::int64},
    {"intp", dtype_id::int64},
    {"long", dtype_id::int64},
    {"longlong", dtype_id::int64},
    {"l", dtype_id::int64},
    {"q", dtype_id::int64},
    {"uint8", dtype_id::uint8},
    {"u1", dtype_id::uint8},
    {"ubyte", dtype_id::uint8},
    {"B", dtype_id::uint8},
    {"uint16", dtype_id::uint16},
    {"u2", dtype_id::uint16},
    {"ushort", dtype_id::uint16},
    {"H", dtype_id::uint16},
    {"uint32", dtype_id::uint32},
    {"u4", dtype_id::uint32},
    {"uintc", dtype_id::uint32},
    {"I", dtype_id::uint32},
    {"uint64", dtype_id::uint64},
    {"u8", dtype_id::uint64},
    {"uint", dtype_id::uint64},
    {"uintp", dtype_id::uint64},
    {"ulong", dtype_id::uint64},
    {"ulonglong", dtype_id::uint64},
    {"L", dtype_id::uint64},
    {"Q", dtype_id::uint64},
    {"float16", dtype_id::float16},
    {"f2", dtype_id::float16},
    {"half", dtype_id::float16},
    {"e", dtype_id::float16},
    {"bfloat16", dtype_id::bfloat16},
    {"float32", dtype_id::float32},
    {"f4", dtype_id::float32},
    {"single", dtype_id::float32},
    {"f", dtype_id::float32},
    {"float64", dtype_id::float64},
    {"f8", dtype_id::float64},
    {"float", dtype_id::float64},
    {"double", dtype_id::float64},
    {"d", dtype_id::float64},
    {"float_", dtype_id::float64},
    {"complex64", dtype_id::complex64},
    {"c8", dtype_id::complex64},
    {"csingle", dtype_id::complex64},
    {"F", dtype_id::complex64},
    {"complex128", dtype_id::complex128},
    {"c16", dtype_id::complex128},
    {"complex", dtype_id::complex128},
    {"cdouble", dtype_id::complex128},
    {"complex_", dtype_id::complex128},
    {"D", dtype_id::complex128},
};

// Size in bits of the widest integer a floating type holds exactly for safe casting, NumPy's way:
// int8/uint8 -> float16, 16-bit -> float32, 32/64-bit -> float64.
int float_rank_needed(dtype t) {
  std::size_t s = t.itemsize();
  if (s == 1) return 0;  // float16 (or bfloat16)
  if (s == 2) return 1;  // float32
  return 2;              // float64
}
int float_rank(dtype t) {  // float16/bfloat16 -> 0, float32 -> 1, float64 -> 2
  switch (t.id()) {
    case dtype_id::float16:
    case dtype_id::bfloat16:
      return 0;
    case dtype_id::float32:
      return 1;
    default:
      return 2;
  }
}

// Promotion order: the result of promoting a and b is the first dtype in this order that
// both cast to safely (NumPy's rule; bfloat16 sits beside float16 and neither casts to the other).
constexpr dtype kPromotionOrder[] = {bool_,    int8,    uint8,   int16,     uint16,
                                     int32,    uint32,  int64,   uint64,    float16,
                                     bfloat16, float32, float64, complex64, complex128};

}  // namespace

bool dtype::try_from_name(std::string_view name, dtype& out) {
  for (const alias& a : kAliases)
    if (a.text == name) {
      out = a.id;
      return true;
    }
  return false;
}

dtype dtype::from_name(std::string_view name) {
  dtype t;
  if (!try_from_name(name, t))
    throw TypeError(fmt::format(
        "unknown dtype '{}': use a NumPy name such as bool, int8..int64, uint8..uint64, float16, "
        "bfloat16, float32, float64, complex64, complex128 (or a code such as f4, i8)",
        name));
  return t;
}

bool can_cast_safely(dtype from, dtype to) {
  if (from == to || from.kind() == 'b') return true;
  if (to.kind() == 'b') return false;
  char fk = from.kind(), tk = to.kind();
  std::size_t fs = from.itemsize(), ts = to.itemsize();
  switch (fk) {
    case 'i':
      if (tk == 'i') return ts > fs;
      if (tk == 'u') return false;
      if (tk == 'f') return float_rank(to) >= float_rank_needed(from);
      return (to == complex128) || float_rank_needed(from) <= 1;  // complex64 holds float32
    case 'u':
      if (tk == 'u') return ts > fs;
      if (tk == 'i') return ts > fs;
      if (tk == 'f') return float_rank(to) >= float_rank_needed(from);
      return (to == complex128) || float_rank_needed(from) <= 1;
    case 'f':
      if (tk == 'f') return float_rank(to) > float_rank(from);
      if (tk == 'c') return to == complex128 || float_rank(from) <= 1;
      return false;
    case 'c':
      return tk == 'c' && ts > fs;
  }
  return false;
}

bool can_cast_same_kind(dtype from, dtype to) {
  // NumPy orders kinds b < u < i < f < c; "same_kind" allows any cast that does not go down it.
  static constexpr std::string_view kKindOrder = "buifc";
  return kKindOrder.find(from.kind()) <= kKindOrder.find(to.kind());
}

dtype result_type(dtype a, dtype b) {
  for (dtype t : kPromotionOrder)
    if (can_cast_safely(a, t) && can_cast_safely(b, t)) return t;
  return complex128;  // unreachable: complex128 holds every type safely
}

dtype result_type(dtype a, weak_scalar s) {
  switch (s) {
    case weak_scalar::integer:
      return a.kind() == 'b' ? int64 : a;
    case weak_scalar::floating:
      return (a.kind() == 'f' || a.kind() == 'c') ? a : float64;
    case weak_scalar::complex:
      if (a.kind() == 'c') return a;
      if (a.kind() == 'f') return a == float64 ? complex128 : complex64;
      return complex128;
  }
  return a;
}

}  // namespace kiln
