// complex<float> and complex<double> for generated kernels; follows kiln_core.cuh.
// complex<float> / complex<double>: kiln's own type, layout-compatible with std::complex
// (two values, aligned to their sum). libcu++'s complex header cost NVRTC ~1 s per kernel.
//
// The results are NumPy's (checked against NumPy's own answers in
// tests/ops/golden/complex_functions.txt, on the host by tests/codegen and on a GPU by
// tests/ops):
// - `*` and `/` round exactly as NumPy's multiply (its SIMD loop: one fused multiply-add per
//   part) and divide (Smith's scaled division) do, so their results are NumPy's bit for bit;
//   every rounding step is an explicit intrinsic, so NVRTC's FMA contraction cannot change it.
// - The functions follow C99 Annex G, which NumPy inherits from the C library: branch cuts
//   take their side from the sign of zero, infinities and NaNs give the table's values, and
//   where the table leaves a sign open the choice is glibc's (what NumPy gives on Linux).
// - Inverse functions use Kahan's formulas ("Branch cuts for complex elementary functions",
//   1987) away from the infinities; exp-like functions scale so that e^x alone may overflow
//   where the result does not.

// kiln-section kiln_complex
// Single roundings the compiler may not fuse into an FMA (NumPy's results depend on them).
__device__ __forceinline__ float kiln_mul_rn(float kiln_a, float kiln_b) {
  return __fmul_rn(kiln_a, kiln_b);
}
__device__ __forceinline__ double kiln_mul_rn(double kiln_a, double kiln_b) {
  return __dmul_rn(kiln_a, kiln_b);
}
__device__ __forceinline__ float kiln_add_rn(float kiln_a, float kiln_b) {
  return __fadd_rn(kiln_a, kiln_b);
}
__device__ __forceinline__ double kiln_add_rn(double kiln_a, double kiln_b) {
  return __dadd_rn(kiln_a, kiln_b);
}
__device__ __forceinline__ float kiln_sub_rn(float kiln_a, float kiln_b) {
  return __fsub_rn(kiln_a, kiln_b);
}
__device__ __forceinline__ double kiln_sub_rn(double kiln_a, double kiln_b) {
  return __dsub_rn(kiln_a, kiln_b);
}

template <class kiln_V>
struct alignas(2 * sizeof(kiln_V)) complex {
  typedef kiln_V value_type;
  kiln_V kiln_re, kiln_im;
  __host__ __device__ constexpr complex(kiln_V kiln_r = kiln_V(), kiln_V kiln_i = kiln_V())
      : kiln_re(kiln_r), kiln_im(kiln_i) {}
  template <class kiln_U>
  __host__ __device__ explicit constexpr complex(const complex<kiln_U>& kiln_z)
      : kiln_re(kiln_V(kiln_z.real())), kiln_im(kiln_V(kiln_z.imag())) {}
  __host__ __device__ constexpr kiln_V real() const { return kiln_re; }
  __host__ __device__ constexpr kiln_V imag() const { return kiln_im; }
  __host__ __device__ void real(kiln_V kiln_v) { kiln_re = kiln_v; }
  __host__ __device__ void imag(kiln_V kiln_v) { kiln_im = kiln_v; }

  __device__ complex& operator=(kiln_V kiln_v) {
    kiln_re = kiln_v;
    kiln_im = kiln_V(0);
    return *this;
  }
  __device__ complex& operator+=(const complex& kiln_z) {
    kiln_re += kiln_z.kiln_re;
    kiln_im += kiln_z.kiln_im;
    return *this;
  }
  __device__ complex& operator-=(const complex& kiln_z) {
    kiln_re -= kiln_z.kiln_re;
    kiln_im -= kiln_z.kiln_im;
    return *this;
  }
  __device__ complex& operator*=(const complex& kiln_z) { return *this = *this * kiln_z; }
  __device__ complex& operator/=(const complex& kiln_z) { return *this = *this / kiln_z; }
  __device__ complex& operator+=(kiln_V kiln_v) {
    kiln_re += kiln_v;
    return *this;
  }
  __device__ complex& operator-=(kiln_V kiln_v) {
    kiln_re -= kiln_v;
    return *this;
  }
  __device__ complex& operator*=(kiln_V kiln_v) {
    kiln_re *= kiln_v;
    kiln_im *= kiln_v;
    return *this;
  }
  __device__ complex& operator/=(kiln_V kiln_v) {
    kiln_re /= kiln_v;
    kiln_im /= kiln_v;
    return *this;
  }

  // Hidden friends: a real operand of another arithmetic type (2, 0.5) converts to kiln_V.
  __device__ friend complex operator+(const complex& kiln_z) { return kiln_z; }
  __device__ friend complex operator-(const complex& kiln_z) {
    return complex(-kiln_z.kiln_re, -kiln_z.kiln_im);
  }
  __device__ friend complex operator+(const complex& kiln_a, const complex& kiln_b) {
    return complex(kiln_a.kiln_re + kiln_b.kiln_re, kiln_a.kiln_im + kiln_b.kiln_im);
  }
  __device__ friend complex operator+(const complex& kiln_a, kiln_V kiln_b) {
    return complex(kiln_a.kiln_re + kiln_b, kiln_a.kiln_im);
  }
  __device__ friend complex operator+(kiln_V kiln_a, const complex& kiln_b) {
    return complex(kiln_a + kiln_b.kiln_re, kiln_b.kiln_im);
  }
  __device__ friend complex operator-(const complex& kiln_a, const complex& kiln_b) {
    return complex(kiln_a.kiln_re - kiln_b.kiln_re, kiln_a.kiln_im - kiln_b.kiln_im);
  }
  __device__ friend complex operator-(const complex& kiln_a, kiln_V kiln_b) {
    return complex(kiln_a.kiln_re - kiln_b, kiln_a.kiln_im);
  }
  __device__ friend complex operator-(kiln_V kiln_a, const complex& kiln_b) {
    return complex(kiln_a - kiln_b.kiln_re, -kiln_b.kiln_im);
  }
  // NumPy's multiply: (ar br - ai bi, ar bi + ai br), each part one fused multiply-add over
  // the other product (as its SIMD loop on x86-64 with FMA, and on every GPU).
  __device__ friend complex operator*(const complex& kiln_a, const complex& kiln_b) {
    return complex(
        fma(kiln_a.kiln_re, kiln_b.kiln_re, -kiln_mul_rn(kiln_a.kiln_im, kiln_b.kiln_im)),
        fma(kiln_a.kiln_re, kiln_b.kiln_im, kiln_mul_rn(kiln_a.kiln_im, kiln_b.kiln_re)));
  }
  __device__ friend complex operator*(const complex& kiln_a, kiln_V kiln_b) {
    return complex(kiln_a.kiln_re * kiln_b, kiln_a.kiln_im * kiln_b);
  }
  __device__ friend complex operator*(kiln_V kiln_a, const complex& kiln_b) {
    return complex(kiln_a * kiln_b.kiln_re, kiln_a * kiln_b.kiln_im);
  }
  // NumPy's divide: Smith's algorithm (divide by the larger part of the divisor first, so |b|
  // near the overflow or underflow threshold still gives a finite quotient); x / 0 divides
  // each part by |0| (inf or nan per part); a NaN in b takes the second branch (nan).
  __device__ friend complex operator/(const complex& kiln_a, const complex& kiln_b) {
    const kiln_V kiln_ar = kiln_a.kiln_re, kiln_ai = kiln_a.kiln_im, kiln_br = kiln_b.kiln_re,
                 kiln_bi = kiln_b.kiln_im;
    if (fabs(kiln_br) >= fabs(kiln_bi)) {
      if (kiln_br == kiln_V(0) && kiln_bi == kiln_V(0))
        return complex(kiln_ar / fabs(kiln_br), kiln_ai / fabs(kiln_bi));
      const kiln_V kiln_t = kiln_bi / kiln_br;
      const kiln_V kiln_s = kiln_V(1) / kiln_add_rn(kiln_br, kiln_mul_rn(kiln_bi, kiln_t));
      return complex(kiln_mul_rn(kiln_add_rn(kiln_ar, kiln_mul_rn(kiln_ai, kiln_t)), kiln_s),
                     kiln_mul_rn(kiln_sub_rn(kiln_ai, kiln_mul_rn(kiln_ar, kiln_t)), kiln_s));
    }
    const kiln_V kiln_t = kiln_br / kiln_bi;
    const kiln_V kiln_s = kiln_V(1) / kiln_add_rn(kiln_bi, kiln_mul_rn(kiln_br, kiln_t));
    return complex(kiln_mul_rn(kiln_add_rn(kiln_mul_rn(kiln_ar, kiln_t), kiln_ai), kiln_s),
                   kiln_mul_rn(kiln_sub_rn(kiln_mul_rn(kiln_ai, kiln_t), kiln_ar), kiln_s));
  }
  __device__ friend complex operator/(const complex& kiln_a, kiln_V kiln_b) {
    return complex(kiln_a.kiln_re / kiln_b, kiln_a.kiln_im / kiln_b);
  }
  __device__ friend complex operator/(kiln_V kiln_a, const complex& kiln_b) {
    return complex(kiln_a) / kiln_b;
  }
  __device__ friend bool operator==(const complex& kiln_a, const complex& kiln_b) {
    return kiln_a.kiln_re == kiln_b.kiln_re && kiln_a.kiln_im == kiln_b.kiln_im;
  }
  __device__ friend bool operator==(const complex& kiln_a, kiln_V kiln_b) {
    return kiln_a.kiln_re == kiln_b && kiln_a.kiln_im == kiln_V(0);
  }
  __device__ friend bool operator==(kiln_V kiln_a, const complex& kiln_b) {
    return kiln_b == kiln_a;
  }
  __device__ friend bool operator!=(const complex& kiln_a, const complex& kiln_b) {
    return !(kiln_a == kiln_b);
  }
  __device__ friend bool operator!=(const complex& kiln_a, kiln_V kiln_b) {
    return !(kiln_a == kiln_b);
  }
  __device__ friend bool operator!=(kiln_V kiln_a, const complex& kiln_b) {
    return !(kiln_b == kiln_a);
  }
};

template <class kiln_V>
struct kiln_traits<complex<kiln_V>> {
  static constexpr bool is_complex = true;
  static constexpr bool is_low_float = false;
};

// Per precision: inf, nan; big: above it z*z + 1 == z*z (the inverse functions switch to their
// asymptotic forms); exp_t: e^exp_t (exp_of_t) is finite, exp-like functions scale above it;
// the mantissa bits (the scale that brings a subnormal |z| into the normal range), 1/4 of the
// largest value and the smallest normal one.
//
// Each real function (sincos, exp, log, ...) is called in one place per complex function:
// every call site inlines CUDA's whole implementation, and NVRTC's time grows with them.
template <class kiln_V>
struct kiln_cconst;
template <>
struct kiln_cconst<float> {
  __device__ static float inf() { return __int_as_float(0x7f800000); }
  __device__ static float nan() { return __int_as_float(0x7fc00000); }
  __device__ static constexpr float big() { return 4096.0f; }
  __device__ static constexpr float exp_t() { return 88.0f; }
  __device__ static constexpr float exp_of_t() { return 1.65163625e38f; }  // e^88
  __device__ static constexpr int mant() { return 24; }
  __device__ static constexpr float two_mant() { return 16777216.0f; }  // 2^24
  __device__ static constexpr float quarter_max() { return 8.5070587e37f; }
  __device__ static constexpr float tiny() { return 1.17549435e-38f; }  // smallest normal
};
template <>
struct kiln_cconst<double> {
  __device__ static double inf() { return __longlong_as_double(0x7ff0000000000000ll); }
  __device__ static double nan() { return __longlong_as_double(0x7ff8000000000000ll); }
  __device__ static constexpr double big() { return 67108864.0; }
  __device__ static constexpr double exp_t() { return 709.0; }
  __device__ static constexpr double exp_of_t() { return 8.2184074615549722e307; }  // e^709
  __device__ static constexpr int mant() { return 53; }
  __device__ static constexpr double two_mant() { return 9007199254740992.0; }  // 2^53
  __device__ static constexpr double quarter_max() { return 4.4942328371557893e307; }
  __device__ static constexpr double tiny() { return 2.2250738585072014e-308; }
};
// pi / kiln_d and log(2), rounded once to the precision.
template <class kiln_V, int kiln_d = 1>
__device__ __forceinline__ constexpr kiln_V kiln_pi() {
  return kiln_V(3.14159265358979323846264338327950288 / kiln_d);  // exact scaling by 2 or 4
}
template <class kiln_V>
__device__ __forceinline__ constexpr kiln_V kiln_3pi_4() {
  return kiln_V(2.35619449019234492884698253745962716);
}
template <class kiln_V>
__device__ __forceinline__ constexpr kiln_V kiln_ln2() {
  return kiln_V(0.693147180559945309417232121458176568);
}

template <class kiln_V>
__device__ __forceinline__ kiln_V real(const complex<kiln_V>& kiln_z) {
  return kiln_z.real();
}
template <class kiln_V>
__device__ __forceinline__ kiln_V imag(const complex<kiln_V>& kiln_z) {
  return kiln_z.imag();
}
template <class kiln_V>
__device__ __forceinline__ complex<kiln_V> conj(const complex<kiln_V>& kiln_z) {
  return complex<kiln_V>(kiln_z.real(), -kiln_z.imag());
}
template <class kiln_V>
__device__ __forceinline__ kiln_V abs(const complex<kiln_V>& kiln_z) {
  return hypot(kiln_z.real(), kiln_z.imag());
}
template <class kiln_V>
__device__ __forceinline__ kiln_V norm(const complex<kiln_V>& kiln_z) {
  return kiln_z.real() * kiln_z.real() + kiln_z.imag() * kiln_z.imag();
}
template <class kiln_V>
__device__ __forceinline__ kiln_V arg(const complex<kiln_V>& kiln_z) {
  return atan2(kiln_z.imag(), kiln_z.real());
}
template <class kiln_V>
__device__ __forceinline__ complex<kiln_V> polar(kiln_V kiln_r, kiln_V kiln_t = kiln_V(0)) {
  return complex<kiln_V>(kiln_r * cos(kiln_t), kiln_r * sin(kiln_t));
}
template <class kiln_V>
__device__ __forceinline__ complex<kiln_V> proj(const complex<kiln_V>& kiln_z) {
  if (isinf(kiln_z.real()) || isinf(kiln_z.imag()))
    return complex<kiln_V>(kiln_cconst<kiln_V>::inf(), copysign(kiln_V(0), kiln_z.imag()));
  return kiln_z;
}

// e^x (c, s) for finite x: above exp_t, e^x is split as e^(x - t) e^t so that it may overflow
// alone while the products do not (glibc's and NumPy's range: x up to twice exp's).
template <class kiln_V>
__device__ complex<kiln_V> kiln_exp_scaled(kiln_V kiln_x, kiln_V kiln_c, kiln_V kiln_s) {
  const bool kiln_split = kiln_x > kiln_cconst<kiln_V>::exp_t();
  const kiln_V kiln_e =
      exp(kiln_split ? kiln_x - kiln_cconst<kiln_V>::exp_t() : kiln_x);  // x - t exact
  const kiln_V kiln_k = kiln_split ? kiln_cconst<kiln_V>::exp_of_t() : kiln_V(1);
  return complex<kiln_V>(kiln_e * kiln_c * kiln_k, kiln_e * kiln_s * kiln_k);
}

template <class kiln_V>
__device__ complex<kiln_V> exp(const complex<kiln_V>& kiln_z) {
  typedef complex<kiln_V> kiln_C;
  const kiln_V kiln_x = kiln_z.real(), kiln_y = kiln_z.imag();
  if (isnan(kiln_x)) return kiln_C(kiln_x, kiln_y == kiln_V(0) ? kiln_y : kiln_x);
  if (!isfinite(kiln_y)) {
    if (isinf(kiln_x))
      return kiln_x < 0 ? kiln_C(kiln_V(0), copysign(kiln_V(0), kiln_y))
                        : kiln_C(kiln_x, kiln_y - kiln_y);
    return kiln_C(kiln_y - kiln_y, kiln_y - kiln_y);
  }
  kiln_V kiln_s, kiln_c;
  sincos(kiln_y, &kiln_s, &kiln_c);
  if (isinf(kiln_x)) {  // +inf or +0 times cis(y); y = 0 keeps its sign
    const kiln_V kiln_m = kiln_x > 0 ? kiln_x : kiln_V(0);
    return kiln_C(kiln_m * kiln_c, kiln_y == kiln_V(0) ? kiln_y : kiln_m * kiln_s);
  }
  const kiln_C kiln_w = kiln_exp_scaled(kiln_x, kiln_c, kiln_s);
  return kiln_C(kiln_w.real(),
                kiln_y == kiln_V(0) ? kiln_y : kiln_w.imag());  // (e^x, +-0) at y = 0
}

// a^2 + b^2 - 1 for a = max(|x|, |y|) near 1, in about twice the working precision (Dekker's
// exact products, a^2 - 1 exact there): log|z| near the unit circle keeps its digits.
template <class kiln_V>
__device__ kiln_V kiln_sumsq_m1(kiln_V kiln_a, kiln_V kiln_b) {
  const kiln_V kiln_pa = kiln_mul_rn(kiln_a, kiln_a), kiln_ea = fma(kiln_a, kiln_a, -kiln_pa);
  const kiln_V kiln_pb = kiln_mul_rn(kiln_b, kiln_b), kiln_eb = fma(kiln_b, kiln_b, -kiln_pb);
  const kiln_V kiln_u = kiln_pa - kiln_V(1);
  const kiln_V kiln_s = kiln_u + kiln_pb, kiln_bp = kiln_s - kiln_u;  // two-sum of u and pb
  const kiln_V kiln_err = (kiln_u - (kiln_s - kiln_bp)) + (kiln_pb - kiln_bp);
  return kiln_s + (kiln_err + kiln_ea + kiln_eb);
}

// log|x + iy| for finite x, y, not both 0: no overflow for the largest parts, no lost digits
// for subnormal ones (both scaled by a power of two first), and accurate near |z| = 1.
template <class kiln_V>
__device__ kiln_V kiln_log_abs(kiln_V kiln_x, kiln_V kiln_y) {
  kiln_V kiln_a = fmax(fabs(kiln_x), fabs(kiln_y)), kiln_b = fmin(fabs(kiln_x), fabs(kiln_y));
  int kiln_k = 0;  // |z| = |a + ib| 2^k
  if (kiln_a > kiln_cconst<kiln_V>::quarter_max())
    kiln_k = 1;
  else if (kiln_a < kiln_cconst<kiln_V>::tiny())
    kiln_k = -kiln_cconst<kiln_V>::mant();
  const kiln_V kiln_f = kiln_k == 0  ? kiln_V(1)
                        : kiln_k > 0 ? kiln_V(0.5)
                                     : kiln_cconst<kiln_V>::two_mant();
  kiln_a *= kiln_f;  // exact: powers of two
  kiln_b *= kiln_f;
  const kiln_V kiln_h = hypot(kiln_a, kiln_b);
  if (kiln_k == 0 && kiln_h > kiln_V(0.71) && kiln_h < kiln_V(1.73))
    return kiln_V(0.5) * log1p(kiln_sumsq_m1(kiln_a, kiln_b));
  return log(kiln_h) + kiln_V(kiln_k) * kiln_ln2<kiln_V>();
}

template <class kiln_V>
__device__ complex<kiln_V> log(const complex<kiln_V>& kiln_z) {
  const kiln_V kiln_x = kiln_z.real(), kiln_y = kiln_z.imag();
  const kiln_V kiln_inf = kiln_cconst<kiln_V>::inf(), kiln_nan = kiln_cconst<kiln_V>::nan();
  if (isnan(kiln_x) || isnan(kiln_y))
    return complex<kiln_V>((isinf(kiln_x) || isinf(kiln_y)) ? kiln_inf : kiln_nan, kiln_nan);
  kiln_V kiln_re;
  if (isinf(kiln_x) || isinf(kiln_y))
    kiln_re = kiln_inf;
  else if (kiln_x == kiln_V(0) && kiln_y == kiln_V(0))
    kiln_re = -kiln_inf;
  else
    kiln_re = kiln_log_abs(kiln_x, kiln_y);
  return complex<kiln_V>(kiln_re, atan2(kiln_y, kiln_x));
}

template <class kiln_V>
__device__ complex<kiln_V> log10(const complex<kiln_V>& kiln_z) {
  return log(kiln_z) * kiln_V(0.434294481903251827651128918916605082);  // log10(e), as NumPy
}

// The principal root of finite x + iy: re >= 0 and the sign of y; scaled by 2^-64 or 2^64
// (exact) so neither |z| near the largest value overflows nor subnormal parts lose digits.
template <class kiln_V>
__device__ complex<kiln_V> kiln_sqrt_finite(kiln_V kiln_x, kiln_V kiln_y) {
  if (kiln_x == kiln_V(0) && kiln_y == kiln_V(0)) return complex<kiln_V>(kiln_V(0), kiln_y);
  const kiln_V kiln_m = fmax(fabs(kiln_x), fabs(kiln_y));
  const kiln_V kiln_up = kiln_V(18446744073709551616.0),
               kiln_down = kiln_V(5.42101086242752217e-20);
  const kiln_V kiln_f = kiln_m > kiln_V(1e30)    ? kiln_down
                        : kiln_m < kiln_V(1e-30) ? kiln_up
                                                 : kiln_V(1);
  const kiln_V kiln_g = kiln_m > kiln_V(1e30)    ? kiln_V(4294967296.0)
                        : kiln_m < kiln_V(1e-30) ? kiln_V(2.3283064365386963e-10)
                                                 : kiln_V(1);
  kiln_x *= kiln_f;
  kiln_y *= kiln_f;
  const kiln_V kiln_t = sqrt(kiln_V(0.5) * (fabs(kiln_x) + hypot(kiln_x, kiln_y)));
  const kiln_V kiln_q = fabs(kiln_y) / (kiln_V(2) * kiln_t);
  const kiln_V kiln_u = kiln_x >= kiln_V(0) ? kiln_t : kiln_q,
               kiln_v = kiln_x >= kiln_V(0) ? kiln_q : kiln_t;
  return complex<kiln_V>(kiln_u * kiln_g, copysign(kiln_v * kiln_g, kiln_y));  // sqrt of the scale
}

template <class kiln_V>
__device__ complex<kiln_V> sqrt(const complex<kiln_V>& kiln_z) {
  typedef complex<kiln_V> kiln_C;
  const kiln_V kiln_x = kiln_z.real(), kiln_y = kiln_z.imag();
  const kiln_V kiln_inf = kiln_cconst<kiln_V>::inf();
  if (isinf(kiln_y)) return kiln_C(kiln_inf, kiln_y);
  if (isnan(kiln_x)) return kiln_C(kiln_x, kiln_x);
  if (isinf(kiln_x)) {
    if (isnan(kiln_y)) return kiln_x > 0 ? kiln_C(kiln_x, kiln_y) : kiln_C(kiln_y, kiln_inf);
    return kiln_x > 0 ? kiln_C(kiln_x, copysign(kiln_V(0), kiln_y))
                      : kiln_C(kiln_V(0), copysign(kiln_inf, kiln_y));
  }
  if (isnan(kiln_y)) return kiln_C(kiln_y, kiln_y);
  return kiln_sqrt_finite(kiln_x, kiln_y);
}

// Textbook product, each operation rounded once: NumPy's power multiplies this way.
template <class kiln_V>
__device__ __forceinline__ complex<kiln_V> kiln_cmul_plain(const complex<kiln_V>& kiln_a,
                                                           const complex<kiln_V>& kiln_b) {
  return complex<kiln_V>(kiln_sub_rn(kiln_mul_rn(kiln_a.real(), kiln_b.real()),
                                     kiln_mul_rn(kiln_a.imag(), kiln_b.imag())),
                         kiln_add_rn(kiln_mul_rn(kiln_a.real(), kiln_b.imag()),
                                     kiln_mul_rn(kiln_a.imag(), kiln_b.real())));
}

// C99's product (Annex G.5.1): when the textbook product is nan + i nan but a factor is
// infinite, or a partial product overflowed, the infinity is recovered.
template <class kiln_V>
__device__ complex<kiln_V> kiln_cmul_annex_g(const complex<kiln_V>& kiln_z,
                                             const complex<kiln_V>& kiln_w) {
  kiln_V kiln_a = kiln_z.real(), kiln_b = kiln_z.imag(), kiln_c = kiln_w.real(),
         kiln_d = kiln_w.imag();
  const kiln_V kiln_ac = kiln_mul_rn(kiln_a, kiln_c), kiln_bd = kiln_mul_rn(kiln_b, kiln_d);
  const kiln_V kiln_ad = kiln_mul_rn(kiln_a, kiln_d), kiln_bc = kiln_mul_rn(kiln_b, kiln_c);
  const kiln_V kiln_x = kiln_sub_rn(kiln_ac, kiln_bd), kiln_y = kiln_add_rn(kiln_ad, kiln_bc);
  if (!(isnan(kiln_x) && isnan(kiln_y))) return complex<kiln_V>(kiln_x, kiln_y);
  // A part of an infinite factor becomes +-1 or +-0, a NaN part of the other factor +-0.
  bool kiln_again = false;
  if (isinf(kiln_a) || isinf(kiln_b)) {
    kiln_a = copysign(isinf(kiln_a) ? kiln_V(1) : kiln_V(0), kiln_a);
    kiln_b = copysign(isinf(kiln_b) ? kiln_V(1) : kiln_V(0), kiln_b);
    if (isnan(kiln_c)) kiln_c = copysign(kiln_V(0), kiln_c);
    if (isnan(kiln_d)) kiln_d = copysign(kiln_V(0), kiln_d);
    kiln_again = true;
  }
  if (isinf(kiln_c) || isinf(kiln_d)) {
    kiln_c = copysign(isinf(kiln_c) ? kiln_V(1) : kiln_V(0), kiln_c);
    kiln_d = copysign(isinf(kiln_d) ? kiln_V(1) : kiln_V(0), kiln_d);
    if (isnan(kiln_a)) kiln_a = copysign(kiln_V(0), kiln_a);
    if (isnan(kiln_b)) kiln_b = copysign(kiln_V(0), kiln_b);
    kiln_again = true;
  }
  if (!kiln_again && (isinf(kiln_ac) || isinf(kiln_bd) || isinf(kiln_ad) || isinf(kiln_bc))) {
    if (isnan(kiln_a)) kiln_a = copysign(kiln_V(0), kiln_a);
    if (isnan(kiln_b)) kiln_b = copysign(kiln_V(0), kiln_b);
    if (isnan(kiln_c)) kiln_c = copysign(kiln_V(0), kiln_c);
    if (isnan(kiln_d)) kiln_d = copysign(kiln_V(0), kiln_d);
    kiln_again = true;
  }
  if (!kiln_again) return complex<kiln_V>(kiln_x, kiln_y);
  const kiln_V kiln_inf = kiln_cconst<kiln_V>::inf();
  return complex<kiln_V>(
      kiln_inf * kiln_sub_rn(kiln_mul_rn(kiln_a, kiln_c), kiln_mul_rn(kiln_b, kiln_d)),
      kiln_inf * kiln_add_rn(kiln_mul_rn(kiln_a, kiln_d), kiln_mul_rn(kiln_b, kiln_c)));
}

// NumPy's power: a^0 = 1; 0^b = 0 for re(b) > 0, else nan; integer exponents below 100 in
// magnitude by repeated (textbook) multiplication, so z**2 is z*z rounded that way; others
// exp(b log a) with C99's product.
template <class kiln_V>
__device__ complex<kiln_V> pow(const complex<kiln_V>& kiln_a, const complex<kiln_V>& kiln_b) {
  typedef complex<kiln_V> kiln_C;
  const kiln_V kiln_br = kiln_b.real(), kiln_bi = kiln_b.imag();
  if (kiln_br == kiln_V(0) && kiln_bi == kiln_V(0)) return kiln_C(kiln_V(1), kiln_V(0));
  if (kiln_a.real() == kiln_V(0) && kiln_a.imag() == kiln_V(0)) {
    if (kiln_br > kiln_V(0)) return kiln_C(kiln_V(0), kiln_V(0));
    return kiln_C(kiln_cconst<kiln_V>::nan(), kiln_cconst<kiln_V>::nan());
  }
  if (kiln_bi == kiln_V(0) && kiln_br > kiln_V(-100) && kiln_br < kiln_V(100) &&
      kiln_br == trunc(kiln_br)) {
    const int kiln_n = int(kiln_br);
    if (kiln_n == 1) return kiln_a;
    if (kiln_n == 2) return kiln_cmul_plain(kiln_a, kiln_a);
    if (kiln_n == 3) return kiln_cmul_plain(kiln_a, kiln_cmul_plain(kiln_a, kiln_a));
    const unsigned kiln_m = unsigned(kiln_n < 0 ? -kiln_n : kiln_n);
    kiln_C kiln_r(kiln_V(1), kiln_V(0)), kiln_p = kiln_a;
    for (unsigned kiln_bit = 1;; kiln_bit <<= 1) {
      if (kiln_m & kiln_bit) kiln_r = kiln_cmul_plain(kiln_r, kiln_p);
      if (kiln_m < (kiln_bit << 1)) break;
      kiln_p = kiln_cmul_plain(kiln_p, kiln_p);
    }
    return kiln_n < 0 ? kiln_C(kiln_V(1), kiln_V(0)) / kiln_r : kiln_r;
  }
  return exp(kiln_cmul_annex_g(kiln_b, log(kiln_a)));
}
template <class kiln_V>
__device__ __forceinline__ complex<kiln_V> pow(const complex<kiln_V>& kiln_a,
                                               typename complex<kiln_V>::value_type kiln_b) {
  return pow(kiln_a, complex<kiln_V>(kiln_b));
}
template <class kiln_V>
__device__ __forceinline__ complex<kiln_V> pow(typename complex<kiln_V>::value_type kiln_a,
                                               const complex<kiln_V>& kiln_b) {
  return pow(complex<kiln_V>(kiln_a), kiln_b);
}

// For finite x and finite y (s, c: sin y and cos y): sinh x cos y + i cosh x sin y when
// `odd` (sinh), cosh x cos y + i sinh x sin y otherwise (cosh). sinh|x| and cosh|x| come from
// one expm1 (no cancellation near 0); above exp_t both are e^|x| / 2, split as in exp.
template <class kiln_V>
__device__ complex<kiln_V> kiln_sinh_cosh(kiln_V kiln_x, kiln_V kiln_s, kiln_V kiln_c,
                                          bool kiln_odd) {
  const kiln_V kiln_ax = fabs(kiln_x), kiln_t = kiln_cconst<kiln_V>::exp_t();
  const bool kiln_split = kiln_ax > kiln_t;
  const kiln_V kiln_m = expm1(kiln_split ? kiln_ax - kiln_t : kiln_ax), kiln_e = kiln_m + kiln_V(1);
  kiln_V kiln_sh, kiln_ch;
  if (kiln_split) {
    kiln_sh = kiln_ch = kiln_e * kiln_V(0.5);
  } else {
    kiln_sh = kiln_V(0.5) * (kiln_m + kiln_m / kiln_e);
    kiln_ch = kiln_V(0.5) * kiln_e + kiln_V(0.5) / kiln_e;
  }
  const kiln_V kiln_k = kiln_split ? kiln_cconst<kiln_V>::exp_of_t() : kiln_V(1);
  kiln_sh = copysign(kiln_sh, kiln_x);
  const kiln_V kiln_p = kiln_odd ? kiln_sh : kiln_ch, kiln_q = kiln_odd ? kiln_ch : kiln_sh;
  // y = 0: an exact zero with the product's sign, also where the real part overflowed.
  const kiln_V kiln_i =
      kiln_s == kiln_V(0) ? kiln_s * copysign(kiln_V(1), kiln_q) : kiln_q * kiln_s * kiln_k;
  return complex<kiln_V>(kiln_p * kiln_c * kiln_k, kiln_i);
}

// sinh and cosh where a part is inf or nan (Annex G; glibc's choice where it leaves a sign
// open), with s, c = sin y, cos y.
template <class kiln_V>
__device__ complex<kiln_V> kiln_sinh_cosh_special(kiln_V kiln_x, kiln_V kiln_y, kiln_V kiln_s,
                                                  kiln_V kiln_c, bool kiln_odd) {
  typedef complex<kiln_V> kiln_C;
  if (isnan(kiln_x)) return kiln_C(kiln_x, kiln_y == kiln_V(0) ? kiln_y : kiln_x);
  if (isinf(kiln_x)) {
    const kiln_V kiln_ax = fabs(kiln_x);
    if (!isfinite(kiln_y)) return kiln_C(kiln_ax, kiln_y - kiln_y);
    if (kiln_y == kiln_V(0))
      return kiln_C(kiln_odd ? kiln_x : kiln_ax,
                    kiln_odd ? kiln_y : kiln_y * copysign(kiln_V(1), kiln_x));
    return kiln_odd ? kiln_C(kiln_x * kiln_c, kiln_ax * kiln_s)
                    : kiln_C(kiln_ax * kiln_c, kiln_x * kiln_s);
  }
  // x finite, y inf or nan: nan; sinh keeps x's zero, cosh has +0 there.
  if (kiln_x == kiln_V(0))
    return kiln_odd ? kiln_C(kiln_x, kiln_y - kiln_y) : kiln_C(kiln_y - kiln_y, kiln_V(0));
  return kiln_C(kiln_y - kiln_y, kiln_y - kiln_y);
}

template <class kiln_V>
__device__ complex<kiln_V> sinh(const complex<kiln_V>& kiln_z) {
  const kiln_V kiln_x = kiln_z.real(), kiln_y = kiln_z.imag();
  kiln_V kiln_s, kiln_c;
  sincos(kiln_y, &kiln_s, &kiln_c);
  if (isfinite(kiln_x) && isfinite(kiln_y)) return kiln_sinh_cosh(kiln_x, kiln_s, kiln_c, true);
  return kiln_sinh_cosh_special(kiln_x, kiln_y, kiln_s, kiln_c, true);
}
template <class kiln_V>
__device__ complex<kiln_V> cosh(const complex<kiln_V>& kiln_z) {
  const kiln_V kiln_x = kiln_z.real(), kiln_y = kiln_z.imag();
  kiln_V kiln_s, kiln_c;
  sincos(kiln_y, &kiln_s, &kiln_c);
  if (isfinite(kiln_x) && isfinite(kiln_y)) return kiln_sinh_cosh(kiln_x, kiln_s, kiln_c, false);
  return kiln_sinh_cosh_special(kiln_x, kiln_y, kiln_s, kiln_c, false);
}

// tanh(x + iy) = (sinh x cosh x + i sin y cos y) / (sinh^2 x + cos^2 y) (Kahan's form with
// tan y = sin y / cos y: no cancellation near the poles); past where tanh x rounds to +-1, the
// imaginary part is 4 sin y cos y e^(-2|x|), which keeps its sign when it underflows.
template <class kiln_V>
__device__ complex<kiln_V> tanh(const complex<kiln_V>& kiln_z) {
  typedef complex<kiln_V> kiln_C;
  const kiln_V kiln_x = kiln_z.real(), kiln_y = kiln_z.imag();
  if (isnan(kiln_x)) return kiln_C(kiln_x, kiln_y == kiln_V(0) ? kiln_y : kiln_x);
  kiln_V kiln_s, kiln_c;
  sincos(kiln_y, &kiln_s, &kiln_c);
  if (isinf(kiln_x))
    return kiln_C(copysign(kiln_V(1), kiln_x),
                  copysign(kiln_V(0), isfinite(kiln_y) ? kiln_s * kiln_c : kiln_y));
  if (!isfinite(kiln_y))
    return kiln_C(kiln_x == kiln_V(0) ? kiln_x : kiln_y - kiln_y, kiln_y - kiln_y);
  const kiln_V kiln_ax = fabs(kiln_x);
  // sinh|x| and cosh|x| (|x| <= 24 here, or e^|x| for the far branch) from one expm1.
  const kiln_V kiln_m = expm1(fmin(kiln_ax, kiln_cconst<kiln_V>::exp_t())),
               kiln_e = kiln_m + kiln_V(1);
  if (kiln_ax > kiln_V(sizeof(kiln_V) == 4 ? 12 : 24))
    return kiln_C(copysign(kiln_V(1), kiln_x), kiln_V(4) * kiln_s * kiln_c / kiln_e / kiln_e);
  const kiln_V kiln_sh = copysign(kiln_V(0.5) * (kiln_m + kiln_m / kiln_e), kiln_x);
  const kiln_V kiln_ch = kiln_V(0.5) * kiln_e + kiln_V(0.5) / kiln_e;
  const kiln_V kiln_d = kiln_sh * kiln_sh + kiln_c * kiln_c;
  return kiln_C(kiln_sh * kiln_ch / kiln_d, kiln_s * kiln_c / kiln_d);
}
// sin(z) = -i sinh(iz), cos(z) = cosh(iz), tan(z) = -i tanh(iz): Annex G defines them so.
// Where sinh leaves the sign of an infinite part open (inf + i nan), sin's is +inf (glibc's).
template <class kiln_V>
__device__ complex<kiln_V> sin(const complex<kiln_V>& kiln_z) {
  const complex<kiln_V> kiln_w = sinh(complex<kiln_V>(-kiln_z.imag(), kiln_z.real()));
  const bool kiln_open = isinf(kiln_w.real()) && isnan(kiln_w.imag());
  return complex<kiln_V>(kiln_w.imag(), kiln_open ? fabs(kiln_w.real()) : -kiln_w.real());
}
template <class kiln_V>
__device__ complex<kiln_V> cos(const complex<kiln_V>& kiln_z) {
  return cosh(complex<kiln_V>(-kiln_z.imag(), kiln_z.real()));
}
template <class kiln_V>
__device__ complex<kiln_V> tan(const complex<kiln_V>& kiln_z) {
  const complex<kiln_V> kiln_w = tanh(complex<kiln_V>(-kiln_z.imag(), kiln_z.real()));
  return complex<kiln_V>(kiln_w.imag(), -kiln_w.real());
}

// asin for finite x, y. Kahan: asin z = (atan(x / Re(sqrt(1-z) sqrt(1+z))),
// asinh(Im(conj(sqrt(1-z)) sqrt(1+z)))); past `big`, asin z = -i log(2iz) + O(1/z^2).
template <class kiln_V>
__device__ complex<kiln_V> kiln_asin_finite(kiln_V kiln_x, kiln_V kiln_y) {
  typedef complex<kiln_V> kiln_C;
  if (fabs(kiln_x) > kiln_cconst<kiln_V>::big() || fabs(kiln_y) > kiln_cconst<kiln_V>::big()) {
    const kiln_V kiln_lr = kiln_log_abs(kiln_x, kiln_y),
                 kiln_li = atan2(fabs(kiln_x), fabs(kiln_y));
    return kiln_C(copysign(kiln_li, kiln_x), copysign(kiln_lr + kiln_ln2<kiln_V>(), kiln_y));
  }
  const kiln_C kiln_a = kiln_sqrt_finite(kiln_V(1) - kiln_x, -kiln_y),
               kiln_b = kiln_sqrt_finite(kiln_V(1) + kiln_x, kiln_y);
  return kiln_C(atan2(kiln_x, kiln_a.real() * kiln_b.real() - kiln_a.imag() * kiln_b.imag()),
                asinh(kiln_a.real() * kiln_b.imag() - kiln_a.imag() * kiln_b.real()));
}
// asinh where a part is inf or nan (Annex G).
template <class kiln_V>
__device__ complex<kiln_V> kiln_asinh_special(kiln_V kiln_x, kiln_V kiln_y) {
  typedef complex<kiln_V> kiln_C;
  const kiln_V kiln_inf = kiln_cconst<kiln_V>::inf(), kiln_nan = kiln_cconst<kiln_V>::nan();
  if (isnan(kiln_x) || isnan(kiln_y)) {
    if (isinf(kiln_x)) return kiln_C(kiln_x, kiln_nan);
    if (isinf(kiln_y)) return kiln_C(kiln_inf, kiln_nan);  // sign open: glibc's +
    if (kiln_y == kiln_V(0)) return kiln_C(kiln_nan, kiln_y);
    return kiln_C(kiln_nan, kiln_nan);
  }
  const kiln_V kiln_im =
      isinf(kiln_x) ? (isinf(kiln_y) ? kiln_pi<kiln_V, 4>() : kiln_V(0)) : kiln_pi<kiln_V, 2>();
  return kiln_C(copysign(kiln_inf, kiln_x), copysign(kiln_im, kiln_y));
}
// asin z = -i asinh(iz), asinh z = -i asin(iz). The sign of a NaN is no input here: a GPU's
// negation need not flip it, so where Annex G leaves a sign open the choice is made outright.
template <class kiln_V>
__device__ complex<kiln_V> asin(const complex<kiln_V>& kiln_z) {
  const kiln_V kiln_x = kiln_z.real(), kiln_y = kiln_z.imag();
  if (isfinite(kiln_x) && isfinite(kiln_y)) return kiln_asin_finite(kiln_x, kiln_y);
  if (isinf(kiln_x) && isnan(kiln_y))
    return complex<kiln_V>(kiln_y, kiln_cconst<kiln_V>::inf());  // glibc's +inf
  const complex<kiln_V> kiln_w = kiln_asinh_special(-kiln_y, kiln_x);
  return complex<kiln_V>(kiln_w.imag(), -kiln_w.real());
}
template <class kiln_V>
__device__ complex<kiln_V> asinh(const complex<kiln_V>& kiln_z) {
  const kiln_V kiln_x = kiln_z.real(), kiln_y = kiln_z.imag();
  if (!isfinite(kiln_x) || !isfinite(kiln_y)) return kiln_asinh_special(kiln_x, kiln_y);
  const complex<kiln_V> kiln_w = kiln_asin_finite(-kiln_y, kiln_x);
  return complex<kiln_V>(kiln_w.imag(), -kiln_w.real());
}

// Kahan: acos z = (2 atan(Re sqrt(1-z) / Re sqrt(1+z)), asinh(Im(conj(sqrt(1+z)) sqrt(1-z)))).
template <class kiln_V>
__device__ complex<kiln_V> acos(const complex<kiln_V>& kiln_z) {
  typedef complex<kiln_V> kiln_C;
  const kiln_V kiln_x = kiln_z.real(), kiln_y = kiln_z.imag();
  const kiln_V kiln_inf = kiln_cconst<kiln_V>::inf(), kiln_nan = kiln_cconst<kiln_V>::nan();
  const kiln_V kiln_p = kiln_pi<kiln_V>(), kiln_half_pi = kiln_pi<kiln_V, 2>();
  if (isnan(kiln_x) || isnan(kiln_y)) {
    if (isinf(kiln_x)) return kiln_C(kiln_nan, -kiln_inf);
    if (isinf(kiln_y)) return kiln_C(kiln_nan, -kiln_y);
    if (kiln_x == kiln_V(0)) return kiln_C(kiln_half_pi, kiln_nan);
    return kiln_C(kiln_nan, kiln_nan);
  }
  if (isinf(kiln_x) || isinf(kiln_y)) {
    kiln_V kiln_re = kiln_half_pi;
    if (isinf(kiln_x)) {
      if (isinf(kiln_y))
        kiln_re = kiln_x < 0 ? kiln_3pi_4<kiln_V>() : kiln_pi<kiln_V, 4>();
      else
        kiln_re = kiln_x < 0 ? kiln_p : kiln_V(0);
    }
    return kiln_C(kiln_re, -copysign(kiln_inf, kiln_y));
  }
  if (fabs(kiln_x) > kiln_cconst<kiln_V>::big() || fabs(kiln_y) > kiln_cconst<kiln_V>::big()) {
    const kiln_V kiln_lr = kiln_log_abs(kiln_x, kiln_y),
                 kiln_li = atan2(fabs(kiln_y), fabs(kiln_x));
    const kiln_V kiln_re = kiln_x < 0 ? kiln_p - kiln_li : kiln_li;
    return kiln_C(kiln_re, copysign(kiln_lr + kiln_ln2<kiln_V>(), -kiln_y));
  }
  const kiln_C kiln_a = kiln_sqrt_finite(kiln_V(1) - kiln_x, -kiln_y),
               kiln_b = kiln_sqrt_finite(kiln_V(1) + kiln_x, kiln_y);
  return kiln_C(kiln_V(2) * atan2(kiln_a.real(), kiln_b.real()),
                asinh(kiln_b.real() * kiln_a.imag() - kiln_b.imag() * kiln_a.real()));
}
// Kahan: acosh z = (asinh(Re(conj(sqrt(z-1)) sqrt(z+1))), 2 atan(Im sqrt(z-1) / Re sqrt(z+1))).
template <class kiln_V>
__device__ complex<kiln_V> acosh(const complex<kiln_V>& kiln_z) {
  typedef complex<kiln_V> kiln_C;
  const kiln_V kiln_x = kiln_z.real(), kiln_y = kiln_z.imag();
  const kiln_V kiln_inf = kiln_cconst<kiln_V>::inf(), kiln_nan = kiln_cconst<kiln_V>::nan();
  const kiln_V kiln_p = kiln_pi<kiln_V>();
  if (isnan(kiln_x) || isnan(kiln_y)) {
    if (isinf(kiln_x) || isinf(kiln_y)) return kiln_C(kiln_inf, kiln_nan);
    if (kiln_x == kiln_V(0)) return kiln_C(kiln_nan, kiln_pi<kiln_V, 2>());
    return kiln_C(kiln_nan, kiln_nan);
  }
  if (isinf(kiln_x) || isinf(kiln_y)) {
    kiln_V kiln_im = kiln_pi<kiln_V, 2>();
    if (isinf(kiln_x)) {
      if (isinf(kiln_y))
        kiln_im = kiln_x < 0 ? kiln_3pi_4<kiln_V>() : kiln_pi<kiln_V, 4>();
      else
        kiln_im = kiln_x < 0 ? kiln_p : kiln_V(0);
    }
    return kiln_C(kiln_inf, copysign(kiln_im, kiln_y));
  }
  if (fabs(kiln_x) > kiln_cconst<kiln_V>::big() || fabs(kiln_y) > kiln_cconst<kiln_V>::big()) {
    // acosh z = log(2z) + O(1/z^2), on the branch with re >= 0.
    const kiln_V kiln_lr = kiln_log_abs(kiln_x, kiln_y),
                 kiln_li = atan2(fabs(kiln_y), fabs(kiln_x));
    const kiln_V kiln_im = kiln_x < 0 ? kiln_p - kiln_li : kiln_li;
    return kiln_C(kiln_lr + kiln_ln2<kiln_V>(), copysign(kiln_im, kiln_y));
  }
  const kiln_C kiln_a = kiln_sqrt_finite(kiln_x - kiln_V(1), kiln_y),
               kiln_b = kiln_sqrt_finite(kiln_x + kiln_V(1), kiln_y);
  return kiln_C(asinh(kiln_a.real() * kiln_b.real() + kiln_a.imag() * kiln_b.imag()),
                kiln_V(2) * atan2(kiln_a.imag(), kiln_b.real()));
}

// atanh z = (log((1+x)^2 + y^2) - log((1-x)^2 + y^2)) / 4 + i atan2(2y, (1-x)(1+x) - y^2) / 2;
// the real part as log1p(4|x| / d) / 4 keeps the digits of small results, and as a difference
// of logs where d = (1-|x|)^2 + y^2 underflows.
template <class kiln_V>
__device__ complex<kiln_V> atanh(const complex<kiln_V>& kiln_z) {
  typedef complex<kiln_V> kiln_C;
  const kiln_V kiln_x = kiln_z.real(), kiln_y = kiln_z.imag();
  const kiln_V kiln_ax = fabs(kiln_x), kiln_ay = fabs(kiln_y);
  const kiln_V kiln_nan = kiln_cconst<kiln_V>::nan(), kiln_half_pi = kiln_pi<kiln_V, 2>();
  if (isnan(kiln_x) || isnan(kiln_y)) {
    if (isinf(kiln_x)) return kiln_C(copysign(kiln_V(0), kiln_x), kiln_nan);
    if (isinf(kiln_y))
      return kiln_C(kiln_V(0), copysign(kiln_half_pi, kiln_y));  // sign open: glibc's +0
    if (kiln_x == kiln_V(0)) return kiln_C(kiln_x, kiln_nan);
    return kiln_C(kiln_nan, kiln_nan);
  }
  if (kiln_ax > kiln_cconst<kiln_V>::big() || kiln_ay > kiln_cconst<kiln_V>::big()) {
    // atanh z = 1/z + i pi/2 sign(y) + O(1/z^3) (exactly +-0 + i pi/2 at infinity).
    const kiln_V kiln_h = hypot(kiln_ax, kiln_ay);
    const kiln_V kiln_re = isinf(kiln_h) ? kiln_V(0) : (kiln_ax / kiln_h) / kiln_h;
    const kiln_V kiln_im = isinf(kiln_h) ? kiln_V(0) : (kiln_ay / kiln_h) / kiln_h;
    return kiln_C(copysign(kiln_re, kiln_x), copysign(kiln_half_pi - kiln_im, kiln_y));
  }
  const kiln_V kiln_one_m = kiln_V(1) - kiln_ax;
  const kiln_V kiln_d = kiln_one_m * kiln_one_m + kiln_ay * kiln_ay;
  // |1 - |x| + iy| tiny (d underflows): log(|1 + z| / |1 - z|) / 2, the same value.
  const bool kiln_near = kiln_d < kiln_cconst<kiln_V>::tiny() * kiln_V(1e10);
  const kiln_V kiln_q =
      kiln_near ? hypot(kiln_V(1) + kiln_ax, kiln_ay) / hypot(kiln_one_m, kiln_ay) - kiln_V(1)
                : kiln_V(4) * kiln_ax / kiln_d;
  const kiln_V kiln_re = (kiln_near ? kiln_V(0.5) : kiln_V(0.25)) * log1p(kiln_q);
  const kiln_V kiln_im =
      kiln_V(0.5) *
      atan2(kiln_V(2) * kiln_ay, fma(-kiln_ay, kiln_ay, kiln_one_m * (kiln_V(1) + kiln_ax)));
  return kiln_C(copysign(kiln_re, kiln_x), copysign(kiln_im, kiln_y));
}
// atan z = -i atanh(iz); atan(+-inf + i nan) = +-pi/2 + i0 (sign open: glibc's +0).
template <class kiln_V>
__device__ complex<kiln_V> atan(const complex<kiln_V>& kiln_z) {
  if (isinf(kiln_z.real()) && isnan(kiln_z.imag()))
    return complex<kiln_V>(copysign(kiln_pi<kiln_V, 2>(), kiln_z.real()), kiln_V(0));
  const complex<kiln_V> kiln_w = atanh(complex<kiln_V>(-kiln_z.imag(), kiln_z.real()));
  return complex<kiln_V>(kiln_w.imag(), -kiln_w.real());
}
