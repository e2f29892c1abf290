#pragma once
// kiln's device helpers (codegen/device: kiln_core, kiln_complex, expression_ops) compiled for
// the host, so CPU tests check them without a GPU: the few CUDA names they use, defined here.
// The host's libm stands in for CUDA's real functions (both within a few ULP); the _rn
// intrinsics round once, as on the device (the host build has no FMA contraction).
#include <math.h>  // the float overloads of sin, cos, ... in the global namespace, as CUDA's

#include <cmath>
#include <cstring>

#define __device__
#define __host__
#define __forceinline__ inline
struct uint2 {
  unsigned x, y;
};
struct uint4 {
  unsigned x, y, z, w;
};
inline float __int_as_float(int i) {
  float f;
  std::memcpy(&f, &i, sizeof f);
  return f;
}
inline double __longlong_as_double(long long i) {
  double d;
  std::memcpy(&d, &i, sizeof d);
  return d;
}
inline float __fmul_rn(float a, float b) { return a * b; }
inline float __fadd_rn(float a, float b) { return a + b; }
inline float __fsub_rn(float a, float b) { return a - b; }
inline double __dmul_rn(double a, double b) { return a * b; }
inline double __dadd_rn(double a, double b) { return a + b; }
inline double __dsub_rn(double a, double b) { return a - b; }
inline float __frcp_rn(float a) { return 1.0f / a; }
inline float __fmaf_rn(float a, float b, float c) { return std::fmaf(a, b, c); }
inline void sincos(float a, float* s, float* c) { ::sincosf(a, s, c); }  // CUDA's overload
// kiln_core's fast division (the strided and tiled loops' unravelling).
inline unsigned __umulhi(unsigned a, unsigned b) {
  return unsigned((unsigned long long)a * b >> 32);
}
inline unsigned long long __umul64hi(unsigned long long a, unsigned long long b) {
  return (unsigned long long)((unsigned __int128)a * b >> 64);
}
using std::copysign, std::fabs, std::fmax, std::fmin, std::hypot, std::isfinite, std::isinf,
    std::isnan, std::signbit;

// In the order kiln emits them (each file follows the one before it).
// clang-format off
#include "../../codegen/device/kiln_core.cuh"
#include "../../codegen/device/kiln_complex.cuh"
#include "../../codegen/device/expression_ops.cuh"
// clang-format on

#undef __device__
#undef __host__
#undef __forceinline__
