#pragma once
// A host scalar of any kiln type, converted to a dtype with NumPy's assignment rules: an
// integer out of the target's range is an error (OverflowError in NumPy, ValueError here),
// a float into an integer truncates toward zero, a complex into a real drops the imaginary part.
//
//   kiln::scalar s = 300;
//   std::byte buf[16];
//   s.store_as(kiln::float32, buf);   // 300.0f
//   s.store_as(kiln::uint8, buf);     // throws ValueError: 300 does not fit uint8
#include <complex>
#include <concepts>
#include <cstdint>
#include <string>

#include "kiln/runtime/dtype.hpp"

namespace kiln {

class scalar {
 public:
  enum class kind : std::uint8_t { boolean, signed_integer, unsigned_integer, floating, complex };

  scalar(bool v) noexcept : kind_(kind::boolean), natural_(bool_) { u_ = v; }
  template <std::signed_integral T>
  requires(!std::same_as<T, bool>) scalar(T v)
  noexcept : kind_(kind::signed_integer), natural_(dtype_of_signed<T>()) { i_ = v; }
  template <std::unsigned_integral T>
  requires(!std::same_as<T, bool>) scalar(T v)
  noexcept : kind_(kind::unsigned_integer), natural_(dtype_of_unsigned<T>()) { u_ = v; }
  scalar(float v) noexcept : kind_(kind::floating), natural_(float32) { f_ = v; }
  scalar(double v) noexcept : kind_(kind::floating), natural_(float64) { f_ = v; }
  scalar(half v) noexcept : kind_(kind::floating), natural_(float16) { f_ = float(v); }
  scalar(bf16 v) noexcept : kind_(kind::floating), natural_(bfloat16) { f_ = float(v); }
  scalar(std::complex<float> v) noexcept : kind_(kind::complex), natural_(complex64) { c_ = v; }
  scalar(std::complex<double> v) noexcept : kind_(kind::complex), natural_(complex128) { c_ = v; }

  kind value_kind() const noexcept { return kind_; }
  /// The dtype of the C++ type it came from (int -> int32, double -> float64, ...).
  dtype natural_dtype() const noexcept { return natural_; }
  /// How it promotes against an array when treated as a weak (Python-style) scalar.
  weak_scalar weak_kind() const noexcept;
  /// Writes the value as dtype `t` into dst (t.itemsize() bytes). Throws ValueError when an
  /// integer value does not fit an integer dtype (or a negative value meets an unsigned one).
  void store_as(dtype t, void* dst) const;
  /// Whether store_as(t) keeps the value: false only for an integer outside an integer
  /// dtype's range (floats and complex convert to every dtype).
  bool fits(dtype t) const noexcept;
  /// An integer value as a C cast to integer dtype `t` gives it (modulo 2^bits, two's
  /// complement: -1 as uint8 is 255), NumPy's unsafe casting; any other value unchanged.
  scalar wrapped(dtype t) const noexcept;
  /// Whether the value is a negative integer (or a negative float).
  bool is_negative() const noexcept;
  /// The value as text, for messages ("300", "-1.5", "(1+2j)").
  std::string str() const;

  bool as_bool() const noexcept;
  double as_double() const noexcept;
  std::complex<double> as_complex() const noexcept;

 private:
  template <class T>
  static constexpr dtype dtype_of_signed() {
    return sizeof(T) == 1 ? int8 : sizeof(T) == 2 ? int16 : sizeof(T) == 4 ? int32 : int64;
  }
  template <class T>
  static constexpr dtype dtype_of_unsigned() {
    return sizeof(T) == 1 ? uint8 : sizeof(T) == 2 ? uint16 : sizeof(T) == 4 ? uint32 : uint64;
  }
  kind kind_;
  dtype natural_;
  union {
    std::int64_t i_;
    std::uint64_t u_;
    double f_;
  };
  std::complex<double> c_{};
};

}  // namespace kiln
