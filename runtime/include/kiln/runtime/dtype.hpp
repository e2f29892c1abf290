#pragma once
// Array element types with NumPy's names, sizes and promotion rules (NumPy 2, NEP 50).
//
//   kiln::dtype t = kiln::dtype::from_name("f4");                  // float32
//   kiln::result_type(kiln::int8, kiln::uint8);                    // int16
//   kiln::result_type(kiln::uint8, kiln::weak_scalar::integer);   // uint8 (weak Python int)
//   kiln::dtype_of<double>();                                       // float64
#include <fmt/format.h>

#include <complex>
#include <cstdint>
#include <string>
#include <string_view>

#include "kiln/runtime/half.hpp"

namespace kiln {

enum class dtype_id : std::uint8_t {
  bool_,
  int8,
  int16,
  int32,
  int64,
  uint8,
  uint16,
  uint32,
  uint64,
  float16,
  bfloat16,
  float32,
  float64,
  complex64,
  complex128,
};
inline constexpr int kNumDtypes = 15;

namespace detail {
struct dtype_info {
  std::string_view name;
  std::size_t itemsize;
  char kind;
  std::string_view device_type;  // the C++ type generated kernels use
};
// One row per dtype_id, in enum order: THE table of dtype properties. In the header so that
// itemsize() and kind(), asked on every call's hot path, are inlined.
inline constexpr dtype_info kDtypeInfo[kNumDtypes] = {
    {"bool", 1, 'b', "bool"},
    {"int8", 1, 'i', "signed char"},
    {"int16", 2, 'i', "short"},
    {"int32", 4, 'i', "int"},
    {"int64", 8, 'i', "long long"},
    {"uint8", 1, 'u', "unsigned char"},
    {"uint16", 2, 'u', "unsigned short"},
    {"uint32", 4, 'u', "unsigned int"},
    {"uint64", 8, 'u', "unsigned long long"},
    {"float16", 2, 'f', "__half"},
    {"bfloat16", 2, 'f', "__nv_bfloat16"},
    {"float32", 4, 'f', "float"},
    {"float64", 8, 'f', "double"},
    {"complex64", 8, 'c', "complex<float>"},
    {"complex128", 16, 'c', "complex<double>"},
};
}  // namespace detail

/// 'b' bool, 'i' signed, 'u' unsigned, 'f' floating, 'c' complex (NumPy's dtype.kind).
class dtype {
 public:
  constexpr dtype() = default;
  constexpr dtype(dtype_id id) : id_(id) {}  // NOLINT: implicit, dtype and id are one concept

  constexpr dtype_id id() const { return id_; }
  constexpr std::string_view name() const { return info().name; }     // "float32"
  constexpr std::size_t itemsize() const { return info().itemsize; }  // 4
  constexpr char kind() const { return info().kind; }                 // 'f'
  /// The C++ type in generated code: "float", "__half", ...
  constexpr std::string_view device_type() const { return info().device_type; }
  constexpr bool is_integer() const { return kind() == 'i' || kind() == 'u'; }
  constexpr bool is_floating() const { return kind() == 'f'; }
  constexpr bool is_complex() const { return kind() == 'c'; }

  /// NumPy spellings: "float32", "float", "f4", "f", "int", "i8", "uint8", "u1", "bool", "?",
  /// "complex64", "c8", "half", "double", "bfloat16", ... Throws TypeError naming the text.
  static dtype from_name(std::string_view name);
  /// Same, but returns false instead of throwing.
  static bool try_from_name(std::string_view name, dtype& out);

  friend constexpr bool operator==(dtype a, dtype b) { return a.id_ == b.id_; }

 private:
  constexpr const detail::dtype_info& info() const {
    return detail::kDtypeInfo[static_cast<int>(id_)];
  }
  dtype_id id_ = dtype_id::float64;
};

inline constexpr dtype bool_{dtype_id::bool_};
inline constexpr dtype int8{dtype_id::int8}, int16{dtype_id::int16}, int32{dtype_id::int32},
    int64{dtype_id::int64};
inline constexpr dtype uint8{dtype_id::uint8}, uint16{dtype_id::uint16}, uint32{dtype_id::uint32},
    uint64{dtype_id::uint64};
inline constexpr dtype float16{dtype_id::float16}, bfloat16{dtype_id::bfloat16},
    float32{dtype_id::float32}, float64{dtype_id::float64};
inline constexpr dtype complex64{dtype_id::complex64}, complex128{dtype_id::complex128};

/// All dtypes, in dtype_id order (handy for table tests and loops over every type).
inline constexpr dtype kAllDtypes[kNumDtypes] = {bool_,    int8,    int16,   int32,     int64,
                                                 uint8,    uint16,  uint32,  uint64,    float16,
                                                 bfloat16, float32, float64, complex64, complex128};

/// The kind of a Python-style scalar whose type is "weak" under NEP 50: it takes the array's
/// dtype when that dtype is of the same or a higher kind.
enum class weak_scalar { integer, floating, complex };

/// can_cast(from, to, "safe") as NumPy: every value of `from` is representable in `to`.
bool can_cast_safely(dtype from, dtype to);
/// can_cast(from, to, "same_kind"): safe, or within the same kind order (e.g. float64->float32).
bool can_cast_same_kind(dtype from, dtype to);
/// NumPy 2 promotion of two array dtypes (bfloat16 as ml_dtypes: with float16 -> float32).
dtype result_type(dtype a, dtype b);
/// Promotion of an array dtype with a weak scalar (NEP 50).
dtype result_type(dtype a, weak_scalar s);

// Host C++ type <-> dtype.
template <class T>
struct dtype_traits;  // defined for the host types below only
#define KILN_DTYPE_TRAIT(T, D)        \
  template <>                         \
  struct dtype_traits<T> {            \
    static constexpr dtype value = D; \
  };
KILN_DTYPE_TRAIT(bool, bool_)
KILN_DTYPE_TRAIT(std::int8_t, int8)
KILN_DTYPE_TRAIT(std::int16_t, int16)
KILN_DTYPE_TRAIT(std::int32_t, int32)
KILN_DTYPE_TRAIT(std::int64_t, int64)
KILN_DTYPE_TRAIT(std::uint8_t, uint8)
KILN_DTYPE_TRAIT(std::uint16_t, uint16)
KILN_DTYPE_TRAIT(std::uint32_t, uint32)
KILN_DTYPE_TRAIT(std::uint64_t, uint64)
KILN_DTYPE_TRAIT(half, float16)
KILN_DTYPE_TRAIT(bf16, bfloat16)
KILN_DTYPE_TRAIT(float, float32)
KILN_DTYPE_TRAIT(double, float64)
KILN_DTYPE_TRAIT(std::complex<float>, complex64)
KILN_DTYPE_TRAIT(std::complex<double>, complex128)
#undef KILN_DTYPE_TRAIT
// `long long` / `unsigned long long` differ from int64_t/uint64_t on LP64 but hold the same values.
template <>
struct dtype_traits<long long> {
  static constexpr dtype value = int64;
};
template <>
struct dtype_traits<unsigned long long> {
  static constexpr dtype value = uint64;
};

template <class T>
concept host_element = requires {
  dtype_traits<T>::value;
};

template <host_element T>
constexpr dtype dtype_of() {
  return dtype_traits<T>::value;
}

/// Calls f(T{}) with the host type T of `t` (bool, int8_t, ..., kiln::half, std::complex<double>).
template <class F>
decltype(auto) visit_dtype(dtype t, F&& f) {
  switch (t.id()) {
    case dtype_id::bool_:
      return f(bool{});
    case dtype_id::int8:
      return f(std::int8_t{});
    case dtype_id::int16:
      return f(std::int16_t{});
    case dtype_id::int32:
      return f(std::int32_t{});
    case dtype_id::int64:
      return f(std::int64_t{});
    case dtype_id::uint8:
      return f(std::uint8_t{});
    case dtype_id::uint16:
      return f(std::uint16_t{});
    case dtype_id::uint32:
      return f(std::uint32_t{});
    case dtype_id::uint64:
      return f(std::uint64_t{});
    case dtype_id::float16:
      return f(half{});
    case dtype_id::bfloat16:
      return f(bf16{});
    case dtype_id::float32:
      return f(float{});
    case dtype_id::float64:
      return f(double{});
    case dtype_id::complex64:
      return f(std::complex<float>{});
    default:
      return f(std::complex<double>{});
  }
}

}  // namespace kiln

template <>
struct fmt::formatter<kiln::dtype> : fmt::formatter<std::string_view> {
  auto format(kiln::dtype t, format_context& ctx) const {
    return fmt::formatter<std::string_view>::format(t.name(), ctx);
  }
};
