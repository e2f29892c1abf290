// Device helpers of the built-in reductions (ops/library/src/reductions.cpp and linalg_norm.cpp),
// one section each, placed in the preamble of their ReductionKernels, where T is the input
// and U the output placeholder. Follows kiln_core.cuh.

// kiln-section builtin_reductions
// Device helpers every built-in shares: the accumulation type (16-bit floats accumulate in
// float), NaN tests for any type, and the reduce types of argmin/argmax, mean of non-NaN
// values, and the moments of var/std (shifted sums merged with Chan's formula).
template <class kiln_V, bool kiln_low = kiln_traits<kiln_V>::is_low_float>
struct kiln_acc_of {
  typedef kiln_V type;
};
template <class kiln_V>
struct kiln_acc_of<kiln_V, true> {
  typedef float type;
};
template <class kiln_V>
__device__ __forceinline__ bool kiln_rnan(const kiln_V& kiln_v) {
  return !(kiln_v == kiln_v);
}
// The lowest (kiln_low) or highest value of a real type: -inf or inf for floats, the
// integers' limits, false or true: the identities of max, min, argmax and argmin (NumPy
// raises for their empty reductions before any kernel runs).
template <class kiln_V, bool kiln_low>
__device__ __forceinline__ kiln_V kiln_extreme() {
  if constexpr (kiln_same<kiln_V, bool>::value) {
    return !kiln_low;
  } else if constexpr (kiln_same<kiln_V, float>::value) {
    return __int_as_float(int(kiln_low ? 0xff800000u : 0x7f800000u));
  } else if constexpr (kiln_same<kiln_V, double>::value) {
    return __longlong_as_double(
        (long long)(kiln_low ? 0xfff0000000000000ull : 0x7ff0000000000000ull));
  } else {  // integers: the lowest is 0 or the sign bit alone
    const kiln_V kiln_lo =
        kiln_V(-1) < kiln_V(0) ? kiln_V(1ull << (sizeof(kiln_V) * 8 - 1)) : kiln_V(0);
    return kiln_low ? kiln_lo : kiln_V(~kiln_lo);
  }
}
typedef typename kiln_acc_of<U>::type kiln_R;
typedef typename kiln_acc_of<T>::type kiln_RT;
// argmin/argmax: a value and its position along the reduced axes. The index is kiln_idx (32
// bits unless the kernel indexes in 64), so a pair is 8 bytes for 4-byte values.
struct kiln_arg {
  kiln_RT v;
  kiln_idx i;
};
// The identity: the worst value with the largest index, so every element beats it (ties go to
// the smaller index). Having one spares each element the "seen anything yet" select.
template <bool kiln_max>
__device__ __forceinline__ kiln_arg kiln_arg_none() {
  return kiln_arg{kiln_extreme<kiln_RT, kiln_max>(), kiln_idx(~kiln_uidx(0) >> 1)};
}
// NumPy's pick: the first NaN, else the extreme value, ties to the smaller index. Written as
// one predicate and two selects: as nested ifs it compiled to five branches per element, and
// argmax over float32 rows ran at half the copy rate, bound by issue.
template <bool kiln_max>
__device__ __forceinline__ kiln_arg kiln_arg_pick(const kiln_arg& kiln_a, const kiln_arg& kiln_b) {
  const bool kiln_an = kiln_rnan(kiln_a.v), kiln_bn = kiln_rnan(kiln_b.v);
  const bool kiln_better = kiln_max ? kiln_b.v > kiln_a.v : kiln_b.v < kiln_a.v;
  const bool kiln_tie = (kiln_b.v == kiln_a.v) | (kiln_an & kiln_bn);
  const bool kiln_take = kiln_better | (kiln_bn & !kiln_an) | (kiln_tie & (kiln_b.i < kiln_a.i));
  return kiln_arg{kiln_take ? kiln_b.v : kiln_a.v, kiln_take ? kiln_b.i : kiln_a.i};
}
struct kiln_sn {
  kiln_R s;
  kiln_idx n;  // see kiln_moments
};
// One-pass moments (var, std, var_mean, std_mean). Each thread sums its elements shifted by
// the first one it saw (k): s1 = sum(x - k), s2 = sum((x - k)^2), so an element costs a
// subtract, two adds and a multiply-add, no division and no branch. States of several
// elements merge with Chan's formula, keeping the left one's shift: the mean stays k + s1/n
// with k an element, so the difference of two means is computed from small numbers and the
// variance is as accurate as the two-pass formula however far the data sit from zero. The
// mean output is the plain sum over n (NumPy's: an inf among the data gives inf).
// Templates over the state, so a complex kernel sharing this section never instantiates them.
// The count is the kernel's index type: a row holds no more elements than the loop, which
// kiln_idx indexes (a 32-bit count costs one instruction where a 64-bit one costs two).
struct kiln_moments {
  kiln_R k, s1, s2, sum;
  kiln_idx n;
};
template <class kiln_F>
__device__ __forceinline__ kiln_F kiln_moments_div(kiln_F kiln_a, kiln_F kiln_b) {
  if constexpr (kiln_same<kiln_F, float>::value)
    return __fdividef(kiln_a, kiln_b);  // counts: 2 ulp is plenty
  else
    return kiln_a / kiln_b;
}
template <class kiln_S>
__device__ __forceinline__ kiln_S kiln_moments_merge(const kiln_S& kiln_a, const kiln_S& kiln_b) {
  typedef decltype(kiln_a.k) kiln_F;
  if (kiln_b.n == 1) {  // one element (the map's): a shifted add; the first one becomes the shift
    const kiln_F kiln_k = kiln_a.n == 0 ? kiln_b.k : kiln_a.k;
    const kiln_F kiln_d = kiln_b.k - kiln_k;
    return kiln_S{kiln_k, kiln_a.s1 + kiln_d, kiln_a.s2 + kiln_d * kiln_d, kiln_a.sum + kiln_b.sum,
                  kiln_a.n + 1};
  }
  if (kiln_a.n == 0) return kiln_b;
  if (kiln_b.n == 0) return kiln_a;
  const kiln_F kiln_na = kiln_F(kiln_a.n), kiln_nb = kiln_F(kiln_b.n), kiln_n = kiln_na + kiln_nb;
  const kiln_F kiln_da = kiln_moments_div(kiln_a.s1, kiln_na),
               kiln_db = kiln_moments_div(kiln_b.s1, kiln_nb);
  const kiln_F kiln_d = (kiln_b.k - kiln_a.k) + (kiln_db - kiln_da);  // mean(b) - mean(a)
  const kiln_F kiln_f = kiln_moments_div(kiln_nb, kiln_n);
  const kiln_F kiln_delta = kiln_da + kiln_d * kiln_f;  // new mean - a.k
  const kiln_F kiln_m2 = (kiln_a.s2 - kiln_a.s1 * kiln_da) + (kiln_b.s2 - kiln_b.s1 * kiln_db) +
                         kiln_d * kiln_d * kiln_na * kiln_f;
  return kiln_S{kiln_a.k, kiln_n * kiln_delta, kiln_m2 + kiln_n * kiln_delta * kiln_delta,
                kiln_a.sum + kiln_b.sum, kiln_a.n + kiln_b.n};
}
// Into a state that holds an element (kiln_fold): its shift stands, so a mapped element costs a
// subtract, three adds and a multiply-add with no test of the count (var_mean over (0, 2, 3) of
// NCHW compares and selects no more per element).
template <class kiln_S, class kiln_F>
__device__ __forceinline__ kiln_S kiln_moments_fold(const kiln_S& kiln_a, const kiln_S& kiln_b,
                                                    kiln_F kiln_reduce) {
  if (kiln_b.n != 1) return kiln_reduce(kiln_a, kiln_b);  // folds away: the map's n is 1
  const auto kiln_d = kiln_b.k - kiln_a.k;
  return kiln_S{kiln_a.k, kiln_a.s1 + kiln_d, kiln_a.s2 + kiln_d * kiln_d, kiln_a.sum + kiln_b.sum,
                kiln_a.n + 1};
}
template <class kiln_F>
__device__ __forceinline__ kiln_moments kiln_fold(const kiln_moments& kiln_a,
                                                  const kiln_moments& kiln_b, kiln_F kiln_reduce) {
  return kiln_moments_fold(kiln_a, kiln_b, kiln_reduce);
}
template <class kiln_S>
__device__ __forceinline__ auto kiln_moments_mean(const kiln_S& kiln_a) {
  return kiln_a.sum / decltype(kiln_a.k)(kiln_a.n);
}
// Squared deviations over n - ddof (NumPy's max(n - ddof, 0)). (k - k) is NaN when the shift
// is inf or NaN: one such element gives NaN, as NumPy's (x - mean)**2 does.
template <class kiln_S>
__device__ __forceinline__ auto kiln_moments_var(const kiln_S& kiln_a, long long kiln_ddof) {
  typedef decltype(kiln_a.k) kiln_F;
  kiln_F kiln_q = kiln_a.s2 - kiln_a.s1 * (kiln_a.s1 / kiln_F(kiln_a.n)) + (kiln_a.k - kiln_a.k);
  if (kiln_q < kiln_F(0)) kiln_q = kiln_F(0);  // rounding; keeps NaN
  const kiln_F kiln_c = kiln_F(kiln_a.n) - kiln_F(kiln_ddof);
  return kiln_q / (kiln_c > kiln_F(0) ? kiln_c : kiln_F(0));
}
// Softmax's denominator sum(exp(x - max(x))) in one pass (sum_exp_max: the library's form of
// that sum for its passes; row kernels keep the sum of the max's phase): a running max m and
// the sum s of exp(x - m) scaled to it. A merge scales the smaller side's sum by exp(its max -
// the larger): one exp, never past 1. The identity (m the lowest value, s 0) and a -inf
// element (exp(-inf - m) adds 0) leave the other side as it is. NaN sticks in s: an element's
// s is (x - x) + 1, NaN for inf and NaN (NumPy's exp(inf - inf), exp(NaN - m)); where every
// element is -inf the total is NaN too (exp(-inf - -inf)). Templates over the state, as the
// moments'; integers subtract in double.
struct kiln_se {
  kiln_R m, s;
};
template <class kiln_F>
__device__ __forceinline__ constexpr bool kiln_se_float() {
  return kiln_same<kiln_F, float>::value || kiln_same<kiln_F, double>::value;
}
template <class kiln_S, class kiln_F>
__device__ __forceinline__ kiln_S kiln_se_of(kiln_F kiln_v) {
  const bool kiln_none = kiln_se_float<kiln_F>() && kiln_v == kiln_extreme<kiln_F, true>();
  return kiln_S{kiln_v, kiln_none ? kiln_F(0) : kiln_F((kiln_v - kiln_v) + kiln_F(1))};
}
// Equal maxes scale by 1, so the identity and -inf elements (m -inf, s 0) need no test of
// their own: -inf - -inf would be NaN. float32 scales with the hardware's exp2 (__expf): every
// scale is at most 1 and a sum of them at least 1, so its few ulp on the largest terms are
// all that reach the total; expf's range reduction kept softmax's pass over (2048, 50257)
// issue-bound (82% of issue slots, ncu, H200).
template <class kiln_S>
__device__ __forceinline__ kiln_S kiln_se_merge(const kiln_S& kiln_a, const kiln_S& kiln_b) {
  typedef decltype(kiln_a.m) kiln_F;
  const bool kiln_up = kiln_b.m > kiln_a.m;
  const kiln_F kiln_hi = kiln_up ? kiln_b.m : kiln_a.m, kiln_lo = kiln_up ? kiln_a.m : kiln_b.m;
  const kiln_F kiln_shi = kiln_up ? kiln_b.s : kiln_a.s, kiln_slo = kiln_up ? kiln_a.s : kiln_b.s;
  kiln_F kiln_scale;
  if constexpr (kiln_same<kiln_F, float>::value)
    kiln_scale = kiln_lo == kiln_hi ? 1.0f : __expf(kiln_lo - kiln_hi);
  else if constexpr (kiln_se_float<kiln_F>())
    kiln_scale = kiln_lo == kiln_hi ? kiln_F(1) : exp(kiln_lo - kiln_hi);
  else
    kiln_scale = kiln_F(kiln_lo == kiln_hi ? 1.0 : exp(double(kiln_lo) - double(kiln_hi)));
  return kiln_S{kiln_hi, kiln_shi + kiln_slo * kiln_scale};
}
template <class kiln_S>
__device__ __forceinline__ auto kiln_se_total(const kiln_S& kiln_a) {
  typedef decltype(kiln_a.m) kiln_F;
  const bool kiln_low = kiln_se_float<kiln_F>() && kiln_a.m == kiln_extreme<kiln_F, true>();
  return kiln_low ? kiln_F(kiln_a.m - kiln_a.m) : kiln_a.s;
}
// kiln-section norms
// |x| and |x|^2 for every type; 16-bit floats go through float.
template <class kiln_V, bool kiln_low = kiln_traits<kiln_V>::is_low_float>
struct kiln_real_of {
  typedef kiln_V type;
};
template <class kiln_V>
struct kiln_real_of<kiln_V, true> {
  typedef float type;
};
typedef typename kiln_real_of<U>::type kiln_R;
template <class kiln_V>
__device__ __forceinline__ kiln_R kiln_nabs(const kiln_V& kiln_v) {
  if constexpr (kiln_traits<kiln_V>::is_complex)
    return kiln_R(abs(kiln_v));
  else {
    const kiln_R kiln_r = kiln_cast<kiln_R>(kiln_v);
    return kiln_r < kiln_R(0) ? -kiln_r : kiln_r;
  }
}
template <class kiln_V>
__device__ __forceinline__ kiln_R kiln_nabs2(const kiln_V& kiln_v) {
  if constexpr (kiln_traits<kiln_V>::is_complex)
    return kiln_R(norm(kiln_v));
  else {
    const kiln_R kiln_r = kiln_cast<kiln_R>(kiln_v);
    return kiln_r * kiln_r;
  }
}
