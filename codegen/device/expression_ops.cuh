// Device helpers of the expression operators (codegen/src/op_table.cpp): each section is one
// helper, emitted only into kernels whose operators need it, in this order (a helper uses only
// helpers above it). Templates over the compute type T; integer, float and complex branches
// are chosen at compile time. Follows kiln_core.cuh (and kiln_complex.cuh for complex kernels).

// kiln-section kiln_xint
template <class T>
struct kiln_xint {
  static constexpr bool value = false, is_signed = false;
};
template <>
struct kiln_xint<bool> {
  static constexpr bool value = true, is_signed = false;
};
template <>
struct kiln_xint<signed char> {
  static constexpr bool value = true, is_signed = true;
};
template <>
struct kiln_xint<short> {
  static constexpr bool value = true, is_signed = true;
};
template <>
struct kiln_xint<int> {
  static constexpr bool value = true, is_signed = true;
};
template <>
struct kiln_xint<long long> {
  static constexpr bool value = true, is_signed = true;
};
template <>
struct kiln_xint<unsigned char> {
  static constexpr bool value = true, is_signed = false;
};
template <>
struct kiln_xint<unsigned short> {
  static constexpr bool value = true, is_signed = false;
};
template <>
struct kiln_xint<unsigned int> {
  static constexpr bool value = true, is_signed = false;
};
template <>
struct kiln_xint<unsigned long long> {
  static constexpr bool value = true, is_signed = false;
};

// kiln-section kiln_isnan
template <class T>
__device__ __forceinline__ bool kiln_isnan(T a) {
  if constexpr (kiln_traits<T>::is_complex)
    return isnan(a.real()) || isnan(a.imag());
  else if constexpr (kiln_xint<T>::value)
    return false;
  else
    return isnan(a);
}
template <class T>
__device__ __forceinline__ bool kiln_isinf(T a) {
  if constexpr (kiln_traits<T>::is_complex)
    return isinf(a.real()) || isinf(a.imag());
  else if constexpr (kiln_xint<T>::value)
    return false;
  else
    return isinf(a);
}
template <class T>
__device__ __forceinline__ bool kiln_isfinite(T a) {
  if constexpr (kiln_traits<T>::is_complex)
    return isfinite(a.real()) && isfinite(a.imag());
  else if constexpr (kiln_xint<T>::value)
    return true;
  else
    return isfinite(a);
}

// kiln-section kiln_lt
// Complex numbers order lexicographically, as NumPy's.
template <class T>
__device__ __forceinline__ bool kiln_lt(T a, T b) {
  if constexpr (kiln_traits<T>::is_complex)
    return a.real() < b.real() || (a.real() == b.real() && a.imag() < b.imag());
  else
    return a < b;
}
template <class T>
__device__ __forceinline__ bool kiln_le(T a, T b) {
  if constexpr (kiln_traits<T>::is_complex)
    return a.real() < b.real() || (a.real() == b.real() && a.imag() <= b.imag());
  else
    return a <= b;
}

// kiln-section kiln_floordiv
// Integer division by zero is 0 (NumPy warns, never traps); MIN / -1 wraps.
template <class T>
__device__ __forceinline__ T kiln_floordiv(T a, T b) {
  if constexpr (kiln_xint<T>::value) {
    if (b == 0) return T(0);
    if constexpr (kiln_xint<T>::is_signed) {
      if (b == T(-1)) return T(0ull - static_cast<unsigned long long>(a));
      T q = T(a / b);
      if (T(a % b) != 0 && ((a < 0) != (b < 0))) q = T(q - 1);
      return q;
    } else {
      return T(a / b);
    }
  } else {
    if (b == 0) return a / b;
    const T m = fmod(a, b);
    T d = (a - m) / b;
    if (m != 0 && ((b < 0) != (m < 0))) d -= T(1);
    if (d == 0) return copysign(T(0), a / b);
    T f = floor(d);
    if (d - f > T(0.5)) f += T(1);
    return f;
  }
}

// kiln-section kiln_mod
template <class T>
__device__ __forceinline__ T kiln_mod(T a, T b) {
  if constexpr (kiln_xint<T>::value) {
    if (b == 0) return T(0);
    if constexpr (kiln_xint<T>::is_signed) {
      if (b == T(-1)) return T(0);
      T r = T(a % b);
      if (r != 0 && ((r < 0) != (b < 0))) r = T(r + b);
      return r;
    } else {
      return T(a % b);
    }
  } else {
    if (b == 0) return fmod(a, b);
    T r = fmod(a, b);
    if (r != 0) {
      if ((b < 0) != (r < 0)) r += b;
    } else {
      r = copysign(T(0), b);
    }
    return r;
  }
}

// kiln-section kiln_pow
// Integer powers by squaring (wrapping); a negative exponent gives 0 (NumPy raises).
template <class T>
__device__ __forceinline__ T kiln_pow(T a, T b) {
  if constexpr (kiln_xint<T>::value) {
    if constexpr (kiln_xint<T>::is_signed) {
      if (b < 0) return a == 1 ? T(1) : a == T(-1) ? T((b & 1) ? -1 : 1) : T(0);
    }
    unsigned long long r = 1, x = static_cast<unsigned long long>(a);
    unsigned long long e = static_cast<unsigned long long>(b);
    while (e) {
      if (e & 1) r *= x;
      x *= x;
      e >>= 1;
    }
    return T(r);
  } else {
    return pow(a, b);
  }
}

// kiln-section kiln_maximum
// maximum/minimum propagate NaN (the first NaN), as NumPy's.
template <class T>
__device__ __forceinline__ T kiln_maximum(T a, T b) {
  if (kiln_isnan(a)) return a;
  if (kiln_isnan(b)) return b;
  return kiln_lt(a, b) ? b : a;
}
template <class T>
__device__ __forceinline__ T kiln_minimum(T a, T b) {
  if (kiln_isnan(a)) return a;
  if (kiln_isnan(b)) return b;
  return kiln_lt(b, a) ? b : a;
}

// kiln-section kiln_fmax
template <class T>
__device__ __forceinline__ T kiln_fmax(T a, T b) {
  if (kiln_isnan(b)) return a;
  if (kiln_isnan(a)) return b;
  return kiln_lt(a, b) ? b : a;
}
template <class T>
__device__ __forceinline__ T kiln_fmin(T a, T b) {
  if (kiln_isnan(b)) return a;
  if (kiln_isnan(a)) return b;
  return kiln_lt(b, a) ? b : a;
}

// kiln-section kiln_abs
template <class T>
__device__ __forceinline__ auto kiln_abs(T a) {
  if constexpr (kiln_traits<T>::is_complex)
    return abs(a);
  else if constexpr (kiln_xint<T>::value && !kiln_xint<T>::is_signed)
    return a;
  else if constexpr (kiln_xint<T>::value)
    return T(a < 0 ? -a : a);
  else
    return fabs(a);
}

// kiln-section kiln_sign
// Complex: NumPy 2's z / |z|; an infinite part gives +-1 on its axis (both infinite: nan).
template <class T>
__device__ __forceinline__ T kiln_sign(T a) {
  if constexpr (kiln_traits<T>::is_complex) {
    typedef typename T::value_type V;
    const V x = a.real(), y = a.imag(), h = hypot(x, y);
    if (isnan(h)) return T(h, h);
    if (isinf(h)) {
      if (isinf(x)) return isinf(y) ? T(y - y, y - y) : T(x > 0 ? V(1) : V(-1), V(0));
      return T(V(0), y > 0 ? V(1) : V(-1));
    }
    if (h == V(0)) return T(V(0), V(0));
    return T(x / h, y / h);
  } else if constexpr (kiln_xint<T>::value) {
    return T((T(0) < a) - (a < T(0)));
  } else {
    if (isnan(a)) return a;
    return T((T(0) < a) - (a < T(0)));
  }
}

// kiln-section kiln_reciprocal
// Complex: NumPy's own formula (not 1 / z), each step rounded once: its results bit for bit.
template <class T>
__device__ __forceinline__ T kiln_reciprocal(T a) {
  if constexpr (kiln_xint<T>::value) {
    return a == 0 ? T(0) : T(1 / a);
  } else if constexpr (kiln_traits<T>::is_complex) {
    typedef typename T::value_type V;
    const V x = a.real(), y = a.imag();
    if (fabs(y) <= fabs(x)) {
      const V r = y / x, d = kiln_add_rn(x, kiln_mul_rn(y, r));
      return T(V(1) / d, -r / d);
    }
    const V r = x / y, d = kiln_add_rn(kiln_mul_rn(x, r), y);
    return T(r / d, V(-1) / d);
  } else {
    return T(1) / a;
  }
}
template <class T>
__device__ __forceinline__ T kiln_square(T a) {
  return T(a * a);
}

// kiln-section kiln_floor
// floor/ceil/trunc keep integers (NumPy 2); rint of complex rounds both parts.
template <class T>
__device__ __forceinline__ T kiln_floor(T a) {
  if constexpr (kiln_xint<T>::value)
    return a;
  else
    return floor(a);
}
template <class T>
__device__ __forceinline__ T kiln_ceil(T a) {
  if constexpr (kiln_xint<T>::value)
    return a;
  else
    return ceil(a);
}
template <class T>
__device__ __forceinline__ T kiln_trunc(T a) {
  if constexpr (kiln_xint<T>::value)
    return a;
  else
    return trunc(a);
}
template <class T>
__device__ __forceinline__ T kiln_rint(T a) {
  if constexpr (kiln_traits<T>::is_complex)
    return T(rint(a.real()), rint(a.imag()));
  else
    return rint(a);
}

// kiln-section kiln_shift
// Shifts past the width give 0 (or -1 for a negative value shifted right), as NumPy's.
template <class T>
__device__ __forceinline__ T kiln_lshift(T a, T b) {
  if (b < 0 || static_cast<unsigned long long>(b) >= sizeof(T) * 8) return T(0);
  return T(static_cast<unsigned long long>(a) << b);
}
template <class T>
__device__ __forceinline__ T kiln_rshift(T a, T b) {
  if (b < 0 || static_cast<unsigned long long>(b) >= sizeof(T) * 8) return T(a < 0 ? -1 : 0);
  return T(a >> b);
}

// kiln-section kiln_invert
template <class T>
__device__ __forceinline__ T kiln_invert(T a) {
  if constexpr (kiln_same<T, bool>::value)
    return !a;
  else
    return T(~a);
}

// kiln-section kiln_real
template <class T>
__device__ __forceinline__ auto kiln_real(T a) {
  if constexpr (kiln_traits<T>::is_complex)
    return a.real();
  else
    return a;
}
template <class T>
__device__ __forceinline__ auto kiln_imag(T a) {
  if constexpr (kiln_traits<T>::is_complex)
    return a.imag();
  else
    return T(0);
}
template <class T>
__device__ __forceinline__ T kiln_conj(T a) {
  if constexpr (kiln_traits<T>::is_complex)
    return T(a.real(), -a.imag());
  else
    return a;
}
template <class T>
__device__ __forceinline__ auto kiln_angle(T a) {
  if constexpr (kiln_traits<T>::is_complex)
    return atan2(a.imag(), a.real());
  else
    return atan2(T(0), a);
}

// kiln-section kiln_cmath
// Functions the device complex type lacks, from the ones it has.
template <class T>
__device__ __forceinline__ T kiln_exp2(T a) {
  if constexpr (kiln_traits<T>::is_complex) {
    typedef typename T::value_type V;
    return exp(a * V(0.693147180559945309417232121458176568));
  } else
    return exp2(a);
}
template <class T>
__device__ __forceinline__ T kiln_log2(T a) {
  if constexpr (kiln_traits<T>::is_complex) {
    typedef typename T::value_type V;
    return log(a) * V(1.44269504088896340735992468100189214);
  } else
    return log2(a);
}
// expm1 of complex: NumPy's (expm1(x) cos y - 2 sin^2(y/2), e^x sin y), free of the
// cos y - 1 cancellation near 0 (expm1(1e-30j) has real part -5e-61), infinities as NumPy's.
template <class T>
__device__ __forceinline__ T kiln_expm1(T a) {
  if constexpr (kiln_traits<T>::is_complex) {
    typedef typename T::value_type V;
    const V x = a.real(), y = a.imag(), h = sin(y * V(0.5));
    return T(expm1(x) * cos(y) - V(2) * h * h, exp(x) * sin(y));
  } else {
    return expm1(a);
  }
}
// log1p of complex: log|1 + z| + i atan2(y, 1 + x). Near |1 + z| = 1 the real part is
// log1p(2x + x^2 + y^2) / 2 with that sum in about twice the working precision (exact
// products and sums), so small z keep their digits (NumPy's log(hypot(1 + x, y)) loses
// them: log1p(1e-20+0j) is 0 there); elsewhere, and for infinities and NaNs, NumPy's form.
template <class T>
__device__ __forceinline__ T kiln_log1p(T a) {
  if constexpr (kiln_traits<T>::is_complex) {
    typedef typename T::value_type V;
    const V x = a.real(), y = a.imag(), u = x + V(1), h = hypot(u, y);
    const V im = atan2(y, u);
    if (!(h > V(0.71) && h < V(1.73)) || !isfinite(x) || !isfinite(y)) return T(log(h), im);
    // 2x + x^2 + y^2 = s (+ small corrections): x^2 and y^2 as exact pairs, then two-sums.
    const V px = kiln_mul_rn(x, x), ex = fma(x, x, -px), py = kiln_mul_rn(y, y),
            ey = fma(y, y, -py);
    const V tx = V(2) * x;
    const V s1 = tx + px, b1 = s1 - tx, e1 = (tx - (s1 - b1)) + (px - b1);
    const V s2 = s1 + py, b2 = s2 - s1, e2 = (s1 - (s2 - b2)) + (py - b2);
    return T(V(0.5) * log1p(s2 + (e1 + e2 + ex + ey)), im);
  } else {
    return log1p(a);
  }
}

// kiln-section kiln_div_row
// a / b where b is one value a row (a row kernel's divisor, an expression of its reductions'
// results and scalars): b's reciprocal in float64 is made once a row (kiln_row_divisor), and
// each element is a float64 multiply rounded to float32, IEEE division's quotient bit for bit.
// Why exact: r = RN64(1/b) and RN64(a r) are within 2^-52 (relative) of a/b, while a quotient
// of two float32 values in the normal range is never a float32 midpoint (one needs 25 bits) and
// lies at least 1/(B M) > 2^-49 from every midpoint (B, M: the 24- and 25-bit integers of b and
// the midpoint), so rounding to float32 lands where a/b does; zeros, infinities and NaNs come
// out as IEEE's. Subnormal quotients can be midpoints, so this needs what row kernels compile
// with, -ftz=true (CuPy's default): there the conversions flush subnormals as div.rn.ftz does.
// Why: inline float32 division is a reciprocal, a range check and a call per element, whose
// saved registers spilled standardizing over 32 float32 channels (144 bytes).
struct kiln_row_divisor {
  double r;
  kiln_row_divisor() = default;
  __device__ __forceinline__ explicit kiln_row_divisor(float b) : r(1.0 / double(b)) {}
};
__device__ __forceinline__ float kiln_div_row(float a, const kiln_row_divisor& d) {
  return float(__dmul_rn(double(a), d.r));
}
