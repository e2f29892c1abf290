#include "kiln/runtime/scalar.hpp"

#include <fmt/format.h>

#include <cmath>
#include <cstring>
#include <limits>

#include "kiln/runtime/error.hpp"

namespace kiln {
namespace {

template <class T>
void put(void* dst, T v) {
  std::memcpy(dst, &v, sizeof(T));
}

// Integer targets: exact range check on the integer value (NumPy 2 raises OverflowError).
template <class T>
void store_integer(const scalar& s, std::int64_t i, std::uint64_t u, bool is_unsigned, dtype t,
                   void* dst) {
  using L = std::numeric_limits<T>;
  bool fits = is_unsigned ? u <= std::uint64_t(L::max())
                          : (i >= 0 ? std::uint64_t(i) <= std::uint64_t(L::max())
                                    : L::is_signed && i >= std::int64_t(L::min()));
  if (!fits) throw ValueError(fmt::format("integer {} does not fit {}", s.str(), t.name()));
  put<T>(dst, is_unsigned ? T(u) : T(i));
}

// Float -> integer truncates toward zero, as a C cast (NumPy's unsafe assignment).
template <class T>
void store_truncated(double f, void* dst) {
  if (std::isnan(f) || std::isinf(f)) {
    put<T>(dst, T(0));
    return;
  }
  double lo = double(std::numeric_limits<T>::min()), hi = double(std::numeric_limits<T>::max());
  put<T>(dst, f < lo    ? std::numeric_limits<T>::min()
              : f >= hi ? std::numeric_limits<T>::max()
                        : T(f));
}

}  // namespace

weak_scalar scalar::weak_kind() const noexcept {
  switch (kind_) {
    case kind::boolean:
    case kind::signed_integer:
    case kind::unsigned_integer:
      return weak_scalar::integer;
    case kind::floating:
      return weak_scalar::floating;
    default:
      return weak_scalar::complex;
  }
}

bool scalar::as_bool() const noexcept {
  switch (kind_) {
    case kind::boolean:
    case kind::unsigned_integer:
      return u_ != 0;
    case kind::signed_integer:
      return i_ != 0;
    case kind::floating:
      return f_ != 0;
    default:
      return c_ != std::complex<double>(0);
  }
}

double scalar::as_double() const noexcept {
  switch (kind_) {
    case kind::boolean:
    case kind::unsigned_integer:
      return double(u_);
    case kind::signed_integer:
      return double(i_);
    case kind::floating:
      return f_;
    default:
      return c_.real();
  }
}

std::complex<double> scalar::as_complex() const noexcept {
  return kind_ == kind::complex ? c_ : std::complex<double>(as_double());
}

std::string scalar::str() const {
  switch (kind_) {
    case kind::boolean:
      return u_ ? "True" : "False";
    case kind::signed_integer:
      return fmt::format("{}", i_);
    case kind::unsigned_integer:
      return fmt::format("{}", u_);
    case kind::floating:
      return fmt::format("{}", f_);
    default:
      return fmt::format("({}{:+}j)", c_.real(), c_.imag());
  }
}

bool scalar::fits(dtype t) const noexcept {
  if (kind_ != kind::signed_integer && kind_ != kind::unsigned_integer) return true;
  if (!t.is_integer()) return true;
  const int bits = int(t.itemsize()) * 8;
  if (t.kind() == 'u') {
    if (kind_ == kind::signed_integer && i_ < 0) return false;
    return bits == 64 || u_ < (std::uint64_t(1) << bits);
  }
  const std::int64_t hi =
      bits == 64 ? std::numeric_limits<std::int64_t>::max() : (std::int64_t(1) << (bits - 1)) - 1;
  if (kind_ == kind::unsigned_integer) return u_ <= std::uint64_t(hi);
  return i_ >= -hi - 1 && i_ <= hi;
}

scalar scalar::wrapped(dtype t) const noexcept {
  if ((kind_ != kind::signed_integer && kind_ != kind::unsigned_integer) || !t.is_integer())
    return *this;
  const int bits = int(t.itemsize()) * 8;
  const std::uint64_t mask = bits == 64 ? ~std::uint64_t(0) : (std::uint64_t(1) << bits) - 1;
  const std::uint64_t bits_of = kind_ == kind::signed_integer ? std::uint64_t(i_) : u_;
  const std::uint64_t low = bits_of & mask;  // the bits a C cast keeps
  if (t.kind() == 'u') return scalar(low);
  // Sign-extend the kept bits.
  const std::uint64_t sign = std::uint64_t(1) << (bits - 1);
  return scalar(std::int64_t((low ^ sign) - sign));
}

bool scalar::is_negative() const noexcept {
  switch (kind_) {
    case kind::signed_integer:
      return i_ < 0;
    case kind::floating:
      return f_ < 0;
    default:
      return false;
  }
}

void scalar::store_as(dtype t, void* dst) const {
  bool integral = kind_ != kind::floating && kind_ != kind::complex;
  bool is_unsigned = kind_ == kind::boolean || kind_ == kind::unsigned_integer;
  auto to_int = [&]<class T>(T) {
    if (integral)
      store_integer<T>(*this, i_, u_, is_unsigned, t, dst);
    else
      store_truncated<T>(as_double(), dst);
  };
  switch (t.id()) {
    case dtype_id::bool_:
      put<bool>(dst, as_bool());
      return;
    case dtype_id::int8:
      return to_int(std::int8_t{});
    case dtype_id::int16:
      return to_int(std::int16_t{});
    case dtype_id::int32:
      return to_int(std::int32_t{});
    case dtype_id::int64:
      return to_int(std::int64_t{});
    case dtype_id::uint8:
      return to_int(std::uint8_t{});
    case dtype_id::uint16:
      return to_int(std::uint16_t{});
    case dtype_id::uint32:
      return to_int(std::uint32_t{});
    case dtype_id::uint64:
      return to_int(std::uint64_t{});
    case dtype_id::float16:
      put(dst, half(float(as_double())));
      return;
    case dtype_id::bfloat16:
      put(dst, bf16(float(as_double())));
      return;
    case dtype_id::float32:
      put(dst, float(as_double()));
      return;
    case dtype_id::float64:
      put(dst, as_double());
      return;
    case dtype_id::complex64:
      put(dst, std::complex<float>(as_complex()));
      return;
    case dtype_id::complex128:
      put(dst, as_complex());
      return;
  }
}

}  // namespace kiln
