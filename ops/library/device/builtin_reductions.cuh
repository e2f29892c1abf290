// Device helpers of the built-in reductions (ops/library/src/reductions.cpp and linalg_norm.cpp),
// one section each, placed in the preamble of their ReductionKernels, where T is the input
// and U the output placeholder. Follows kiln_core.cuh.

// kiln-section builtin_reductions
// Device helpers every built-in shares: the accumulation type (16-bit floats accumulate in
// float), NaN tests for any type, and the reduce types of argmin/argmax, mean of non-NaN
// values, and variance (Welford's updates merged with Chan's formula).
template <class kiln_V, bool kiln_low = kiln_traits<kiln_V>::is_low_float> struct kiln_acc_of { typedef kiln_V type; };
template <class kiln_V> struct kiln_acc_of<kiln_V, true> { typedef float type; };
template <class kiln_V> __device__ __forceinline__ bool kiln_rnan(const kiln_V& kiln_v) { return !(kiln_v == kiln_v); }
typedef typename kiln_acc_of<U>::type kiln_R;
typedef typename kiln_acc_of<T>::type kiln_RT;
struct kiln_arg { kiln_RT v; long long i; };
template <bool kiln_max>
__device__ __forceinline__ kiln_arg kiln_arg_pick(const kiln_arg& kiln_a, const kiln_arg& kiln_b) {
  const bool kiln_an = kiln_rnan(kiln_a.v), kiln_bn = kiln_rnan(kiln_b.v);
  if (kiln_an || kiln_bn) {
    if (kiln_an && kiln_bn) return kiln_b.i < kiln_a.i ? kiln_b : kiln_a;
    return kiln_an ? kiln_a : kiln_b;
  }
  const bool kiln_better = kiln_max ? kiln_b.v > kiln_a.v : kiln_b.v < kiln_a.v;
  return (kiln_better || (kiln_b.v == kiln_a.v && kiln_b.i < kiln_a.i)) ? kiln_b : kiln_a;
}
struct kiln_sn { kiln_R s; long long n; };
struct kiln_welford { kiln_R n, mean, m2; };
// One element's moments. m2 is (x - x)^2: 0 for a finite x, nan for inf or nan, as NumPy's
// (x - mean)^2 at one element, so a non-finite value makes var/std nan for every axis length
// (a single inf or nan included), as NumPy does.
// (Templates: instantiated only by var/std, so complex rows sharing this preamble compile.)
template <class kiln_X>
__device__ __forceinline__ kiln_welford kiln_welford_one(const kiln_X& kiln_x) {
  const kiln_R kiln_v = kiln_cast<kiln_R>(kiln_x), kiln_d = kiln_v - kiln_v;
  return kiln_welford{kiln_R(1), kiln_v, kiln_d * kiln_d};
}
// The variance of the moments: NumPy divides by max(n - ddof, 0), so a ddof at or past n gives
// inf (or nan where m2 is 0), never a negative count.
template <class kiln_W>
__device__ __forceinline__ kiln_R kiln_welford_var(const kiln_W& kiln_w, long long kiln_ddof) {
  const kiln_R kiln_n = kiln_w.n - kiln_R(kiln_ddof);
  return kiln_w.m2 / (kiln_n > kiln_R(0) ? kiln_n : kiln_R(0));
}
__device__ __forceinline__ kiln_welford kiln_welford_merge(const kiln_welford& kiln_a, const kiln_welford& kiln_b) {
  if (kiln_a.n == kiln_R(0)) return kiln_b;
  if (kiln_b.n == kiln_R(0)) return kiln_a;
  const kiln_R kiln_n = kiln_a.n + kiln_b.n, kiln_d = kiln_b.mean - kiln_a.mean, kiln_f = kiln_b.n / kiln_n;
  return kiln_welford{kiln_n, kiln_a.mean + kiln_d * kiln_f, kiln_a.m2 + kiln_b.m2 + kiln_d * kiln_d * kiln_a.n * kiln_f};
}

// kiln-section norms
// |x| and |x|^2 for every type; 16-bit floats go through float.
template <class kiln_V, bool kiln_low = kiln_traits<kiln_V>::is_low_float> struct kiln_real_of { typedef kiln_V type; };
template <class kiln_V> struct kiln_real_of<kiln_V, true> { typedef float type; };
typedef typename kiln_real_of<U>::type kiln_R;
template <class kiln_V> __device__ __forceinline__ kiln_R kiln_nabs(const kiln_V& kiln_v) {
  if constexpr (kiln_traits<kiln_V>::is_complex) return kiln_R(abs(kiln_v));
  else { const kiln_R kiln_r = kiln_cast<kiln_R>(kiln_v); return kiln_r < kiln_R(0) ? -kiln_r : kiln_r; }
}
template <class kiln_V> __device__ __forceinline__ kiln_R kiln_nabs2(const kiln_V& kiln_v) {
  if constexpr (kiln_traits<kiln_V>::is_complex) return kiln_R(norm(kiln_v));
  else { const kiln_R kiln_r = kiln_cast<kiln_R>(kiln_v); return kiln_r * kiln_r; }
}
