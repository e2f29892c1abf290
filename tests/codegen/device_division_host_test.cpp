// kiln_div_row (codegen/device/expression_ops.cuh), a row kernel's float32 division by one
// value a row through its kiln_row_divisor, compiled for the host and checked bit for bit
// against IEEE division: every pair of the float32 range's edges (signed zeros, subnormals,
// the normal range's ends, infinities, NaNs), random bit patterns and data as standardizing
// divides it. Quotients in the subnormal range are left out: row kernels compile with
// -ftz=true, which flushes them (the host does not); the GPU test checks them flushed, inside
// row kernels (tests/ops/lazy_reductions_gpu_test.cpp).
#include <catch2/catch.hpp>
#include <cstdint>
#include <random>
#include <vector>

#include "device_on_host.hpp"

namespace {

float from_bits(std::uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}
std::uint32_t bits_of(float f) {
  std::uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}

// 1 where kiln_div_row differs from a / b (any NaN matches any NaN), else 0; `checked` counts
// the pairs compared (quotients outside the subnormal range).
std::size_t checked = 0;
std::size_t mismatches(float a, float b) {
  const float want = a / b, got = kiln_div_row(a, kiln_row_divisor(b));
  if (std::fpclassify(want) == FP_SUBNORMAL) return 0;
  ++checked;
  if (std::isnan(want) && std::isnan(got)) return 0;
  if (bits_of(want) == bits_of(got)) return 0;
  UNSCOPED_INFO("kiln_div_row(" << std::hexfloat << a << ", " << b << ") = " << got << ", IEEE "
                                << want);
  return 1;
}

std::vector<float> edges() {
  std::vector<float> e;
  for (float m : {1.0f, 1.5f, 1.99999988f, 1.00000012f})
    for (int x : {-149, -140, -127, -126, -125, -124, -101, -100, -99, -1, 0, 1, 99, 100, 124, 125,
                  126, 127})
      e.push_back(std::ldexp(m, x));
  e.push_back(from_bits(0x007fffff));  // the largest subnormal
  e.push_back(from_bits(0x7f7fffff));  // the largest finite
  e.push_back(0.0f);
  e.push_back(INFINITY);
  e.push_back(NAN);
  e.push_back(3.0f);
  e.push_back(0.1f);
  const std::size_t n = e.size();
  for (std::size_t k = 0; k < n; ++k) e.push_back(-e[k]);
  return e;
}

}  // namespace

TEST_CASE("a division by a row's value gives IEEE division's quotient bit for bit", "[codegen]") {
  const std::vector<float> e = edges();
  std::size_t bad = 0;
  for (float a : e)
    for (float b : e) bad += mismatches(a, b);
  CHECK(bad == 0);
  CHECK(checked > e.size() * e.size() * 9 / 10);

  std::mt19937_64 rng(16);
  bad = 0;
  for (int i = 0; i < 2000000; ++i) {
    const std::uint64_t r = rng();
    std::uint32_t ua = std::uint32_t(r), ub = std::uint32_t(r >> 32);
    // Half the draws near the fast path's bounds and with divisors' mantissas all ones (where
    // a reciprocal's rounding is the hardest).
    if (i & 1) {
      ua = (ua & 0x807fffffu) | (std::uint32_t(90 + (r >> 20) % 50) << 23);
      ub |= 0x007fff00u;
    }
    bad += mismatches(from_bits(ua), from_bits(ub));
  }
  CHECK(bad == 0);
  CHECK(checked > 1900000);

  // Data as standardizing divides it: deviations by a row's spread.
  std::normal_distribution<float> normal;
  bad = 0;
  for (int row = 0; row < 2000; ++row) {
    const float spread = std::ldexp(1.0f + float(row % 97) / 97.0f, row % 40 - 20);
    for (int i = 0; i < 500; ++i) bad += mismatches(normal(rng) * spread, spread);
  }
  CHECK(bad == 0);
}
