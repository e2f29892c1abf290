// complex<float> and complex<double> for generated kernels; follows kiln_core.cuh.
// complex<float> / complex<double>: kiln's own type, layout-compatible with std::complex
// (two values, aligned to their sum). libcu++'s complex header cost NVRTC ~1 s per kernel.
// Arithmetic is NumPy's: textbook * (no C99 Annex G recovery of infinities), Smith's scaled
// division. Inverse trigonometric functions use Kahan's formulas ("Branch cuts for complex
// elementary functions", 1987), so branch cuts follow the sign of zero as C99 and NumPy do.

// kiln-section kiln_complex
template <class kiln_V> struct alignas(2 * sizeof(kiln_V)) complex {
  typedef kiln_V value_type;
  kiln_V kiln_re, kiln_im;
  __host__ __device__ constexpr complex(kiln_V kiln_r = kiln_V(), kiln_V kiln_i = kiln_V()) : kiln_re(kiln_r), kiln_im(kiln_i) {}
  template <class kiln_U>
  __host__ __device__ explicit constexpr complex(const complex<kiln_U>& kiln_z)
      : kiln_re(kiln_V(kiln_z.real())), kiln_im(kiln_V(kiln_z.imag())) {}
  __host__ __device__ constexpr kiln_V real() const { return kiln_re; }
  __host__ __device__ constexpr kiln_V imag() const { return kiln_im; }
  __host__ __device__ void real(kiln_V kiln_v) { kiln_re = kiln_v; }
  __host__ __device__ void imag(kiln_V kiln_v) { kiln_im = kiln_v; }

  __device__ complex& operator=(kiln_V kiln_v) { kiln_re = kiln_v; kiln_im = kiln_V(0); return *this; }
  __device__ complex& operator+=(const complex& kiln_z) { kiln_re += kiln_z.kiln_re; kiln_im += kiln_z.kiln_im; return *this; }
  __device__ complex& operator-=(const complex& kiln_z) { kiln_re -= kiln_z.kiln_re; kiln_im -= kiln_z.kiln_im; return *this; }
  __device__ complex& operator*=(const complex& kiln_z) { return *this = *this * kiln_z; }
  __device__ complex& operator/=(const complex& kiln_z) { return *this = *this / kiln_z; }
  __device__ complex& operator+=(kiln_V kiln_v) { kiln_re += kiln_v; return *this; }
  __device__ complex& operator-=(kiln_V kiln_v) { kiln_re -= kiln_v; return *this; }
  __device__ complex& operator*=(kiln_V kiln_v) { kiln_re *= kiln_v; kiln_im *= kiln_v; return *this; }
  __device__ complex& operator/=(kiln_V kiln_v) { kiln_re /= kiln_v; kiln_im /= kiln_v; return *this; }

  // Hidden friends: a real operand of another arithmetic type (2, 0.5) converts to kiln_V.
  __device__ friend complex operator+(const complex& kiln_z) { return kiln_z; }
  __device__ friend complex operator-(const complex& kiln_z) { return complex(-kiln_z.kiln_re, -kiln_z.kiln_im); }
  __device__ friend complex operator+(const complex& kiln_a, const complex& kiln_b) {
    return complex(kiln_a.kiln_re + kiln_b.kiln_re, kiln_a.kiln_im + kiln_b.kiln_im);
  }
  __device__ friend complex operator+(const complex& kiln_a, kiln_V kiln_b) { return complex(kiln_a.kiln_re + kiln_b, kiln_a.kiln_im); }
  __device__ friend complex operator+(kiln_V kiln_a, const complex& kiln_b) { return complex(kiln_a + kiln_b.kiln_re, kiln_b.kiln_im); }
  __device__ friend complex operator-(const complex& kiln_a, const complex& kiln_b) {
    return complex(kiln_a.kiln_re - kiln_b.kiln_re, kiln_a.kiln_im - kiln_b.kiln_im);
  }
  __device__ friend complex operator-(const complex& kiln_a, kiln_V kiln_b) { return complex(kiln_a.kiln_re - kiln_b, kiln_a.kiln_im); }
  __device__ friend complex operator-(kiln_V kiln_a, const complex& kiln_b) { return complex(kiln_a - kiln_b.kiln_re, -kiln_b.kiln_im); }
  __device__ friend complex operator*(const complex& kiln_a, const complex& kiln_b) {
    return complex(kiln_a.kiln_re * kiln_b.kiln_re - kiln_a.kiln_im * kiln_b.kiln_im,
                   kiln_a.kiln_re * kiln_b.kiln_im + kiln_a.kiln_im * kiln_b.kiln_re);
  }
  __device__ friend complex operator*(const complex& kiln_a, kiln_V kiln_b) { return complex(kiln_a.kiln_re * kiln_b, kiln_a.kiln_im * kiln_b); }
  __device__ friend complex operator*(kiln_V kiln_a, const complex& kiln_b) { return complex(kiln_a * kiln_b.kiln_re, kiln_a * kiln_b.kiln_im); }
  // Smith's algorithm: divide by the larger part of the divisor first, so |b| near the
  // overflow or underflow threshold still gives a finite, accurate quotient (as NumPy).
  __device__ friend complex operator/(const complex& kiln_a, const complex& kiln_b) {
    const kiln_V kiln_ar = kiln_a.kiln_re, kiln_ai = kiln_a.kiln_im, kiln_br = kiln_b.kiln_re, kiln_bi = kiln_b.kiln_im;
    if (fabs(kiln_br) >= fabs(kiln_bi)) {
      if (kiln_br == kiln_V(0) && kiln_bi == kiln_V(0))  // x / 0: inf or nan per part, as NumPy
        return complex(kiln_ar / fabs(kiln_br), kiln_ai / fabs(kiln_bi));
      const kiln_V kiln_t = kiln_bi / kiln_br, kiln_s = kiln_V(1) / (kiln_br + kiln_bi * kiln_t);
      return complex((kiln_ar + kiln_ai * kiln_t) * kiln_s, (kiln_ai - kiln_ar * kiln_t) * kiln_s);
    } else if (fabs(kiln_bi) > fabs(kiln_br)) {
      const kiln_V kiln_t = kiln_br / kiln_bi, kiln_s = kiln_V(1) / (kiln_bi + kiln_br * kiln_t);
      return complex((kiln_ar * kiln_t + kiln_ai) * kiln_s, (kiln_ai * kiln_t - kiln_ar) * kiln_s);
    } else {  // a NaN in b
      return complex(kiln_br * kiln_bi * kiln_ar, kiln_br * kiln_bi * kiln_ai);
    }
  }
  __device__ friend complex operator/(const complex& kiln_a, kiln_V kiln_b) { return complex(kiln_a.kiln_re / kiln_b, kiln_a.kiln_im / kiln_b); }
  __device__ friend complex operator/(kiln_V kiln_a, const complex& kiln_b) { return complex(kiln_a) / kiln_b; }
  __device__ friend bool operator==(const complex& kiln_a, const complex& kiln_b) {
    return kiln_a.kiln_re == kiln_b.kiln_re && kiln_a.kiln_im == kiln_b.kiln_im;
  }
  __device__ friend bool operator==(const complex& kiln_a, kiln_V kiln_b) { return kiln_a.kiln_re == kiln_b && kiln_a.kiln_im == kiln_V(0); }
  __device__ friend bool operator==(kiln_V kiln_a, const complex& kiln_b) { return kiln_b == kiln_a; }
  __device__ friend bool operator!=(const complex& kiln_a, const complex& kiln_b) { return !(kiln_a == kiln_b); }
  __device__ friend bool operator!=(const complex& kiln_a, kiln_V kiln_b) { return !(kiln_a == kiln_b); }
  __device__ friend bool operator!=(kiln_V kiln_a, const complex& kiln_b) { return !(kiln_b == kiln_a); }
};

template <class kiln_V> struct kiln_traits<complex<kiln_V>> {
  static constexpr bool is_complex = true;
  static constexpr bool is_low_float = false;
};

// Per precision: inf, nan, 1/sqrt(epsilon) (above it z*z + 1 == z*z), the largest exp argument.
template <class kiln_V> struct kiln_cconst;
template <> struct kiln_cconst<float> {
  __device__ static float inf() { return __int_as_float(0x7f800000); }
  __device__ static float nan() { return __int_as_float(0x7fc00000); }
  __device__ static constexpr float big() { return 4096.0f; }
  __device__ static constexpr float exp_max() { return 88.0f; }
};
template <> struct kiln_cconst<double> {
  __device__ static double inf() { return __longlong_as_double(0x7ff0000000000000ll); }
  __device__ static double nan() { return __longlong_as_double(0x7ff8000000000000ll); }
  __device__ static constexpr double big() { return 67108864.0; }
  __device__ static constexpr double exp_max() { return 709.0; }
};

template <class kiln_V> __device__ __forceinline__ kiln_V real(const complex<kiln_V>& kiln_z) { return kiln_z.real(); }
template <class kiln_V> __device__ __forceinline__ kiln_V imag(const complex<kiln_V>& kiln_z) { return kiln_z.imag(); }
template <class kiln_V> __device__ __forceinline__ complex<kiln_V> conj(const complex<kiln_V>& kiln_z) {
  return complex<kiln_V>(kiln_z.real(), -kiln_z.imag());
}
template <class kiln_V> __device__ __forceinline__ kiln_V abs(const complex<kiln_V>& kiln_z) { return hypot(kiln_z.real(), kiln_z.imag()); }
template <class kiln_V> __device__ __forceinline__ kiln_V norm(const complex<kiln_V>& kiln_z) {
  return kiln_z.real() * kiln_z.real() + kiln_z.imag() * kiln_z.imag();
}
template <class kiln_V> __device__ __forceinline__ kiln_V arg(const complex<kiln_V>& kiln_z) { return atan2(kiln_z.imag(), kiln_z.real()); }
template <class kiln_V> __device__ __forceinline__ complex<kiln_V> polar(kiln_V kiln_r, kiln_V kiln_t = kiln_V(0)) {
  return complex<kiln_V>(kiln_r * cos(kiln_t), kiln_r * sin(kiln_t));
}
template <class kiln_V> __device__ __forceinline__ complex<kiln_V> proj(const complex<kiln_V>& kiln_z) {
  if (isinf(kiln_z.real()) || isinf(kiln_z.imag()))
    return complex<kiln_V>(kiln_cconst<kiln_V>::inf(), copysign(kiln_V(0), kiln_z.imag()));
  return kiln_z;
}

template <class kiln_V> __device__ complex<kiln_V> exp(const complex<kiln_V>& kiln_z) {
  const kiln_V kiln_x = kiln_z.real(), kiln_y = kiln_z.imag();
  if (kiln_y == kiln_V(0)) return complex<kiln_V>(exp(kiln_x), kiln_y);  // keeps the sign of 0
  if (isinf(kiln_x) && !isfinite(kiln_y)) {
    if (kiln_x < 0) return complex<kiln_V>(kiln_V(0), kiln_V(0));
    return complex<kiln_V>(kiln_x, kiln_y - kiln_y);  // (inf, nan)
  }
  const kiln_V kiln_c = cos(kiln_y), kiln_s = sin(kiln_y);
  if (kiln_x > kiln_cconst<kiln_V>::exp_max()) {  // exp(x) overflows, the product may not
    const kiln_V kiln_h = exp(kiln_x * kiln_V(0.5));
    return complex<kiln_V>(kiln_h * kiln_c * kiln_h, kiln_h * kiln_s * kiln_h);
  }
  const kiln_V kiln_e = exp(kiln_x);
  return complex<kiln_V>(kiln_e * kiln_c, kiln_e * kiln_s);
}

// log|z| computed as log1p(|z|^2 - 1) / 2 near the unit circle, where log(hypot) would lose
// the digits of a small result.
template <class kiln_V> __device__ complex<kiln_V> log(const complex<kiln_V>& kiln_z) {
  const kiln_V kiln_x = kiln_z.real(), kiln_y = kiln_z.imag();
  const kiln_V kiln_r = hypot(kiln_x, kiln_y);
  kiln_V kiln_lr;
  if (kiln_r > kiln_V(0.75) && kiln_r < kiln_V(1.5)) {
    const kiln_V kiln_a = fmax(fabs(kiln_x), fabs(kiln_y)), kiln_b = fmin(fabs(kiln_x), fabs(kiln_y));
    kiln_lr = kiln_V(0.5) * log1p(fma(kiln_b, kiln_b, (kiln_a - kiln_V(1)) * (kiln_a + kiln_V(1))));
  } else {
    kiln_lr = log(kiln_r);
  }
  return complex<kiln_V>(kiln_lr, atan2(kiln_y, kiln_x));
}

template <class kiln_V> __device__ complex<kiln_V> log10(const complex<kiln_V>& kiln_z) {
  const complex<kiln_V> kiln_l = log(kiln_z);
  const kiln_V kiln_k = kiln_V(0.434294481903251827651128918916605082);  // 1 / ln 10
  return complex<kiln_V>(kiln_l.real() * kiln_k, kiln_l.imag() * kiln_k);
}

// The principal root, with re >= 0 and the sign of z's imaginary part; scaled so neither
// |z| near the largest value overflows nor subnormal parts lose digits.
template <class kiln_V> __device__ complex<kiln_V> sqrt(const complex<kiln_V>& kiln_z) {
  kiln_V kiln_x = kiln_z.real(), kiln_y = kiln_z.imag();
  if (kiln_x == kiln_V(0) && kiln_y == kiln_V(0)) return complex<kiln_V>(kiln_V(0), kiln_y);
  if (isinf(kiln_y)) return complex<kiln_V>(kiln_cconst<kiln_V>::inf(), kiln_y);
  if (isnan(kiln_x)) return complex<kiln_V>(kiln_x, kiln_y - kiln_y + kiln_x);
  if (isinf(kiln_x)) {
    if (kiln_x > 0) return complex<kiln_V>(kiln_x, isnan(kiln_y) ? kiln_y : copysign(kiln_V(0), kiln_y));
    return complex<kiln_V>(isnan(kiln_y) ? kiln_y : kiln_V(0), copysign(kiln_cconst<kiln_V>::inf(), kiln_y));
  }
  // Scale by an even power of two into a safe range; the root scales by half of it.
  const kiln_V kiln_m = fmax(fabs(kiln_x), fabs(kiln_y));
  int kiln_e = 0;
  if (kiln_m > kiln_V(1e30)) kiln_e = -64;
  else if (kiln_m < kiln_V(1e-30)) kiln_e = 64;
  if (kiln_e != 0) { kiln_x = ldexp(kiln_x, kiln_e); kiln_y = ldexp(kiln_y, kiln_e); }
  const kiln_V kiln_t = sqrt(kiln_V(0.5) * (fabs(kiln_x) + hypot(kiln_x, kiln_y)));
  kiln_V kiln_u, kiln_v;
  if (kiln_x >= kiln_V(0)) {
    kiln_u = kiln_t;
    kiln_v = kiln_y / (kiln_V(2) * kiln_t);
  } else {
    kiln_u = fabs(kiln_y) / (kiln_V(2) * kiln_t);
    kiln_v = copysign(kiln_t, kiln_y);
  }
  if (kiln_e != 0) { kiln_u = ldexp(kiln_u, -kiln_e / 2); kiln_v = ldexp(kiln_v, -kiln_e / 2); }
  return complex<kiln_V>(kiln_u, kiln_v);
}

// NumPy's power: small integer exponents by repeated multiplication (so z**2 == z*z),
// others as exp(b log a).
template <class kiln_V> __device__ complex<kiln_V> pow(const complex<kiln_V>& kiln_a, const complex<kiln_V>& kiln_b) {
  typedef complex<kiln_V> kiln_C;
  const kiln_V kiln_br = kiln_b.real(), kiln_bi = kiln_b.imag();
  if (kiln_br == kiln_V(0) && kiln_bi == kiln_V(0)) return kiln_C(kiln_V(1), kiln_V(0));
  if (kiln_a.real() == kiln_V(0) && kiln_a.imag() == kiln_V(0)) {
    if (kiln_br > kiln_V(0) && kiln_bi == kiln_V(0)) return kiln_C(kiln_V(0), kiln_V(0));
    return kiln_C(kiln_cconst<kiln_V>::nan(), kiln_cconst<kiln_V>::nan());
  }
  if (kiln_bi == kiln_V(0) && kiln_br == trunc(kiln_br) && fabs(kiln_br) < kiln_V(100)) {
    int kiln_n = int(kiln_br);
    if (kiln_n == 1) return kiln_a;
    if (kiln_n == 2) return kiln_a * kiln_a;
    if (kiln_n == 3) return kiln_a * kiln_a * kiln_a;
    unsigned kiln_m = unsigned(kiln_n < 0 ? -kiln_n : kiln_n), kiln_bit = 1;
    kiln_C kiln_r(kiln_V(1), kiln_V(0)), kiln_p = kiln_a;
    while (true) {
      if (kiln_m & kiln_bit) kiln_r = kiln_r * kiln_p;
      kiln_bit <<= 1;
      if (kiln_bit > kiln_m) break;
      kiln_p = kiln_p * kiln_p;
    }
    return kiln_n < 0 ? kiln_C(kiln_V(1), kiln_V(0)) / kiln_r : kiln_r;
  }
  return exp(kiln_b * log(kiln_a));
}
template <class kiln_V>
__device__ __forceinline__ complex<kiln_V> pow(const complex<kiln_V>& kiln_a, typename complex<kiln_V>::value_type kiln_b) {
  return pow(kiln_a, complex<kiln_V>(kiln_b));
}
template <class kiln_V>
__device__ __forceinline__ complex<kiln_V> pow(typename complex<kiln_V>::value_type kiln_a, const complex<kiln_V>& kiln_b) {
  return pow(complex<kiln_V>(kiln_a), kiln_b);
}

template <class kiln_V> __device__ complex<kiln_V> sinh(const complex<kiln_V>& kiln_z) {
  const kiln_V kiln_x = kiln_z.real(), kiln_y = kiln_z.imag();
  if (kiln_y == kiln_V(0)) return complex<kiln_V>(sinh(kiln_x), kiln_y);
  return complex<kiln_V>(sinh(kiln_x) * cos(kiln_y), cosh(kiln_x) * sin(kiln_y));
}
template <class kiln_V> __device__ complex<kiln_V> cosh(const complex<kiln_V>& kiln_z) {
  const kiln_V kiln_x = kiln_z.real(), kiln_y = kiln_z.imag();
  if (kiln_y == kiln_V(0)) return complex<kiln_V>(cosh(kiln_x), kiln_y * copysign(kiln_V(1), kiln_x));
  return complex<kiln_V>(cosh(kiln_x) * cos(kiln_y), sinh(kiln_x) * sin(kiln_y));
}
// Kahan's form: no cancellation near the poles, and |x| large gives +-1 without inf/inf.
template <class kiln_V> __device__ complex<kiln_V> tanh(const complex<kiln_V>& kiln_z) {
  const kiln_V kiln_x = kiln_z.real(), kiln_y = kiln_z.imag();
  if (kiln_y == kiln_V(0)) return complex<kiln_V>(tanh(kiln_x), kiln_y);
  if (fabs(kiln_x) > kiln_V(sizeof(kiln_V) == 4 ? 12 : 24)) {
    const kiln_V kiln_e = exp(kiln_V(-2) * fabs(kiln_x));
    return complex<kiln_V>(copysign(kiln_V(1), kiln_x), kiln_V(4) * sin(kiln_y) * cos(kiln_y) * kiln_e);
  }
  const kiln_V kiln_t = tan(kiln_y), kiln_b = kiln_V(1) + kiln_t * kiln_t;
  const kiln_V kiln_s = sinh(kiln_x), kiln_r = sqrt(kiln_V(1) + kiln_s * kiln_s);
  const kiln_V kiln_d = kiln_V(1) + kiln_b * kiln_s * kiln_s;
  return complex<kiln_V>(kiln_b * kiln_r * kiln_s / kiln_d, kiln_t / kiln_d);
}
// sin(z) = -i sinh(iz), cos(z) = cosh(iz), tan(z) = -i tanh(iz).
template <class kiln_V> __device__ complex<kiln_V> sin(const complex<kiln_V>& kiln_z) {
  const complex<kiln_V> kiln_w = sinh(complex<kiln_V>(-kiln_z.imag(), kiln_z.real()));
  return complex<kiln_V>(kiln_w.imag(), -kiln_w.real());
}
template <class kiln_V> __device__ complex<kiln_V> cos(const complex<kiln_V>& kiln_z) {
  return cosh(complex<kiln_V>(-kiln_z.imag(), kiln_z.real()));
}
template <class kiln_V> __device__ complex<kiln_V> tan(const complex<kiln_V>& kiln_z) {
  const complex<kiln_V> kiln_w = tanh(complex<kiln_V>(-kiln_z.imag(), kiln_z.real()));
  return complex<kiln_V>(kiln_w.imag(), -kiln_w.real());
}

// Kahan: asin z = (atan(x / Re(sqrt(1-z) sqrt(1+z))), asinh(Im(conj(sqrt(1-z)) sqrt(1+z)))).
template <class kiln_V> __device__ complex<kiln_V> asin(const complex<kiln_V>& kiln_z) {
  typedef complex<kiln_V> kiln_C;
  const kiln_V kiln_x = kiln_z.real(), kiln_y = kiln_z.imag();
  if (fabs(kiln_x) > kiln_cconst<kiln_V>::big() || fabs(kiln_y) > kiln_cconst<kiln_V>::big()) {
    // asin z = -i log(2iz) + O(1/z^2): no overflow in the products below.
    const kiln_C kiln_l = log(kiln_C(fabs(kiln_y), fabs(kiln_x)));
    return kiln_C(copysign(kiln_l.imag(), kiln_x), copysign(kiln_l.real() + kiln_V(0.693147180559945309417232121458176568), kiln_y));
  }
  const kiln_C kiln_a = sqrt(kiln_C(kiln_V(1) - kiln_x, -kiln_y)), kiln_b = sqrt(kiln_C(kiln_V(1) + kiln_x, kiln_y));
  return kiln_C(atan2(kiln_x, kiln_a.real() * kiln_b.real() - kiln_a.imag() * kiln_b.imag()),
                asinh(kiln_a.real() * kiln_b.imag() - kiln_a.imag() * kiln_b.real()));
}
// Kahan: acos z = (2 atan(Re sqrt(1-z) / Re sqrt(1+z)), asinh(Im(conj(sqrt(1+z)) sqrt(1-z)))).
template <class kiln_V> __device__ complex<kiln_V> acos(const complex<kiln_V>& kiln_z) {
  typedef complex<kiln_V> kiln_C;
  const kiln_V kiln_x = kiln_z.real(), kiln_y = kiln_z.imag();
  if (fabs(kiln_x) > kiln_cconst<kiln_V>::big() || fabs(kiln_y) > kiln_cconst<kiln_V>::big()) {
    const kiln_C kiln_l = log(kiln_C(fabs(kiln_x), fabs(kiln_y)));
    const kiln_V kiln_re = kiln_x < 0 ? kiln_V(3.14159265358979323846264338327950288) - kiln_l.imag() : kiln_l.imag();
    return kiln_C(kiln_re, copysign(kiln_l.real() + kiln_V(0.693147180559945309417232121458176568), -kiln_y));
  }
  const kiln_C kiln_a = sqrt(kiln_C(kiln_V(1) - kiln_x, -kiln_y)), kiln_b = sqrt(kiln_C(kiln_V(1) + kiln_x, kiln_y));
  return kiln_C(kiln_V(2) * atan2(kiln_a.real(), kiln_b.real()),
                asinh(kiln_b.real() * kiln_a.imag() - kiln_b.imag() * kiln_a.real()));
}
// Kahan: acosh z = (asinh(Re(conj(sqrt(z-1)) sqrt(z+1))), 2 atan(Im sqrt(z-1) / Re sqrt(z+1))).
template <class kiln_V> __device__ complex<kiln_V> acosh(const complex<kiln_V>& kiln_z) {
  typedef complex<kiln_V> kiln_C;
  const kiln_V kiln_x = kiln_z.real(), kiln_y = kiln_z.imag();
  if (fabs(kiln_x) > kiln_cconst<kiln_V>::big() || fabs(kiln_y) > kiln_cconst<kiln_V>::big()) {
    // acosh z = log(2z) + O(1/z^2), on the branch with re >= 0.
    const kiln_C kiln_l = log(kiln_C(fabs(kiln_x), fabs(kiln_y)));
    const kiln_V kiln_im = kiln_x < 0 ? kiln_V(3.14159265358979323846264338327950288) - kiln_l.imag() : kiln_l.imag();
    return kiln_C(kiln_l.real() + kiln_V(0.693147180559945309417232121458176568), copysign(kiln_im, kiln_y));
  }
  const kiln_C kiln_a = sqrt(kiln_C(kiln_x - kiln_V(1), kiln_y)), kiln_b = sqrt(kiln_C(kiln_x + kiln_V(1), kiln_y));
  return kiln_C(asinh(kiln_a.real() * kiln_b.real() + kiln_a.imag() * kiln_b.imag()),
                kiln_V(2) * atan2(kiln_a.imag(), kiln_b.real()));
}
// asinh z = -i asin(iz).
template <class kiln_V> __device__ complex<kiln_V> asinh(const complex<kiln_V>& kiln_z) {
  const complex<kiln_V> kiln_w = asin(complex<kiln_V>(-kiln_z.imag(), kiln_z.real()));
  return complex<kiln_V>(kiln_w.imag(), -kiln_w.real());
}
// atanh z = (log1p(4x / ((1-x)^2 + y^2)) / 4, atan2(2y, (1-x)(1+x) - y^2) / 2): log1p keeps
// the digits of small results.
template <class kiln_V> __device__ complex<kiln_V> atanh(const complex<kiln_V>& kiln_z) {
  typedef complex<kiln_V> kiln_C;
  const kiln_V kiln_x = kiln_z.real(), kiln_y = kiln_z.imag();
  const kiln_V kiln_ax = fabs(kiln_x), kiln_ay = fabs(kiln_y);
  const kiln_V kiln_half_pi = kiln_V(1.57079632679489661923132169163975144);
  if (kiln_ax > kiln_cconst<kiln_V>::big() || kiln_ay > kiln_cconst<kiln_V>::big()) {
    // atanh z = 1/z + i pi/2 sign(y) + O(1/z^3).
    const kiln_V kiln_h = hypot(kiln_ax, kiln_ay);
    const kiln_V kiln_re = isinf(kiln_h) ? kiln_V(0) : (kiln_ax / kiln_h) / kiln_h;
    const kiln_V kiln_im = isinf(kiln_h) ? kiln_V(0) : (kiln_ay / kiln_h) / kiln_h;
    return kiln_C(copysign(kiln_re, kiln_x), copysign(kiln_half_pi - kiln_im, kiln_y));
  }
  const kiln_V kiln_d = (kiln_V(1) - kiln_ax) * (kiln_V(1) - kiln_ax) + kiln_ay * kiln_ay;
  const kiln_V kiln_re = kiln_V(0.25) * log1p(kiln_V(4) * kiln_ax / kiln_d);
  const kiln_V kiln_im = kiln_V(0.5) * atan2(kiln_V(2) * kiln_ay, fma(-kiln_ay, kiln_ay, (kiln_V(1) - kiln_ax) * (kiln_V(1) + kiln_ax)));
  return kiln_C(copysign(kiln_re, kiln_x), copysign(kiln_im, kiln_y));
}
// atan z = -i atanh(iz).
template <class kiln_V> __device__ complex<kiln_V> atan(const complex<kiln_V>& kiln_z) {
  const complex<kiln_V> kiln_w = atanh(complex<kiln_V>(-kiln_z.imag(), kiln_z.real()));
  return complex<kiln_V>(kiln_w.imag(), -kiln_w.real());
}
